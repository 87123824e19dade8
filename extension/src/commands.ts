// The palette commands. Each gathers what the server needs (file, arguments, trust, folder), asks the server
// to do the work, and shows the one sentence it answers. Nothing here analyses anything.
import * as path from "node:path";
import * as vscode from "vscode";
import { ArgsMemory, formatArgs, parseArgs } from "./core/args";
import { argumentVariant, memoryLimitVariant, parseVariantList, PRESETS, VariantPreset } from "./core/variants";
import { LineDecorations } from "./decorations";
import { ReportPanel } from "./reportPanel";
import { CommandResult, ServerManager } from "./server";
import { serverSettings } from "./settings";

const UNTRUSTED_RUN =
    "VRAM Lens runs scripts only in a trusted workspace, and this one is in Restricted Mode: trust it " +
    "(Manage Workspace Trust) to diagnose. Lint diagnostics and opening captures work either way.";

export class Commands {
    private readonly args: ArgsMemory;

    constructor(
        private readonly server: ServerManager,
        private readonly decorations: LineDecorations,
        private readonly report: ReportPanel,
        private readonly outputChannel: vscode.LogOutputChannel,
        workspaceState: vscode.Memento,
    ) {
        this.args = new ArgsMemory(workspaceState);
    }

    register(): vscode.Disposable[] {
        const command = (id: string, run: (...args: any[]) => unknown) => vscode.commands.registerCommand(id, run);
        return [
            command("vramlens.diagnoseFile", (resource?: vscode.Uri) => this.diagnose(false, resource)),
            command("vramlens.diagnoseFileWithArguments", (resource?: vscode.Uri) => this.diagnose(true, resource)),
            command("vramlens.openCaptureFile", (resource?: vscode.Uri) => this.openCapture(resource)),
            command("vramlens.showMemoryReport", () => this.showReport()),
            command("vramlens.clearAnnotations", () => this.clear()),
            command("vramlens.compareInterventionsFile", (resource?: vscode.Uri) => this.compareInterventions(resource)),
            command("vramlens.pickRank", () => this.pickRank()),
            command("vramlens.restartServer", () => this.server.restart("restart command")),
            command("vramlens.showLog", () => this.outputChannel.show()),
        ];
    }

    /** Runs the active Python file (or the one clicked) under the recorder; a notebook, cell by cell in a fresh kernel. */
    private async diagnose(askArguments: boolean, resource?: vscode.Uri): Promise<void> {
        const notebook = this.notebookToRun(resource);
        if (notebook) {
            await this.diagnoseNotebook(notebook);
            return;
        }
        const script = await this.script("Diagnose CUDA memory", askArguments, resource);
        if (!script) return;
        const result = await this.server.executeCommand(
            "vramlens.diagnose",
            { uri: script.uri, args: script.args, trusted: vscode.workspace.isTrusted },
            `VRAM Lens: ${script.name}`,
        );
        this.showResult(result);
    }

    /** The notebook to diagnose: the one clicked or given, else the active notebook editor's (when no other file has focus). */
    private notebookToRun(resource?: unknown): vscode.NotebookDocument | vscode.Uri | undefined {
        if (resource instanceof vscode.Uri) return resource.path.endsWith(".ipynb") ? resource : undefined;
        const notebook = (resource as { notebookEditor?: { notebookUri?: vscode.Uri } } | undefined)?.notebookEditor?.notebookUri;
        if (notebook instanceof vscode.Uri) return notebook;
        const active = vscode.window.activeNotebookEditor?.notebook;
        const focused = vscode.window.activeTextEditor?.document;
        if (active && (!focused || focused.uri.scheme === "vscode-notebook-cell")) return active;
        return undefined;
    }

