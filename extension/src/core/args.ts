// Script arguments as the user types them in one line, and the per-file memory of what they typed last.
// No vscode import: unit-tested with `node --test`.

/**
 * Splits one line into arguments the way a POSIX shell would for plain words: white space separates,
 * '…' keeps everything literally, "…" keeps spaces and honours \" and \\, a backslash outside quotes
 * escapes the next character. Throws on an unclosed quote, so a typo is reported instead of run.
 */
export function parseArgs(line: string): string[] {
    const args: string[] = [];
    let current = "";
    let inWord = false;
    let quote: "'" | '"' | undefined;
    for (let i = 0; i < line.length; i++) {
        const c = line[i];
        if (quote === "'") {
            if (c === "'") quote = undefined;
            else current += c;
        } else if (quote === '"') {
            if (c === '"') quote = undefined;
            else if (c === "\\" && (line[i + 1] === '"' || line[i + 1] === "\\")) current += line[++i];
            else current += c;
        } else if (c === "'" || c === '"') {
            quote = c;
            inWord = true;
        } else if (c === "\\" && i + 1 < line.length) {
            current += line[++i];
            inWord = true;
        } else if (/\s/.test(c)) {
            if (inWord) args.push(current);
            current = "";
            inWord = false;
        } else {
            current += c;
            inWord = true;
        }
    }
    if (quote) {
        throw new Error(`The arguments have an unclosed ${quote === "'" ? "single" : "double"} quote.`);
    }
    if (inWord) args.push(current);
    return args;
}

/** The inverse of parseArgs: one line that parses back to the same arguments. */
export function formatArgs(args: readonly string[]): string {
    return args.map(quoteArg).join(" ");
}

function quoteArg(arg: string): string {
    if (arg !== "" && /^[\w@%+=:,./-]+$/.test(arg)) {
        return arg;
    }
    return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The part of vscode.Memento this needs (workspaceState), so tests can pass a Map-backed store. */
export interface KeyValueStore {
    get<T>(key: string): T | undefined;
    update(key: string, value: unknown): Thenable<void> | Promise<void>;
}

const KEY_PREFIX = "vramlens.args:";

/** Remembers the arguments used for each file, so diagnosing it again asks nothing. */
export class ArgsMemory {
    constructor(private readonly store: KeyValueStore) {}

    get(fileUri: string): string[] | undefined {
        const saved = this.store.get<unknown>(KEY_PREFIX + fileUri);
        return Array.isArray(saved) && saved.every((a) => typeof a === "string") ? saved : undefined;
    }

    async remember(fileUri: string, args: readonly string[]): Promise<void> {
        await this.store.update(KEY_PREFIX + fileUri, [...args]);
    }
}
