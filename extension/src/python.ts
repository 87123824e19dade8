// Finds the interpreter that runs the server: the setting, else the Python extension's active interpreter, else python3.
//
// The Python extension is used when present but is not an `extensionDependencies` entry: a hard dependency would
// keep VRAM Lens from activating wherever that extension is missing (remote hosts, code-server, other editors).
import * as vscode from "vscode";
import { configuredInterpreter } from "./settings";
import { log } from "./logging";

const PYTHON_EXTENSION_ID = "ms-python.python";
const FALLBACK = "python3";

/** The slice of the Python extension's public API (`@vscode/python-extension`) that this client uses. */
interface PythonEnvironmentsApi {
    environments: {
        getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
        resolveEnvironment(env: { path: string }): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
        onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
    };
}

export interface Interpreter {
    command: string;
    source: "setting" | "python extension" | "default";
}

async function pythonExtensionApi(): Promise<PythonEnvironmentsApi | undefined> {
    const extension = vscode.extensions.getExtension<PythonEnvironmentsApi>(PYTHON_EXTENSION_ID);
    if (!extension) {
        return undefined;
    }
    try {
        const api = extension.isActive ? extension.exports : await extension.activate();
        return api?.environments ? api : undefined;
    } catch (error) {
        log().warn(`The Python extension did not activate: ${String(error)}`);
        return undefined;
    }
}

/** Whether the Python extension is installed (its interpreter picker can be offered). */
export function pythonExtensionPresent(): boolean {
    return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
}

export async function findInterpreter(resource?: vscode.Uri): Promise<Interpreter> {
    const configured = configuredInterpreter(resource);
    if (configured) {
        return { command: configured, source: "setting" };
    }
    const api = await pythonExtensionApi();
    if (api) {
        try {
            const active = api.environments.getActiveEnvironmentPath(resource);
            const resolved = await api.environments.resolveEnvironment(active);
            const executable = resolved?.executable.uri?.fsPath;
            if (executable) {
                return { command: executable, source: "python extension" };
            }
        } catch (error) {
            log().warn(`Could not ask the Python extension for its interpreter: ${String(error)}`);
        }
    }
    return { command: FALLBACK, source: "default" };
}

/** Calls `listener` when the Python extension's active interpreter changes; a no-op where that extension is absent. */
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
    const api = await pythonExtensionApi();
    return api?.environments.onDidChangeActiveEnvironmentPath(() => listener());
}