    /** Executes the notebook in a fresh kernel of the interpreter, recorded from its first cell. */
    private async diagnoseNotebook(target: vscode.NotebookDocument | vscode.Uri): Promise<void> {
        const notebook = target instanceof vscode.Uri ? await vscode.workspace.openNotebookDocument(target) : target;
        if (!vscode.workspace.isTrusted) {
            void vscode.window.showErrorMessage(UNTRUSTED_RUN);
            return;
        }
        if (notebook.isUntitled || notebook.uri.scheme !== "file") {
            void vscode.window.showErrorMessage("Save the notebook first: VRAM Lens runs it from disk.");
            return;
        }
        if (notebook.isDirty && !(await notebook.save())) return;
        const name = path.basename(notebook.uri.fsPath);
        const result = await this.server.executeCommand(
            "vramlens.diagnose",
            { uri: notebook.uri.toString(), trusted: vscode.workspace.isTrusted },
            `VRAM Lens: ${name} (cell by cell, in a fresh kernel)`,
        );
        this.showResult(result);
    }

    /** Runs the file once per variant and repeat, and shows the table in the report view. */
    private async compareInterventions(resource?: vscode.Uri): Promise<void> {
        const script = await this.script("Compare interventions", false, resource);
        if (!script) return;
        const variants = await this.askVariants(script.name);
        if (!variants) return;
        const repeats = serverSettings(vscode.Uri.parse(script.uri)).experimentRepeats;
        const result = await this.server.executeCommand(
            "vramlens.compareInterventions",
            { uri: script.uri, args: script.args, variants, repeats, trusted: vscode.workspace.isTrusted },
            `VRAM Lens: comparing interventions on ${script.name}`,
        );
        if (result?.ok) this.report.reveal();
        this.showResult(result);
    }

    /** The active (or clicked) Python file, saved, in a trusted workspace, with its arguments; undefined to stop. */
    private async script(action: string, askArguments: boolean, resource?: vscode.Uri) {
        const document = resource instanceof vscode.Uri
            ? await vscode.workspace.openTextDocument(resource)
            : vscode.window.activeTextEditor?.document;
        if (!document || document.languageId !== "python") {
            void vscode.window.showErrorMessage(`Open a Python file first: ${action} runs the active file.`);
            return undefined;
        }
        if (!vscode.workspace.isTrusted) {
            void vscode.window.showErrorMessage(UNTRUSTED_RUN);
            return undefined;
        }
        if (document.isUntitled || document.uri.scheme !== "file") {
            void vscode.window.showErrorMessage("Save the file first: VRAM Lens runs it from disk.");
            return undefined;
        }
        if (document.isDirty && !(await document.save())) return undefined;
        const uri = document.uri.toString();
        let args = this.args.get(uri);
        if (askArguments || args === undefined) {
            args = await this.askArguments(document.uri, args ?? serverSettings(document.uri).args);
            if (args === undefined) return undefined; // dismissed
            await this.args.remember(uri, args);
        }
        return { uri, args, name: path.basename(document.uri.fsPath) };
    }

    /** The variants to compare against the baseline: presets picked, plus what the user types for the others. */
    private async askVariants(name: string): Promise<string[] | undefined> {
        const picked = await vscode.window.showQuickPick(
            PRESETS.map((preset) => ({ label: preset.label, detail: preset.detail, preset })),
            { title: `VRAM Lens: compare interventions on ${name}`, placeHolder: "Variants to run against the unchanged script (pick one or more)", canPickMany: true, ignoreFocusOut: true },
        );
        if (!picked?.length) return undefined;
        const variants: string[] = [];
        for (const { preset } of picked) {
            const chosen = await this.variantsOf(preset);
            if (chosen === undefined) return undefined;
            variants.push(...chosen);
        }
        return [...new Set(variants)];
    }

    private async variantsOf(preset: VariantPreset): Promise<string[] | undefined> {
        const ask = async (prompt: string, value: string, parse: (text: string) => string[]) => {
            const text = await vscode.window.showInputBox({
                title: `VRAM Lens: ${preset.label.replace("…", "")}`, prompt, value, ignoreFocusOut: true,
                validateInput: (input) => {
                    try {
                        parse(input);
                        return undefined;
                    } catch (error) {
                        return (error as Error).message;
                    }
                },
            });
            return text === undefined ? undefined : parse(text);
        };
        switch (preset.kind) {
            case "variant":
                return [preset.variant!];
            case "memoryLimit":
                return ask("An emulated smaller card: a size (24GiB, 1600MiB) or a fraction of the GPU (0.5)", "24GiB", (t) => [memoryLimitVariant(t)]);
            case "argument":
                return ask("A script argument and its values, one run each: --ARG=V1,V2,...", "--batch-size=8,16,32", (t) => [argumentVariant(t)]);
            case "other":
                return ask("Variants separated by spaces: allocator settings (roundup_power2_divisions:8), memory-limit=SIZE, --ARG=V1,V2", "", parseVariantList);
        }
    }

