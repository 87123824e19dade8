// How the language server process is started: `<python> -m vramlens serve` with the libraries packaged in the
// .vsix first on PYTHONPATH, so the user's Python needs only torch. No vscode import: unit-tested.
import * as path from "node:path";

export interface ServerLaunch {
    command: string;
    args: string[];
    env: Record<string, string | undefined>;
}

/** bundled/libs inside the installed extension: vramlens itself plus pygls, lsprotocol, nvidia-ml-py. */
export function bundledLibs(extensionPath: string): string {
    return path.join(extensionPath, "bundled", "libs");
}

export function serverLaunch(
    interpreter: string,
    libs: string | undefined,
    baseEnv: Record<string, string | undefined>,
): ServerLaunch {
    const env: Record<string, string | undefined> = { ...baseEnv, PYTHONUNBUFFERED: "1" };
    if (libs) {
        // Ours first: a different pygls in the user's environment must not replace the one the server was built for.
        env.PYTHONPATH = [libs, baseEnv.PYTHONPATH].filter(Boolean).join(path.delimiter);
    }
    return { command: interpreter, args: ["-m", "vramlens", "serve"], env };
}
