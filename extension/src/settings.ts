// Reads the extension's settings. Kept apart so every place that needs a setting sees the same trust rules.
import * as vscode from "vscode";
import { RawSettings, RESTART_SETTINGS, ServerSettings, toServerSettings, interpreterSetting } from "./core/serverSettings";

export const SECTION = "vramlens";

/** Settings a workspace may not choose while it is untrusted: they name programs, folders and environments. */
const RESTRICTED = ["interpreter", "python", "cwd", "env"];

/**
 * The `vramlens` section for a resource as plain values.
 *
 * In an untrusted workspace VS Code already hides workspace values of settings listed under
 * `restrictedConfigurations`; reading the user-level value explicitly as well keeps that guarantee even if the
 * manifest and this code drift apart.
 */
export function readSettings(scope?: vscode.Uri): RawSettings {
    const config = vscode.workspace.getConfiguration(SECTION, scope);
    const raw: RawSettings = {};
    for (const key of ["interpreter", "python", "args", "cwd", "env", "memoryLimit", "timeoutSeconds", "stacks", "annotationStyle", "lint", "processesPerNode", "experimentRepeats"]) {
        raw[key] = !vscode.workspace.isTrusted && RESTRICTED.includes(key) ? config.inspect(key)?.globalValue : config.get(key);
    }
    return raw;
}

export function serverSettings(scope?: vscode.Uri): ServerSettings {
    return toServerSettings(readSettings(scope));
}

/** The interpreter the user asked for, or "" to let discovery decide. */
export function configuredInterpreter(scope?: vscode.Uri): string {
    return interpreterSetting(readSettings(scope));
}

/** True when a change means another server process (a different Python). */
export function affectsServerProcess(event: vscode.ConfigurationChangeEvent): boolean {
    return RESTART_SETTINGS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`));
}

/** True when the server must be told the new settings. */
export function affectsSettings(event: vscode.ConfigurationChangeEvent): boolean {
    return event.affectsConfiguration(SECTION);
}
