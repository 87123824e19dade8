// The memory report view: a webview that draws the server's `vramlens/report` payload (media/report.css and
// the script built from extension/webview/). The extension side only relays: the payload in, the user's
// clicks out (open a line, copy, export, redact, pick a rank) as checked messages.
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { parseReportMessage, ReportAction } from "./core/webviewMessages";
import { log } from "./logging";
import { ServerManager } from "./server";

interface ReportPayload {
    workspaceFolder?: string;
    markdown?: string;
    redacted?: boolean;
    ranks?: { rank: number; failed?: boolean; failing?: boolean; ending?: string; endingText?: string; shown?: boolean }[] | null;
    selectedRank?: number | null;
}

export class ReportPanel implements vscode.Disposable {
    private panel: vscode.WebviewPanel | undefined;
    private latest: ReportPayload | undefined;
    // A redacted payload names no folder: the one of the last plain payload still addresses the server.
    private folder: string | undefined;
    private readonly subscriptions: vscode.Disposable[] = [];

    constructor(private readonly extensionUri: vscode.Uri, private readonly server: ServerManager) {
        this.subscriptions.push(
            server.onReport((payload) => this.update(payload as ReportPayload)),
            server.onReportRequested(() => this.reveal()),
        );
    }

    get workspaceFolder(): string | undefined {
        return this.folder;
    }

    get ranks(): ReportPayload["ranks"] {
        return this.latest?.ranks;
    }

    get selectedRank(): number | null | undefined {
        return this.latest?.selectedRank;
    }

    reveal(): void {
        if (this.panel) {
            this.panel.reveal(undefined, true);
            return;
        }
        const media = vscode.Uri.joinPath(this.extensionUri, "media");
        this.panel = vscode.window.createWebviewPanel(
            "vramlens.report",
            "VRAM Lens report",
            { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
            { enableScripts: true, localResourceRoots: [media], retainContextWhenHidden: true },
        );
        this.panel.iconPath = vscode.Uri.joinPath(media, "icon.png");
        this.panel.webview.html = this.html(this.panel.webview, media);
        this.panel.webview.onDidReceiveMessage((message) => this.handle(parseReportMessage(message)));
        this.panel.onDidDispose(() => (this.panel = undefined));
    }

    clear(): void {
        this.latest = undefined;
        this.folder = undefined;
        void vscode.commands.executeCommand("setContext", "vramlens.multiRank", false);
        void this.panel?.webview.postMessage({ type: "report", payload: null });
    }

    async selectRank(rank: number): Promise<void> {
        await this.run("vramlens.selectRank", { workspaceFolder: this.workspaceFolder, rank });
    }

    private update(payload: ReportPayload): void {
        this.latest = payload;
        this.folder = payload.workspaceFolder ?? this.folder;
        void vscode.commands.executeCommand("setContext", "vramlens.multiRank", (payload.ranks?.length ?? 0) > 1);
        void this.panel?.webview.postMessage({ type: "report", payload });
    }

    private async handle(action: ReportAction | undefined): Promise<void> {
        if (!action) return;
        switch (action.type) {
            case "ready":
                void this.panel?.webview.postMessage({ type: "report", payload: this.latest ?? null });
                return;
            case "openLine": {
                const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(action.uri));
                const position = new vscode.Position(Math.min(action.line, document.lineCount - 1), 0);
                await vscode.window.showTextDocument(document, {
                    viewColumn: vscode.ViewColumn.One,
                    selection: new vscode.Range(position, position),
                });
                return;
            }
            case "copyMarkdown":
                await vscode.env.clipboard.writeText(this.latest?.markdown ?? "");
                void vscode.window.showInformationMessage(
                    this.latest?.redacted ? "Copied the redacted report." : "Copied the report.",
                );
                return;
            case "exportMarkdown":
                return this.export();
            case "setRedacted":
                return this.run("vramlens.showReport", { workspaceFolder: this.workspaceFolder, redact: action.redacted });
            case "selectRank":
                return this.selectRank(action.rank);
        }
    }

    private async export(): Promise<void> {
        const folder = this.workspaceFolder ? vscode.Uri.parse(this.workspaceFolder) : undefined;
        const target = await vscode.window.showSaveDialog({
            title: "VRAM Lens: export the report",
            defaultUri: folder ? vscode.Uri.joinPath(folder, "vramlens-report.md") : undefined,
            filters: { Markdown: ["md"] },
        });
        if (!target) return;
        const result = await this.server.executeCommand("vramlens.exportReport", {
            workspaceFolder: this.workspaceFolder,
            redact: !!this.latest?.redacted,
            path: target.fsPath,
        });
        if (result) {
            const show = result.ok ? vscode.window.showInformationMessage : vscode.window.showErrorMessage;
            void show(result.message);
        }
    }

    private async run(command: string, argument: object): Promise<void> {
        const result = await this.server.executeCommand(command, argument);
        if (result && !result.ok) void vscode.window.showErrorMessage(result.message);
        else if (result) log().info(`${command}: ${result.message}`);
    }

    private html(webview: vscode.Webview, media: vscode.Uri): string {
        const nonce = randomBytes(16).toString("base64");
        const asset = (...parts: string[]) => webview.asWebviewUri(vscode.Uri.joinPath(media, ...parts)).toString();
        return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${webview.cspSource} data:; style-src ${webview.cspSource}; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${asset("report.css")}">
<title>VRAM Lens report</title>
</head>
<body>
<main id="report"><p class="empty">No capture loaded yet: run <b>VRAM Lens: Diagnose CUDA memory</b> on a script, or <b>Open capture or snapshot…</b>.</p></main>
<script nonce="${nonce}" src="${asset("dist", "report.js")}"></script>
</body>
</html>`;
    }

    dispose(): void {
        this.panel?.dispose();
        for (const d of this.subscriptions) d.dispose();
    }
}

