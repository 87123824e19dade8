// Starts and stops the language server (`<python> -m vramlens serve`) and shows its state in the status bar.
// All analysis happens in the server; this file only manages the process and the client connection.
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions, State } from "vscode-languageclient/node";
import { findInterpreter } from "./python";
import { log } from "./logging";

const CLIENT_ID = "vramlens";
const CLIENT_NAME = "VRAM Lens";
const PYTHON_DOCUMENTS: vscode.DocumentSelector = [
    { scheme: "file", language: "python" },
    { scheme: "untitled", language: "python" },
];

export class ServerManager implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private readonly status: vscode.LanguageStatusItem;
    // Restarts are serialised: a settings change and a command arriving together must not start two servers.
    private pending: Promise<void> = Promise.resolve();

    constructor(private readonly outputChannel: vscode.LogOutputChannel) {
        this.status = vscode.languages.createLanguageStatusItem("vramlens.server", PYTHON_DOCUMENTS);
        this.status.name = CLIENT_NAME;
        this.status.command = { title: "Show Log", command: "vramlens.showLog" };
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
    }

    private async doRestart(reason: string): Promise<void> {
        await this.stop();
        const interpreter = await findInterpreter(vscode.window.activeTextEditor?.document.uri);
        log().info(`Starting the server (${reason}) with ${interpreter.command} [${interpreter.source}]`);
        this.show("starting", vscode.LanguageStatusSeverity.Information, true);

        const serverOptions: ServerOptions = {
            command: interpreter.command,
            args: ["-m", "vramlens", "serve"],
            options: { env: { ...process.env, PYTHONUNBUFFERED: "1" } },
        };
        const clientOptions: LanguageClientOptions = {
            documentSelector: PYTHON_DOCUMENTS as LanguageClientOptions["documentSelector"],
            outputChannel: this.outputChannel,
            traceOutputChannel: this.outputChannel,
            // The status item and the log say what went wrong; a popup on every failed start would nag.
            revealOutputChannelOn: 4 /* RevealOutputChannelOn.Never */,
        };
        const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
        client.onDidChangeState((event) => {
            if (event.newState === State.Running) {
                this.show("running", vscode.LanguageStatusSeverity.Information);
            } else if (event.newState === State.Stopped && this.client === client) {
                this.show("stopped", vscode.LanguageStatusSeverity.Warning);
            }
        });
        this.client = client;
        try {
            await client.start();
            this.status.detail = `${interpreter.command} -m vramlens serve`;
        } catch (error) {
            // Most often: `vramlens` is not installed in that interpreter. Say which interpreter, and where to change it.
            log().error(`The server did not start with ${interpreter.command}: ${String(error)}`);
            this.show("failed to start", vscode.LanguageStatusSeverity.Error);
            this.status.detail = `Install vramlens in ${interpreter.command}, or set "vramlens.python"`;
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
