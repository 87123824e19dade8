// The palette commands. Each gathers what the server needs (file, arguments, trust, folder), asks the server
// to do the work, and shows the one sentence it answers. Nothing here analyses anything.
import * as path from "node:path";
import * as vscode from "vscode";
import { ArgsMemory, formatArgs, parseArgs } from "./core/args";
import { argumentVariant, memoryLimitVariant, parseVariantList, PRESETS, VariantPreset } from "./core/variants";
import { LineDecorations } from "./decorations";
import { ReportPanel } from "./reportPanel";
import { presetVariants } from "./core/actions";
import { pythonExtensionPresent } from "./python";
import { CommandResult, ServerManager } from "./server";
import { SECTION, serverSettings } from "./settings";

const UNTRUSTED_RUN =
    "Trust this workspace (Manage Workspace Trust) to diagnose: VRAM Lens runs scripts only in a trusted " +
    "workspace, and this one is in Restricted Mode. Lint diagnostics and opening captures work either way.";

export class Commands {
    private readonly args: ArgsMemory;

    constructor(
        private readonly server: ServerManager,
        private readonly decorations: LineDecorations,
        private readonly report: ReportPanel,
        private readonly outputChannel: vscode.LogOutputChannel,
        workspaceState: vscode.Memento,
        private readonly extensionUri: vscode.Uri,
        private readonly storageUri: vscode.Uri,
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
            command("vramlens.selectInterpreter", () => this.selectInterpreter()),
            command("vramlens.openInterpreterSetting", () => vscode.commands.executeCommand("workbench.action.openSettings", "@id:vramlens.interpreter")),
            command("vramlens.openSample", () => this.openSample()),
            command("vramlens.runConfirmation", (argument?: { workspaceFolder?: string }) => this.confirm(argument?.workspaceFolder)),
            command("vramlens.chooseSourceFolder", () => this.chooseSourceFolder()),
            command("vramlens.compareWithPreset", (argument?: Record<string, unknown>) => this.compareInterventions(undefined, argument)),
            command("vramlens.compareWithPrevious", () => this.compareWithPrevious()),
        ];
    }

    /**
     * The interpreter that runs the server and the scripts: the Python extension's picker when that extension
     * is there (and no VRAM Lens setting overrides it), else a path typed or browsed for, kept in the user's settings.
     */
    private async selectInterpreter(): Promise<void> {
        const inspected = vscode.workspace.getConfiguration(SECTION).inspect<string>("interpreter");
        const choices = [
            ...(pythonExtensionPresent() ? [{ label: "Use the Python extension's interpreter…", id: "python" }] : []),
            { label: "Enter the path of a Python…", id: "path" },
            { label: "Browse for a Python…", id: "browse" },
        ];
        const picked = await vscode.window.showQuickPick(choices, {
            title: "VRAM Lens: select the interpreter (it needs torch; with CUDA to diagnose runs)",
            placeHolder: inspected?.workspaceValue || inspected?.globalValue || "python3",
        });
        if (!picked) return;
        // A workspace value wins over the user's: change the one that is in force.
        const target = inspected?.workspaceValue !== undefined ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
        if (picked.id === "python") {
            // The Python extension's choice applies only while no VRAM Lens setting overrides it.
            if (inspected?.workspaceValue || inspected?.globalValue) {
                await vscode.workspace.getConfiguration(SECTION).update("interpreter", undefined, target);
            }
            await vscode.commands.executeCommand("python.setInterpreter");
            return;
        }
        const value = picked.id === "path"
            ? await vscode.window.showInputBox({ title: "VRAM Lens: interpreter", prompt: "A Python with torch, e.g. /opt/venv/bin/python", value: inspected?.globalValue ?? "", ignoreFocusOut: true })
            : (await vscode.window.showOpenDialog({ title: "VRAM Lens: choose a Python", canSelectFiles: true, openLabel: "Use this Python" }))?.[0]?.fsPath;
        if (value === undefined) return;
        await vscode.workspace.getConfiguration(SECTION).update("interpreter", value, target);
    }

    /** Copies the shipped sample (a script and the capture recorded from it on an H200) and opens both. */
    private async openSample(): Promise<void> {
        const source = vscode.Uri.joinPath(this.extensionUri, "media", "sample");
        const target = vscode.Uri.joinPath(this.storageUri, "sample");
        await vscode.workspace.fs.copy(source, target, { overwrite: true });
        const script = vscode.Uri.joinPath(target, "retained_references.py");
        await vscode.window.showTextDocument(script, { preview: false, viewColumn: vscode.ViewColumn.One });
        const result = await this.server.executeCommand("vramlens.openCapture", {
            path: vscode.Uri.joinPath(target, "capture").fsPath,
            sourceRoot: target.fsPath,
        });
        this.showResult(result);
    }

    /** Maps the loaded capture onto a folder the user picks (its files were recorded on another machine). */
    private async chooseSourceFolder(): Promise<void> {
        const capture = this.report.capture;
        if (!capture) {
            void vscode.window.showInformationMessage("Open a capture first: the source folder is chosen for a loaded capture.");
            return;
        }
        const picked = await vscode.window.showOpenDialog({
            title: "VRAM Lens: the folder that holds the recorded script's sources",
            canSelectFolders: true, canSelectFiles: false, openLabel: "Use this folder", defaultUri: this.folderFor()?.uri,
        });
        if (!picked?.[0]) return;
        const result = await this.server.executeCommand("vramlens.openCapture", {
            path: capture, workspaceFolder: this.report.workspaceFolder, sourceRoot: picked[0].fsPath,
        });
        this.showResult(result);
        // Mapped: open the file its figures are now on, so the next step is in view.
        const file = result?.ok ? this.report.firstFileUri : undefined;
        if (file) await vscode.window.showTextDocument(vscode.Uri.parse(file), { preview: false, viewColumn: vscode.ViewColumn.One });
    }

    /** Runs the experiment that confirms (or revises) the loaded diagnosis: the server's vramlens.confirmDiagnosis. */
    private async confirm(workspaceFolder?: string): Promise<void> {
        if (!vscode.workspace.isTrusted) {
            void vscode.window.showErrorMessage(UNTRUSTED_RUN);
            return;
        }
        if (!(await this.interpreterCanRun())) return;
        // The run repeats the recorded script: the one the capture names here, else the open Python file.
        const active = vscode.window.activeTextEditor?.document;
        const uri = this.report.scriptUri ?? (active?.languageId === "python" ? active.uri.toString() : undefined);
        if (!uri) {
            void vscode.window.showErrorMessage("Open the script the capture ran: confirming the diagnosis runs it again.");
            return;
        }
        const result = await this.server.executeCommand(
            "vramlens.confirmDiagnosis",
            { uri, workspaceFolder: workspaceFolder ?? this.report.workspaceFolder, trusted: vscode.workspace.isTrusted },
            "VRAM Lens: confirming the diagnosis",
        );
        this.showResult(result);
    }

    /** False (with the problem and its remedy shown) when the interpreter cannot run a diagnosis. */
    private async interpreterCanRun(): Promise<boolean> {
        const health = await this.server.interpreterHealth();
        if (!health || health.canRun) return true; // no answer: the server's own check still stands
        void vscode.window.showErrorMessage(health.problem ?? health.summary, "Select interpreter", "Open setting").then((choice) => {
            if (choice === "Select interpreter") void this.selectInterpreter();
            if (choice === "Open setting") void vscode.commands.executeCommand("vramlens.openInterpreterSetting");
        });
        return false;
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
        if (!(await this.interpreterCanRun())) return;
        const name = path.basename(notebook.uri.fsPath);
        const result = await this.server.executeCommand(
            "vramlens.diagnose",
            { uri: notebook.uri.toString(), trusted: vscode.workspace.isTrusted },
            `VRAM Lens: ${name} (cell by cell, in a fresh kernel)`,
        );
        this.showResult(result);
    }

    /**
     * Runs the file once per variant and repeat, and shows the table in the report view. From a report's
     * button, `preset` names the variants (an action's arguments) and nothing is picked.
     */
    private async compareInterventions(resource?: vscode.Uri, preset?: Record<string, unknown>): Promise<void> {
        const script = await this.script("Compare interventions", false, resource);
        if (!script) return;
        const variants = preset ? await this.presetOrAsk(preset) : await this.askVariants(script.name);
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
        // Before any question: arguments typed for a run that cannot happen would be wasted.
        if (!(await this.interpreterCanRun())) return undefined;
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

    /** A report action's preset as variants; a preset that needs a value (a size, argument values) asks for it. */
    private async presetOrAsk(argument: Record<string, unknown>): Promise<string[] | undefined> {
        const planned = presetVariants(argument);
        if (planned.variants) return planned.variants;
        const preset = PRESETS.find((p) => p.kind === planned.ask);
        return preset ? this.variantsOf(preset) : undefined;
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
        if (!target && !vscode.workspace.workspaceFolders?.length) {
            void vscode.window.showInformationMessage("Open a folder first: a capture is mapped onto the files of a workspace folder. Or open the sample.", "Open sample").then((choice) => {
                if (choice === "Open sample") void this.openSample();
            });
            return;
        }
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

    /** Before/after: the loaded capture against an earlier one the user picks; the server compares, and its
     * labelled side-by-side view goes to the report. */
    private async compareWithPrevious(): Promise<void> {
        const folder = this.report.workspaceFolder ?? this.folderFor()?.uri.toString();
        const root = this.folderFor()?.uri;
        const picked = await vscode.window.showOpenDialog({
            title: "VRAM Lens: compare the loaded capture with an earlier one (the run before your change)",
            openLabel: "Compare with this capture",
            canSelectFiles: true,
            canSelectFolders: true,
            canSelectMany: false,
            defaultUri: root ? vscode.Uri.joinPath(root, ".vramlens", "captures") : undefined,
        });
        if (!picked?.[0]) return;
        const result = (await this.server.executeCommand(
            "vramlens.compareCaptures", { before: picked[0].fsPath, workspaceFolder: folder }, "VRAM Lens: comparing captures",
        )) as (CommandResult & { view?: unknown }) | undefined;
        this.showResult(result);
        if (result?.ok && result.view) this.report.showComparison(result.view);
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

    /** The report view; with nothing loaded it shows how to get a capture (no error: that is a state, not a failure). */
    private async showReport(): Promise<void> {
        this.report.reveal();
        const folder = this.report.workspaceFolder ?? this.folderFor()?.uri.toString();
        const result = await this.server.executeCommand("vramlens.showReport", { workspaceFolder: folder });
        if (result && !result.ok) this.report.clear();
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
        if (result.ok && /No recorded frame matched/.test(result.message)) actions.push("Choose source folder…");
        void show(result.message, ...actions).then((choice) => {
            if (choice === "Show report") void this.showReport();
            if (choice === "Choose source folder…") void this.chooseSourceFolder();
        });
    }
}
