// Starts and stops the language server (`<python> -m vramlens serve`), shows its state as a language status item,
// and is the one door to it: commands, custom requests and the server's custom notifications.
// All analysis happens in the server; this file only manages the process and the connection.
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import * as vscode from "vscode";
import {
    ExecuteCommandRequest,
    LanguageClient,
    LanguageClientOptions,
    ServerOptions,
    State,
    WorkDoneProgress,
} from "vscode-languageclient/node";
import { bundledLibs, serverLaunch } from "./core/launch";
import { findInterpreter } from "./python";
import { log } from "./logging";
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
        this.reportEmitter.dispose();
        this.annotationsEmitter.dispose();
        this.reportRequestedEmitter.dispose();
    }

    /** The running client, or undefined with the reason already shown to the user. */
    private async running(): Promise<LanguageClient | undefined> {
        await this.pending;
        if (this.client?.state === State.Running) return this.client;
        void vscode.window
            .showErrorMessage("The VRAM Lens server is not running; its log says why.", "Open logs", "Restart server")
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
        const send = (token?: vscode.CancellationToken, workDoneToken?: string) =>
            client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [argument], workDoneToken }, token) as Promise<CommandResult>;
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
            outputChannel: this.outputChannel,
            traceOutputChannel: this.outputChannel,
            // The status item and the log say what went wrong; a popup on every failed start would nag.
            revealOutputChannelOn: 4 /* RevealOutputChannelOn.Never */,
            initializationOptions: serverSettings(),
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
        try {
            await client.start();
            this.status.detail = `${interpreter.command} -m vramlens serve`;
            this.annotationsEmitter.fire(); // a new server has no capture: drawn annotations must go
        } catch (error) {
            // Most often: that Python is too old or not found. Say which one, and where to change it.
            log().error(`The server did not start with ${interpreter.command}: ${String(error)}`);
            this.show("failed to start", vscode.LanguageStatusSeverity.Error);
            this.status.detail = `Could not start ${interpreter.command}; set "vramlens.interpreter" to a Python ≥ 3.10 with torch`;
        }
    }

    private async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        if (!client) {
            return;
        }
        try {
            await client.stop();
        } catch (error) {
            // A server that never started cannot be stopped cleanly; the process is gone either way.
            log().debug(`Stopping the server: ${String(error)}`);
        }
        this.show("stopped", vscode.LanguageStatusSeverity.Information);
    }

    private show(state: string, severity: vscode.LanguageStatusSeverity, busy = false): void {
        this.status.text = `VRAM Lens: ${state}`;
        this.status.severity = severity;
        this.status.busy = busy;
    }
}
