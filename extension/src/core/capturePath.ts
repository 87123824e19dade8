// How the report's header names the loaded capture: relative to the workspace folder that holds it (what the
// user sees in the explorer), else under the home folder as `~`, else the path as the server gave it.
// No vscode import: unit-tested.
import * as nodePath from "node:path";

type PathApi = Pick<typeof nodePath, "relative" | "isAbsolute" | "sep">;

/** `path` below `folder` as a relative path, or undefined when it is the folder itself or lies outside it. */
function below(folder: string, path: string, api: PathApi): string | undefined {
    const relative = api.relative(folder, path);
    if (!relative || api.isAbsolute(relative) || relative === ".." || relative.startsWith(`..${api.sep}`)) return undefined;
    return relative;
}

/** The header's name for `capture`; `folders` are the workspace folders' paths (the deepest one holding it wins). */
export function shownCapturePath(capture: string, folders: readonly string[], home: string | undefined, api: PathApi = nodePath): string {
    const inFolder = folders.map((folder) => below(folder, capture, api)).filter((r): r is string => r !== undefined);
    if (inFolder.length) return inFolder.reduce((shortest, r) => (r.length < shortest.length ? r : shortest));
    const inHome = home ? below(home, capture, api) : undefined;
    return inHome !== undefined ? `~${api.sep}${inHome}` : capture;
}
