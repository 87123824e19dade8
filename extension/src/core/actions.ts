// The report's structured actions (docs/lsp-protocol.md, `recommendations[].actions`): what each button does.
// The server decides which actions fit; this only turns one into the client command that carries it out.
// No vscode import: unit-tested.

export interface ReportActionSpec {
    kind: string; // "confirm" | "compare" | "open_line" | "open_settings"
    title: string;
    arguments?: Record<string, unknown>;
    uri?: string; // open_line: where the recorded line is here
    line?: number; // 0-based
}

/** The client command and its argument for an action, or undefined for one this client cannot carry out. */
export function actionCommand(action: ReportActionSpec, workspaceFolder?: string): { command: string; argument?: unknown } | undefined {
    const args = action.arguments ?? {};
    switch (action.kind) {
        case "confirm":
            return { command: "vramlens.runConfirmation", argument: { workspaceFolder } };
        case "compare":
            return { command: "vramlens.compareWithPreset", argument: args };
        case "open_line":
            return typeof action.uri === "string" && action.uri.startsWith("file://") && Number.isInteger(action.line)
                ? { command: "vramlens.openReportLine", argument: { uri: action.uri, line: action.line } }
                : undefined;
        case "open_settings":
            return typeof args.query === "string" ? { command: "workbench.action.openSettings", argument: args.query } : undefined;
        default:
            return undefined;
    }
}

/**
 * A "compare" action's preset as the variants `vramlens.compareInterventions` takes; `ask` names what must be
 * asked first (a memory limit's size, an argument's values) when the action does not carry it.
 */
export function presetVariants(args: Record<string, unknown>): { variants?: string[]; ask?: "memoryLimit" | "argument" } {
    const setting = typeof args.setting === "string" ? args.setting : undefined;
    switch (args.preset) {
        case "expandable_segments":
            return { variants: [setting ?? "expandable_segments:True"] };
        case "max_split_size":
            return { variants: [setting ?? "max_split_size_mb:128"] };
        case "memory_limit":
            return typeof args.size === "string" ? { variants: [`memory-limit=${args.size}`] } : { ask: "memoryLimit" };
        case "arg_values": {
            const values = Array.isArray(args.values) ? args.values.filter((v): v is string => typeof v === "string") : [];
            return typeof args.arg === "string" && values.length
                ? { variants: [`--${args.arg.replace(/^-+/, "")}=${values.join(",")}`] }
                : { ask: "argument" };
        }
        default:
            return setting ? { variants: [setting] } : { ask: "argument" };
    }
}
