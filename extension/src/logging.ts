// One output channel for the client and the server's stderr, so a user reporting a problem has a single log to copy.
import * as vscode from "vscode";

let channel: vscode.LogOutputChannel | undefined;

export function createLog(): vscode.LogOutputChannel {
    // `log: true` gives levels and timestamps, and the user picks the level from the channel's gear menu.
    channel = vscode.window.createOutputChannel("VRAM Lens", { log: true });
    return channel;
}

export function log(): vscode.LogOutputChannel {
    if (!channel) {
        throw new Error("VRAM Lens log used before activation");
    }
    return channel;
}
