// Starts and stops the language server (`<python> -m vramlens serve`), shows its state as a language status item,
// and is the one door to it: commands, custom requests and the server's custom notifications.
// All analysis happens in the server; this file only manages the process and the connection.
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import * as vscode from "vscode";
import {
    CloseAction,
    ErrorAction,
    ExecuteCommandRequest,
    LanguageClient,
    LanguageClientOptions,
    ServerOptions,
    State,
    WorkDoneProgress,
} from "vscode-languageclient/node";
import { bundledLibs, serverLaunch } from "./core/launch";
import { findInterpreter } from "./python";
import { clientChannel, log } from "./logging";
import { SECTION, serverSettings } from "./settings";

const CLIENT_ID = "vramlens";
const CLIENT_NAME = "VRAM Lens";
const PYTHON_DOCUMENTS: vscode.DocumentSelector = [
    { scheme: "file", language: "python" },
    { scheme: "untitled", language: "python" },
    { notebookType: "jupyter-notebook", language: "python" },
];
// The same documents as the language server protocol names them: a Jupyter notebook's Python cells come
// through notebook synchronisation (the server then knows each cell's place in its notebook).
const SERVER_DOCUMENTS: LanguageClientOptions["documentSelector"] = [
    { scheme: "file", language: "python" },
    { scheme: "untitled", language: "python" },
    { notebook: "jupyter-notebook", language: "python" },
];

/** `vramlens/interpreterHealth` (docs/lsp-protocol.md): can this interpreter diagnose, and if not, why. */
export interface InterpreterHealth {
    ok: boolean;
    canRun: boolean;
    summary: string;
    problem: string | null;
    python: string;
    version: string | null; // the interpreter's Python version; null when it did not run
    torch: string | null;
    cuda: boolean;
    devices: number;
}

/** What the interpreter lacks, short enough for a language status line. */
function shortProblem(health: InterpreterHealth): string {
    if (health.version === null && !health.torch) return "Interpreter does not run";
    if (!health.torch) return "No torch";
    return "No CUDA: diagnose needs a GPU";
}

/** The last parts of a path: enough to tell interpreters apart in one line. */
function shortPath(file: string): string {
    const parts = file.split(/[\\/]/).filter(Boolean);
    return parts.length > 3 ? `…/${parts.slice(-3).join("/")}` : file;
}

/** Commands a server hover may run (its command links): two of the client's and the server's own that unfolds torch
 * frames in the hovers; no other command runs from a hover. */
export const HOVER_COMMANDS = ["vramlens.showMemoryReport", "vramlens.runConfirmation", "vramlens.showTorchFrames"];

/** `CommandResult` of docs/lsp-protocol.md. */
export interface CommandResult {
    ok: boolean;
    message: string;
    capture?: string;
    workspaceFolder?: string;
}

