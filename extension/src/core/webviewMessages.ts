// Messages the report view posts to the extension, checked before anything acts on them: the page renders
// data from files, so a message is treated as untrusted input. No vscode import: unit-tested.

export type ReportAction =
    | { type: "ready" }
    | { type: "openLine"; uri: string; line: number }
    | { type: "copyMarkdown" }
    | { type: "exportMarkdown" }
    | { type: "setRedacted"; redacted: boolean }
    | { type: "selectRank"; rank: number };

/** The action a message asks for, or undefined for anything malformed or unknown. */
export function parseReportMessage(message: unknown): ReportAction | undefined {
    if (!message || typeof message !== "object") return undefined;
    const m = message as Record<string, unknown>;
    switch (m.type) {
        case "ready":
        case "copyMarkdown":
        case "exportMarkdown":
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
            return Number.isInteger(m.rank) && (m.rank as number) >= 0 ? { type: "selectRank", rank: m.rank as number } : undefined;
        default:
            return undefined;
    }
}
