// Entry point: wires the log, the server, the line decorations, the report view, the commands, and the events
// that restart the server or send it new settings.
import * as vscode from "vscode";
import { Commands } from "./commands";
import { LineDecorations } from "./decorations";
import { createLog } from "./logging";
import { onInterpreterChange } from "./python";
import { ReportPanel } from "./reportPanel";
import { ServerManager } from "./server";
import { affectsServerProcess, affectsSettings } from "./settings";

let manager: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    const outputChannel = createLog();
    const server = new ServerManager(outputChannel, context.extensionPath);
    manager = server;
    const decorations = new LineDecorations(server);
    const report = new ReportPanel(context.extensionUri, server, context.globalState);
    const commands = new Commands(server, decorations, report, outputChannel, context.workspaceState, context.extensionUri, context.globalStorageUri);
    context.subscriptions.push(
        outputChannel,
        decorations,
        report,
        ...commands.register(),
        // The report view sees the window resize, which no event tells the extension: fit the figures again.
        report.onDidResize(() => decorations.relayout()),
        // For the report's open_line actions; not a palette command.
        vscode.commands.registerCommand("vramlens.openReportLine", (target: { uri: string; line: number }) => report.openLine(target.uri, target.line)),
        vscode.workspace.onDidChangeConfiguration((event) => {
            if (affectsServerProcess(event)) {
                void server.restart("interpreter setting changed");
            } else if (affectsSettings(event)) {
                server.sendSettings();
            }
        }),
        // Trusting a workspace makes its restricted settings (interpreter, cwd, env) visible.
        vscode.workspace.onDidGrantWorkspaceTrust(() => void server.restart("workspace trusted")),
    );
    const interpreterWatch = await onInterpreterChange(() => void server.restart("interpreter changed"));
    if (interpreterWatch) {
        context.subscriptions.push(interpreterWatch);
    }
    await server.restart("activation");
}

export async function deactivate(): Promise<void> {
    await manager?.dispose();
    manager = undefined;
}