export class ServerManager implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private readonly status: vscode.LanguageStatusItem;
    private readonly restartItem: vscode.LanguageStatusItem;
    private readonly interpreterItem: vscode.LanguageStatusItem;
    private readonly settingItem: vscode.LanguageStatusItem;
    private health: Promise<InterpreterHealth | undefined> | undefined;
    // Set while this client stops the server on purpose: its closing connection is then no error.
    private stopping = false;
    // Restarts are serialised: a settings change and a command arriving together must not start two servers.
    private pending: Promise<void> = Promise.resolve();
    private readonly reportEmitter = new vscode.EventEmitter<unknown>();
    private readonly annotationsEmitter = new vscode.EventEmitter<void>();
    private readonly reportRequestedEmitter = new vscode.EventEmitter<void>();
    /** `vramlens/report` arrived. */
    readonly onReport = this.reportEmitter.event;
    /** The server's annotations changed (`vramlens/annotationsChanged`), or the server (re)started. */
    readonly onAnnotationsChanged = this.annotationsEmitter.event;
    /** Something (a code lens) ran the server's `vramlens.showReport`: the view should come forward. */
    readonly onReportRequested = this.reportRequestedEmitter.event;

    constructor(private readonly outputChannel: vscode.LogOutputChannel, private readonly extensionPath: string) {
        this.status = vscode.languages.createLanguageStatusItem("vramlens.server", PYTHON_DOCUMENTS);
        this.status.name = CLIENT_NAME;
        this.status.command = { title: "Open logs", command: "vramlens.showLog" };
        // A language status item holds one command: restarting gets its own line in the same hover.
        this.restartItem = vscode.languages.createLanguageStatusItem("vramlens.restart", PYTHON_DOCUMENTS);
        this.restartItem.name = `${CLIENT_NAME} restart`;
        this.restartItem.text = "VRAM Lens server";
        this.restartItem.command = { title: "Restart", command: "vramlens.restartServer" };
        // Whether the interpreter can diagnose: torch importable, CUDA visible (checked at every start).
        this.interpreterItem = vscode.languages.createLanguageStatusItem("vramlens.interpreter", PYTHON_DOCUMENTS);
        this.interpreterItem.name = `${CLIENT_NAME} interpreter`;
        this.interpreterItem.text = "Interpreter not checked yet";
        this.interpreterItem.command = { title: "Select interpreter", command: "vramlens.selectInterpreter" };
        this.settingItem = vscode.languages.createLanguageStatusItem("vramlens.interpreterSetting", PYTHON_DOCUMENTS);
        this.settingItem.name = `${CLIENT_NAME} interpreter setting`;
        this.settingItem.text = "vramlens.interpreter";
        this.settingItem.command = { title: "Open setting", command: "vramlens.openInterpreterSetting" };
        this.show("stopped", vscode.LanguageStatusSeverity.Information);
    }

    restart(reason: string): Promise<void> {
        this.pending = this.pending.then(() => this.doRestart(reason));
        return this.pending;
    }

    async dispose(): Promise<void> {
        await this.pending;
        await this.stop();
        this.status.dispose();
        this.restartItem.dispose();
        this.interpreterItem.dispose();
        this.settingItem.dispose();
        this.reportEmitter.dispose();
        this.annotationsEmitter.dispose();
        this.reportRequestedEmitter.dispose();
    }

    /** The running client, or undefined with the reason already shown to the user. */
    private async running(): Promise<LanguageClient | undefined> {
        await this.pending;
        if (this.client?.state === State.Running) return this.client;
        void vscode.window
            .showErrorMessage("Restart the VRAM Lens server, or open its log to see why it is not running.", "Restart server", "Open logs")
            .then((choice) => {
                if (choice === "Open logs") this.outputChannel.show();
                if (choice === "Restart server") void this.restart("restart after a failed command");
            });
        return undefined;
    }

    /**
     * Runs one of the server's commands (`workspace/executeCommand`). With `progress`, the server's work-done
     * reports appear in a cancellable notification, and cancelling it cancels the request.
     */
    async executeCommand(command: string, argument: object, progressTitle?: string): Promise<CommandResult | undefined> {
        const client = await this.running();
        if (!client) return undefined;
        // A server without this command (or one that failed) answers with an error: shown as its one sentence.
        const send = (token?: vscode.CancellationToken, workDoneToken?: string) =>
            (client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [argument], workDoneToken }, token) as Promise<CommandResult>)
                .catch((error: Error) => ({ ok: false, message: `The server could not run ${command}: ${error.message}` }));
        if (!progressTitle) return send();
        return vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: progressTitle, cancellable: true },
            async (progress, cancel) => {
                const workDoneToken = randomUUID();
                const reports = client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
                    if (value.kind !== "end" && value.message) progress.report({ message: value.message });
                });
                try {
                    return await send(cancel, workDoneToken);
                } finally {
                    reports.dispose();
                }
            },
        );
    }

    /** A custom request (`vramlens/lineAnnotations`); undefined while no server runs. */
    async request<T>(method: string, params: object): Promise<T | undefined> {
        await this.pending;
        const client = this.client;
        if (client?.state !== State.Running) return undefined;
        return client.sendRequest<T>(method, params);
    }

    /**
     * Whether the interpreter can diagnose (the server probes it); cached per server start, so asking before
     * every run costs nothing. Undefined while no server runs.
     */
    interpreterHealth(): Promise<InterpreterHealth | undefined> {
        if (!this.health) this.health = this.checkInterpreter();
        return this.health;
    }

    private async checkInterpreter(): Promise<InterpreterHealth | undefined> {
        this.interpreterItem.busy = true;
        this.interpreterItem.text = "Checking torch and CUDA…";
        try {
            const health = await this.request<InterpreterHealth>("vramlens/interpreterHealth", {
                uri: vscode.window.activeTextEditor?.document.uri.toString(),
            });
            if (health) this.showHealth(health);
            return health;
        } catch (error) {
            log().warn(`Checking the interpreter: ${String(error)}`);
            return undefined;
        } finally {
            this.interpreterItem.busy = false;
        }
    }

    private showHealth(health: InterpreterHealth): void {
        // Short lines: the hover shows one line per item by the status bar's edge. The whole sentence, remedy
        // first, comes with any run it refuses.
        this.interpreterItem.text = health.ok ? health.summary : `$(warning) ${shortProblem(health)}`;
        this.interpreterItem.severity = health.ok ? vscode.LanguageStatusSeverity.Information : vscode.LanguageStatusSeverity.Warning;
        this.interpreterItem.detail = health.torch ? `torch ${health.torch}` : undefined;
        this.settingItem.text = "Interpreter";
        this.settingItem.detail = shortPath(health.python);
    }

    /** Tells the running server the current settings (the server then pulls them per folder as well). */
    sendSettings(): void {
        const client = this.client;
        if (client?.state === State.Running) {
            void client.sendNotification("workspace/didChangeConfiguration", { settings: { [SECTION]: serverSettings() } });
        }
    }

    private async doRestart(reason: string): Promise<void> {
        await this.stop();
        const interpreter = await findInterpreter(vscode.window.activeTextEditor?.document.uri);
        const libs = bundledLibs(this.extensionPath);
        // A development checkout has no bundled/ folder: then vramlens must be installed in the interpreter.
        const launch = serverLaunch(interpreter.command, existsSync(libs) ? libs : undefined, process.env);
        log().info(`Starting the server (${reason}) with ${interpreter.command} [${interpreter.source}]`);
        this.show("starting", vscode.LanguageStatusSeverity.Information, true);

        const serverOptions: ServerOptions = { command: launch.command, args: launch.args, options: { env: launch.env } };
        const clientOptions: LanguageClientOptions = {
            documentSelector: SERVER_DOCUMENTS,
            outputChannel: clientChannel(this.outputChannel, () => this.stopping),
            traceOutputChannel: clientChannel(this.outputChannel, () => this.stopping),
            // Hovers may run exactly the listed client commands (Show in report, Confirm the diagnosis).
            markdown: { isTrusted: { enabledCommands: HOVER_COMMANDS }, supportHtml: false },
            // The status item and the log say what went wrong; a popup on every failed start would nag.
            revealOutputChannelOn: 4 /* RevealOutputChannelOn.Never */,
            initializationOptions: serverSettings(),
            errorHandler: {
                error: () => ({ action: ErrorAction.Continue, handled: false }),
                // A restart closes the connection on purpose: say nothing. Otherwise the server died: say so once.
                closed: () => this.stopping
                    ? { action: CloseAction.DoNotRestart, handled: true }
                    : { action: CloseAction.DoNotRestart, message: "Restart the VRAM Lens server (Restart in its status item): it stopped unexpectedly; its log says why." },
            },
            middleware: {
                workspace: {
                    // The server pulls `vramlens` per folder: answer with the checked, trust-filtered settings.
                    configuration: async (params, token, next) => {
                        const answers = await next(params, token);
                        if (!Array.isArray(answers)) return answers;
                        return params.items.map((item, i) =>
                            item.section === SECTION
                                ? serverSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined)
                                : answers[i],
                        );
                    },
                },
                executeCommand: (command, args, next) => {
                    if (command === "vramlens.showReport") this.reportRequestedEmitter.fire();
                    return next(command, args);
                },
            },
        };
        const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
        client.onDidChangeState((event) => {
            if (event.newState === State.Running) {
                this.show("running", vscode.LanguageStatusSeverity.Information);
            } else if (event.newState === State.Stopped && this.client === client) {
                this.show("stopped", vscode.LanguageStatusSeverity.Warning);
            }
        });
        client.onNotification("vramlens/report", (payload: unknown) => this.reportEmitter.fire(payload));
        client.onNotification("vramlens/annotationsChanged", () => this.annotationsEmitter.fire());
        this.client = client;
        this.health = undefined;
        try {
            await client.start();
            this.status.detail = undefined;
            this.annotationsEmitter.fire(); // a new server has no capture: drawn annotations must go
            void this.interpreterHealth(); // at every start: a changed interpreter is checked at once
        } catch (error) {
            // Most often: that Python is too old or not found. Say which one, and where to change it.
            log().error(`The server did not start with ${interpreter.command}: ${String(error)}`);
            this.show("failed to start", vscode.LanguageStatusSeverity.Error);
            this.status.detail = `Select a Python ≥ 3.10 with torch: ${interpreter.command} could not start the server`;
            this.interpreterItem.text = `$(warning) ${interpreter.command} does not start`;
            this.interpreterItem.severity = vscode.LanguageStatusSeverity.Error;
            this.interpreterItem.detail = this.status.detail;
        }
    }

    private async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        if (!client) {
            return;
        }
        this.stopping = true;
        try {
            await client.stop();
        } catch (error) {
            // A server that never started cannot be stopped cleanly; the process is gone either way.
            log().debug(`Stopping the server: ${String(error)}`);
        } finally {
            this.stopping = false;
        }
        log().info("The server stopped.");
        this.show("stopped", vscode.LanguageStatusSeverity.Information);
    }

    private show(state: string, severity: vscode.LanguageStatusSeverity, busy = false): void {
        this.status.text = `VRAM Lens: ${state}`;
        this.status.severity = severity;
        this.status.busy = busy;
    }
}