    private async askArguments(file: vscode.Uri, current: string[]): Promise<string[] | undefined> {
        const line = await vscode.window.showInputBox({
            title: `VRAM Lens: arguments for ${path.basename(file.fsPath)}`,
            prompt: "Script arguments, quoted as in a shell (empty: none). Remembered for this file.",
            value: formatArgs(current),
            ignoreFocusOut: true,
            validateInput: (value) => {
                try {
                    parseArgs(value);
                    return undefined;
                } catch (error) {
                    return (error as Error).message;
                }
            },
        });
        return line === undefined ? undefined : parseArgs(line);
    }

    /** Loads a capture folder, its capture.json, or a raw snapshot pickle, and maps it onto a workspace folder. */
    private async openCapture(resource?: vscode.Uri): Promise<void> {
        let target = resource instanceof vscode.Uri ? resource : undefined;
        if (!target) {
            const picked = await vscode.window.showOpenDialog({
                title: "VRAM Lens: open a capture folder, its capture.json, or a snapshot pickle",
                openLabel: "Open capture",
                canSelectFiles: true,
                canSelectFolders: true,
                canSelectMany: false,
                defaultUri: this.folderFor()?.uri,
            });
            target = picked?.[0];
        }
        if (!target) return;
        const folder = this.folderFor(target);
        const result = await this.server.executeCommand("vramlens.openCapture", {
            path: target.fsPath,
            workspaceFolder: folder?.uri.toString(),
        });
        this.showResult(result);
    }

    /** The folder a capture's frames map onto: the capture's own, else the active file's, else the first. */
    private folderFor(target?: vscode.Uri): vscode.WorkspaceFolder | undefined {
        const active = vscode.window.activeTextEditor?.document.uri;
        return (
            (target && vscode.workspace.getWorkspaceFolder(target)) ||
            (active && vscode.workspace.getWorkspaceFolder(active)) ||
            vscode.workspace.workspaceFolders?.[0]
        );
    }

    private async showReport(): Promise<void> {
        this.report.reveal();
        const folder = this.report.workspaceFolder ?? this.folderFor()?.uri.toString();
        const result = await this.server.executeCommand("vramlens.showReport", { workspaceFolder: folder });
        if (result && !result.ok) void vscode.window.showErrorMessage(result.message);
    }

    private async clear(): Promise<void> {
        this.decorations.clear();
        this.report.clear();
        const result = await this.server.executeCommand("vramlens.clearCapture", {});
        if (result && !result.ok) void vscode.window.showErrorMessage(result.message);
    }

    private async pickRank(): Promise<void> {
        const ranks = this.report.ranks;
        if (!ranks?.length) {
            void vscode.window.showInformationMessage("The loaded capture has one rank only.");
            return;
        }
        const picked = await vscode.window.showQuickPick(
            ranks.filter((r) => r.shown !== false).map((r) => ({
                label: `rank ${r.rank}`,
                description: r.failing ? "failed first" : r.failed ? "failed" : r.ending,
                detail: r.endingText,
                picked: r.rank === this.report.selectedRank,
                rank: r.rank,
            })),
            { title: "VRAM Lens: show the figures of rank…" },
        );
        if (picked) await this.report.selectRank(picked.rank);
    }

    /** The server's sentence: an error when it failed; a way to the report whenever a capture was loaded. */
    private showResult(result: CommandResult | undefined): void {
        if (!result) return;
        const show = result.ok ? vscode.window.showInformationMessage : vscode.window.showErrorMessage;
        const actions = result.capture ? ["Show report"] : [];
        void show(result.message, ...actions).then((choice) => {
            if (choice === "Show report") void this.showReport();
        });
    }
}
