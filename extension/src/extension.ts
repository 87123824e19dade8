// Entry point: wires the log, the server manager, the commands and the events that restart the server.
import * as vscode from "vscode";
import { createLog } from "./logging";
import { onInterpreterChange } from "./python";
import { affectsServer } from "./settings";
import { ServerManager } from "./server";

let manager: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    const outputChannel = createLog();
    manager = new ServerManager(outputChannel);
    const server = manager;
    context.subscriptions.push(
        outputChannel,
        vscode.commands.registerCommand("vramlens.restartServer", () => server.restart("restart command")),
        vscode.commands.registerCommand("vramlens.showLog", () => outputChannel.show()),
        vscode.workspace.onDidChangeConfiguration((event) => {
            if (affectsServer(event)) {
                void server.restart("setting changed");
            }
        }),
        // Trusting a workspace makes its `vramlens.python` value visible, which may name another interpreter.
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
