// The memory report view: a webview that draws the server's `vramlens/report` payload (media/report.css and
// the script built from extension/webview/). The extension side only relays: the payload in, the user's
// clicks out (open a line, copy, export, redact, pick a rank) as checked messages.
import { randomBytes } from "node:crypto";
import { homedir } from "node:os";
import * as vscode from "vscode";
import { actionCommand, ReportActionSpec } from "./core/actions";
import { shownCapturePath } from "./core/capturePath";
import { choosePlacement, columnWidths, Placement, placementOf, tooNarrowBeside } from "./core/placement";
import { parseReportMessage, ReportAction, VIEW_COMMANDS } from "./core/webviewMessages";
import { editorLayout } from "./layout";
import { log } from "./logging";
import { ServerManager } from "./server";

const PLACEMENT_KEY = "vramlens.reportPlacement";
const VIEW_TYPE = "vramlens.report";
// PyTorch's own viewer of `_dump_snapshot` pickles; it reads the file in the browser, nothing is uploaded.
const MEMORY_VIZ = "https://pytorch.org/memory_viz";
// A view the extension has just placed reports its new column up to a second later.
const QUIET_MS = 1500;

interface ReportPayload {
    workspaceFolder?: string;
    lines?: { uri?: string | null }[];
    snapshotFile?: string | null;
    scriptUri?: string | null;
    capture?: string;
    captureShown?: string; // the header's name for it (the extension's: it knows the workspace folders)
    recommendations?: { actions?: ReportActionSpec[] }[];
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
    private placing = false;
    private comparison: unknown = null; // two captures side by side, while shown
    private column: vscode.ViewColumn | undefined; // where the view is, to tell the user's moves from ours // the extension itself is moving the view: not the user's choice
    private measure = false;
    private opening = false;
    private quietUntil = 0; // opened beside by default: the view's first width says whether that fits
    private readonly resized = new vscode.EventEmitter<void>();
    /** The view changed width (the window or its groups were resized): VS Code has no such event for extensions. */
    readonly onDidResize = this.resized.event;

    constructor(private readonly extensionUri: vscode.Uri, private readonly server: ServerManager, private readonly state: vscode.Memento) {
        this.subscriptions.push(
            server.onReport((payload) => this.update(payload as ReportPayload)),
            server.onReportRequested(() => this.reveal()),
        );
    }

    get workspaceFolder(): string | undefined {
        return this.folder;
    }

    /** The loaded capture's script as a file here, when the server mapped it. */
    get scriptUri(): string | undefined {
        return this.latest?.scriptUri ?? undefined;
    }

    get capture(): string | undefined {
        return this.latest?.capture;
    }

    get ranks(): ReportPayload["ranks"] {
        return this.latest?.ranks;
    }

    get selectedRank(): number | null | undefined {
        return this.latest?.selectedRank;
    }

    reveal(): void {
        if (this.opening) return; // a second request while the view is being placed
        if (this.panel) {
            this.panel.reveal(undefined, true);
            return;
        }
        this.opening = true;
        void this.open().finally(() => (this.opening = false));
    }

    /** Opens the view where it fits (beside a wide editor, below a narrow one), or where the user last put it. */
    private async open(): Promise<void> {
        const layout = await editorLayout();
        const remembered = this.state.get(PLACEMENT_KEY);
        const placement = choosePlacement(remembered, layout);
        this.measure = placement === "beside" && remembered === undefined;
        const media = vscode.Uri.joinPath(this.extensionUri, "media");
        const code = vscode.window.activeTextEditor;
        this.placing = true;
        const panel = vscode.window.createWebviewPanel(
            VIEW_TYPE,
            "VRAM Lens report",
            { viewColumn: placement === "beside" ? vscode.ViewColumn.Beside : vscode.ViewColumn.Active, preserveFocus: placement !== "below" },
            { enableScripts: true, localResourceRoots: [media], retainContextWhenHidden: true },
        );
        this.panel = panel;
        panel.iconPath = vscode.Uri.joinPath(media, "icon.png");
        panel.webview.html = this.html(panel.webview, media);
        panel.webview.onDidReceiveMessage((message) => this.handle(parseReportMessage(message)));
        panel.onDidDispose(() => (this.panel = undefined));
        try {
            if (placement === "below") await this.moveBelow(code);
        } finally {
            this.placing = false;
        }
        log().info(`Report view opened ${placement === "active" ? "in the editor's group" : placement}.`);
        this.quietUntil = Date.now() + QUIET_MS;
        panel.onDidChangeViewState(async () => {
            const column = panel.viewColumn;
            if (column === undefined || column <= 0 || column === this.column) return;
            this.column = column;
            // Columns reported while (or just after) the extension placed the view are its own doing.
            if (this.placing || Date.now() < this.quietUntil) return;
            // Groups that hold code (text tabs, shown or not): sharing one with it means "in the code's group".
            const code = vscode.window.tabGroups.all.filter((g) => g.tabs.some((t) => t.input instanceof vscode.TabInputText)).map((g) => g.viewColumn);
            const moved = placementOf(this.column, code, await editorLayout());
            if (moved) {
                await this.state.update(PLACEMENT_KEY, moved);
                log().info(`Report view moved ${moved}: it opens there from now on.`);
            }
        });
    }

