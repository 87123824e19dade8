// Messages the report view posts to the extension, checked before anything acts on them: the page renders
// data from files, so a message is treated as untrusted input. No vscode import: unit-tested.

export type ReportAction =
    | { type: "ready"; width?: number }
    | { type: "resized"; width: number }
    | { type: "openLine"; uri: string; line: number }
    | { type: "copyMarkdown" }
    | { type: "exportMarkdown" }
    | { type: "exportSnapshot" }
    | { type: "closeComparison" }
    | { type: "liveAt"; index: number }
    | { type: "setRedacted"; redacted: boolean }
    | { type: "selectRank"; rank: number }
    | { type: "action"; recommendation: number; action: number }
    | { type: "command"; name: ViewCommand };

/** What the view's own buttons may ask for (the empty and partial states, Confirm): client commands by name. */
export const VIEW_COMMANDS = {
    diagnose: "vramlens.diagnoseFile",
    openCapture: "vramlens.openCaptureFile",
    openSample: "vramlens.openSample",
    chooseSourceFolder: "vramlens.chooseSourceFolder",
    confirm: "vramlens.runConfirmation",
    selectInterpreter: "vramlens.selectInterpreter",
} as const;
export type ViewCommand = keyof typeof VIEW_COMMANDS;

const index = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 0;

/** The action a message asks for, or undefined for anything malformed or unknown. */
export function parseReportMessage(message: unknown): ReportAction | undefined {
    if (!message || typeof message !== "object") return undefined;
    const m = message as Record<string, unknown>;
    switch (m.type) {
        case "ready":
            // The view's own width in CSS pixels: tells whether beside the code was room enough.
            return typeof m.width === "number" && Number.isFinite(m.width) && m.width > 0 ? { type: "ready", width: m.width } : { type: "ready" };
        case "resized":
            // The view's new width: the window or the groups changed size, so the code's figures may need fitting again.
            return typeof m.width === "number" && Number.isFinite(m.width) && m.width > 0 ? { type: "resized", width: m.width } : undefined;
        case "copyMarkdown":
        case "exportMarkdown":
        case "exportSnapshot": // which file is the extension's own payload's, never the page's to say
        case "closeComparison":
            return { type: m.type };
        case "openLine":
            // Only files: a report line never points anywhere else, and command: or http: URIs must not open.
            if (typeof m.uri === "string" && m.uri.startsWith("file://") && Number.isInteger(m.line) && (m.line as number) >= 0) {
                return { type: "openLine", uri: m.uri, line: m.line as number };
            }
            return undefined;
        case "setRedacted":
            return typeof m.redacted === "boolean" ? { type: "setRedacted", redacted: m.redacted } : undefined;
        case "selectRank":
            return index(m.rank) ? { type: "selectRank", rank: m.rank } : undefined;
        case "liveAt":
            // A trace position of the shown capture: the server replays to it and checks it again.
            return index(m.index) ? { type: "liveAt", index: m.index } : undefined;
        case "action":
            // Indices into the payload the extension itself holds: the page cannot make up an action.
            return index(m.recommendation) && index(m.action) ? { type: "action", recommendation: m.recommendation, action: m.action } : undefined;
        case "command":
            return typeof m.name === "string" && Object.hasOwn(VIEW_COMMANDS, m.name) ? { type: "command", name: m.name as ViewCommand } : undefined;
        default:
            return undefined;
    }
}
