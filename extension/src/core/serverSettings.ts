// The `vramlens` settings as the language server expects them (docs/lsp-protocol.md, "Settings").
// No vscode import: unit-tested with `node --test`.
import { repeatsSetting } from "./variants";

export type AnnotationStyle = "inlayHints" | "endOfLine" | "off";

export interface ServerSettings {
    interpreter: string;
    args: string[];
    cwd: string;
    env: Record<string, string>;
    memoryLimit: string;
    timeoutSeconds: number;
    stacks: "python" | "all";
    annotationStyle: AnnotationStyle;
    lint: { select?: string[]; ignore?: string[]; preview?: boolean };
    processesPerNode: number;
    experimentRepeats: number;
}

/** What the client read from VS Code: any value of any type, since settings.json is edited by hand. */
export type RawSettings = Record<string, unknown>;

const ANNOTATION_STYLES: readonly AnnotationStyle[] = ["inlayHints", "endOfLine", "off"];

function text(value: unknown): string {
    return typeof value === "string" ? value.trim() : "";
}

function strings(value: unknown): string[] {
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/** The interpreter setting, with the older `python` name read when the new one is empty. */
export function interpreterSetting(raw: RawSettings): string {
    return text(raw.interpreter) || text(raw.python);
}

/** Settings → the object sent to the server; wrong types fall back to the documented defaults. */
export function toServerSettings(raw: RawSettings): ServerSettings {
    const env: Record<string, string> = {};
    if (raw.env && typeof raw.env === "object" && !Array.isArray(raw.env)) {
        for (const [name, value] of Object.entries(raw.env)) {
            // Numbers and booleans are what a user means as text; anything else cannot be an environment value.
            if (["string", "number", "boolean"].includes(typeof value)) env[name] = String(value);
        }
    }
    const timeout = Number(raw.timeoutSeconds);
    const lint: ServerSettings["lint"] = {};
    if (raw.lint && typeof raw.lint === "object") {
        const { select, ignore, preview } = raw.lint as Record<string, unknown>;
        if (Array.isArray(select)) lint.select = strings(select);
        if (Array.isArray(ignore)) lint.ignore = strings(ignore);
        if (typeof preview === "boolean") lint.preview = preview;  // preview checks on too (docs/lint.md)
    }
    return {
        interpreter: interpreterSetting(raw),
        args: strings(raw.args),
        cwd: text(raw.cwd),
        env,
        memoryLimit: text(raw.memoryLimit),
        timeoutSeconds: Number.isFinite(timeout) && timeout > 0 ? timeout : 0,
        stacks: raw.stacks === "all" ? "all" : "python",
        annotationStyle: ANNOTATION_STYLES.includes(raw.annotationStyle as AnnotationStyle)
            ? (raw.annotationStyle as AnnotationStyle)
            : "endOfLine",
        lint,
        processesPerNode: Number.isInteger(raw.processesPerNode) && (raw.processesPerNode as number) >= 0 ? (raw.processesPerNode as number) : 0,
        experimentRepeats: repeatsSetting(raw.experimentRepeats),
    };
}

/** The settings whose change means another server process (a different Python). */
export const RESTART_SETTINGS = ["interpreter", "python"] as const;
