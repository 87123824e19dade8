// Reads the extension's settings. Kept apart so every place that needs a setting sees the same trust rules.
import * as vscode from "vscode";

export const SECTION = "vramlens";

/**
 * The interpreter the user asked for, or "" to let discovery decide.
 *
 * In an untrusted workspace VS Code already hides workspace values of settings listed under
 * `restrictedConfigurations`; reading the user-level value explicitly as well keeps that guarantee even if the
 * manifest and this code drift apart.
 */
export function configuredPython(): string {
    const config = vscode.workspace.getConfiguration(SECTION);
    if (!vscode.workspace.isTrusted) {
        return (config.inspect<string>("python")?.globalValue ?? "").trim();
    }
    return (config.get<string>("python") ?? "").trim();
}

/** True when a change to the configuration means the server must be started again. */
export function affectsServer(event: vscode.ConfigurationChangeEvent): boolean {
    return event.affectsConfiguration(`${SECTION}.python`);
}