    /** Tells the view whether this interpreter can run a script here: a button that cannot work is not the primary one. */
    private async postEnvironment(): Promise<void> {
        const health = await this.server.interpreterHealth();
        const canRun = health ? health.canRun : true; // unknown: as if it could (the run itself says why not)
        void this.panel?.webview.postMessage({ type: "environment", payload: { canRun, openFile: !!vscode.window.activeTextEditor } });
    }

    /** Where the capture's figures are here: the recorded script, else the file of its top line. */
    get firstFileUri(): string | undefined {
        return this.latest?.scriptUri ?? this.latest?.lines?.find((line) => line.uri)?.uri ?? undefined;
    }

    /** Shows two captures side by side: the server's labelled view of a `vramlens diff` (diff_view.py). */
    showComparison(view: unknown): void {
        this.comparison = view ?? null;
        this.reveal(); // a view still opening gets it with the report once its page is ready
        void this.panel?.webview.postMessage({ type: "comparison", payload: this.comparison });
    }

    clear(): void {
        this.latest = undefined;
        this.folder = undefined;
        void vscode.commands.executeCommand("setContext", "vramlens.multiRank", false);
        void vscode.commands.executeCommand("setContext", "vramlens.captureLoaded", false);
        void this.panel?.webview.postMessage({ type: "report", payload: null });
    }

    async selectRank(rank: number): Promise<void> {
        await this.run("vramlens.selectRank", { workspaceFolder: this.workspaceFolder, rank });
    }

    private update(payload: ReportPayload): void {
        const folders = (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.fsPath);
        this.latest = payload.capture ? { ...payload, captureShown: shownCapturePath(payload.capture, folders, homedir()) } : payload;
        this.folder = payload.workspaceFolder ?? this.folder;
        void vscode.commands.executeCommand("setContext", "vramlens.multiRank", (payload.ranks?.length ?? 0) > 1);
        void vscode.commands.executeCommand("setContext", "vramlens.captureLoaded", !!payload.capture);
        void this.panel?.webview.postMessage({ type: "report", payload: this.latest });
    }

    private async handle(action: ReportAction | undefined): Promise<void> {
        if (!action) return;
        switch (action.type) {
            case "ready":
                void this.postEnvironment();
                void this.panel?.webview.postMessage({ type: "report", payload: this.latest ?? null });
                if (this.comparison) void this.panel?.webview.postMessage({ type: "comparison", payload: this.comparison });
                return this.placeByWidth(action.width);
            case "resized":
                this.resized.fire();
                return;
            case "openLine":
                return this.openLine(action.uri, action.line);
            case "copyMarkdown":
                await vscode.env.clipboard.writeText(this.latest?.markdown ?? "");
                void vscode.window.showInformationMessage(
                    this.latest?.redacted ? "Copied the redacted report." : "Copied the report.",
                );
                return;
            case "exportMarkdown":
                return this.export();
            case "exportSnapshot":
                return this.exportSnapshot();
            case "closeComparison":
                this.comparison = null; // closed by the user: a view opened again later does not bring it back
                return;
            case "liveAt": {
                const answer = await this.server.executeCommand("vramlens.liveAt", { workspaceFolder: this.workspaceFolder, index: action.index });
                if (answer && !answer.ok) log().warn(`Live at ${action.index}: ${answer.message}`);
                void this.panel?.webview.postMessage({ type: "liveAt", payload: answer?.ok ? (answer as { liveAt?: unknown }).liveAt ?? null : null });
                return;
            }
            case "setRedacted":
                return this.run("vramlens.showReport", { workspaceFolder: this.workspaceFolder, redact: action.redacted });
            case "selectRank":
                return this.selectRank(action.rank);
            case "action": {
                const spec = this.latest?.recommendations?.[action.recommendation]?.actions?.[action.action];
                const run = spec && actionCommand(spec, this.workspaceFolder);
                if (run) await vscode.commands.executeCommand(run.command, run.argument);
                return;
            }
            case "command":
                await vscode.commands.executeCommand(VIEW_COMMANDS[action.name], ...(action.name === "confirm" ? [{ workspaceFolder: this.workspaceFolder }] : []));
                return;
        }
    }

