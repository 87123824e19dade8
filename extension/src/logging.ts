// One output channel for the client and the server, so a user reporting a problem has a single log to copy.
// The channel is a LogOutputChannel (levels, one timestamp, the level picked from its gear menu). The language
// client writes `[Info  - 10:22:33 AM] text` lines of its own; `clientChannel` strips that second timestamp and
// passes the level on, so every line carries one timestamp and the right level.
import * as vscode from "vscode";
import { parseClientLine } from "./core/logLines";

let channel: vscode.LogOutputChannel | undefined;

export function createLog(): vscode.LogOutputChannel {
    channel = vscode.window.createOutputChannel("VRAM Lens", { log: true });
    return channel;
}

export function log(): vscode.LogOutputChannel {
    if (!channel) {
        throw new Error("VRAM Lens log used before activation");
    }
    return channel;
}

/**
 * The channel as the language client sees it: its lines re-levelled, its timestamps dropped. `stopping` says
 * whether the client is being stopped on purpose (see parseClientLine).
 */
export function clientChannel(target: vscode.LogOutputChannel, stopping: () => boolean): vscode.OutputChannel {
    let partial = "";
    const write = (text: string) => {
        const { level, message } = parseClientLine(text, { stopping: stopping() });
        target[level](message);
    };
    return {
        name: target.name,
        append(value: string) {
            // The server's stderr arrives in pieces: one log line per complete line.
            partial += value;
            const lines = partial.split(/\r?\n/);
            partial = lines.pop() ?? "";
            for (const line of lines) if (line.trim()) write(line);
        },
        appendLine(value: string) {
            write(partial + value);
            partial = "";
        },
        replace(value: string) {
            target.replace(value);
        },
        clear: () => target.clear(),
        show: (...args: unknown[]) => target.show(...(args as [boolean?])),
        hide: () => target.hide(),
        dispose: () => undefined, // the extension owns the channel
    };
}