    /** Moves the view into a group below the code, and gives the code its focus back. */
    private async moveBelow(code: vscode.TextEditor | undefined): Promise<void> {
        const layout = await editorLayout();
        if (layout?.orientation === 0 && layout.groups?.length === 2 && !layout.groups.some((g) => g.groups?.length) && this.panel?.viewColumn === 2) {
            // The code and the view side by side, the view on the right: the same two groups, stacked. One command
            // that moves no focus, so it does not depend on which editor is active when it runs.
            await vscode.commands.executeCommand("vscode.setEditorLayout", { orientation: 1, groups: [{}, {}] });
            // The sizes a layout names are relative, yet after a window resize they were seen taken as pixels (the
            // code 0.5 px high): share the height evenly instead, on the groups as they now are.
            await vscode.commands.executeCommand("workbench.action.evenEditorWidths");
        } else {
            this.panel?.reveal(undefined, false);
            // A view beside the code sits in a group of its own: "below" of that group would still be beside the
            // code (at the same narrow width). Into the code's group first, then below it.
            const codeColumn = code?.viewColumn ?? vscode.ViewColumn.One;
            if (this.panel?.viewColumn !== undefined && this.panel.viewColumn !== codeColumn) {
                await vscode.commands.executeCommand(codeColumn === vscode.ViewColumn.One ? "workbench.action.moveEditorToFirstGroup"
                    : "workbench.action.moveEditorToPreviousGroup");
            }
            await vscode.commands.executeCommand("workbench.action.moveEditorToBelowGroup");
        }
        if (code) await vscode.window.showTextDocument(code.document, { viewColumn: code.viewColumn, preserveFocus: false });
        this.quietUntil = Date.now() + QUIET_MS;
    }

    /** Beside by default: when the code beside the view is narrower than MIN_CODE_WIDTH, below instead (not remembered). */
    private async placeByWidth(viewWidth: number | undefined): Promise<void> {
        if (!this.measure) {
            log().debug(`Report view ready at ${viewWidth} px (placed already).`);
            return;
        }
        this.measure = false;
        const code = vscode.window.visibleTextEditors.find((e) => e.viewColumn !== this.panel?.viewColumn);
        // The code's own group width when the layout says it, else the view's: beside, the two share evenly.
        const codeWidth = (code?.viewColumn !== undefined ? columnWidths(await editorLayout())[code.viewColumn - 1] : undefined) ?? viewWidth;
        log().debug(`Report view ready at ${viewWidth} px, the code beside it ${codeWidth} px.`);
        if (!tooNarrowBeside(codeWidth)) return;
        this.placing = true;
        try {
            await this.moveBelow(code);
        } finally {
            this.placing = false;
        }
        // What the log says is where the view is now, as the layout has it, not what was asked for.
        const now = await this.placementNow();
        const reason = `beside it the code had ${Math.round(codeWidth!)} px`;
        if (now === "below") log().info(`Report view moved below: ${reason}.`);
        else log().warn(`Report view is ${now ?? "in an unknown place"}, not below: moving it failed (${reason}).`);
    }

    /** Where the view is now: in a group with code, or in one of its own beside or below. */
    private async placementNow(): Promise<Placement | undefined> {
        const groups = vscode.window.tabGroups.all;
        const code = groups.filter((g) => g.tabs.some((t) => t.input instanceof vscode.TabInputText)).map((g) => g.viewColumn);
        const own = groups.find((g) => g.tabs.some((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith(VIEW_TYPE)));
        return placementOf(own?.viewColumn ?? this.panel?.viewColumn, code, await editorLayout());
    }

    /** Opens a line of the report (a link or an action) in the code's editor group. */
    async openLine(uri: string, line: number): Promise<void> {
        const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
        const position = new vscode.Position(Math.min(line, document.lineCount - 1), 0);
        const code = vscode.window.visibleTextEditors.find((e) => e.viewColumn !== this.panel?.viewColumn)?.viewColumn ?? vscode.ViewColumn.One;
        await vscode.window.showTextDocument(document, { viewColumn: code, selection: new vscode.Range(position, position) });
    }

    /** Saves the capture's snapshot (exactly `_dump_snapshot`'s pickle) where the user says, for PyTorch's viewer. */
    private async exportSnapshot(): Promise<void> {
        const source = this.latest?.snapshotFile;
        if (!source) return;
        const folder = this.workspaceFolder ? vscode.Uri.parse(this.workspaceFolder) : undefined;
        const target = await vscode.window.showSaveDialog({
            title: "VRAM Lens: save the snapshot for PyTorch's memory viewer",
            defaultUri: folder ? vscode.Uri.joinPath(folder, "snapshot.pickle") : undefined,
            filters: { "PyTorch memory snapshot": ["pickle"] },
        });
        if (!target) return;
        await vscode.workspace.fs.copy(vscode.Uri.file(source), target, { overwrite: true });
        const open = "Open memory_viz";
        const answer = await vscode.window.showInformationMessage(
            `Saved ${target.fsPath}. PyTorch's viewer opens it in the browser: drop the file onto pytorch.org/memory_viz.`, open);
        if (answer === open) await vscode.env.openExternal(vscode.Uri.parse(MEMORY_VIZ));
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
            chosenInSaveDialog: true, // the user picked this file: it may lie outside the workspace
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
<main id="report"></main>
<script nonce="${nonce}" src="${asset("dist", "report.js")}"></script>
</body>
</html>`;
    }

    dispose(): void {
        this.panel?.dispose();
        this.resized.dispose();
        for (const d of this.subscriptions) d.dispose();
    }
}

