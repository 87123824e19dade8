// The language client's own log lines (`[Info  - 10:22:33 AM] text`) as a level and the text alone, so the log
// channel, which stamps every line itself, shows one timestamp. No vscode import: unit-tested.

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";

const PREFIX = /^\[(Trace|Debug|Info|Warn|Error|LSP)\s*-\s*[^\]]*\]\s?/;
const LEVELS: Record<string, LogLevel> = { Trace: "trace", LSP: "trace", Debug: "debug", Info: "info", Warn: "warn", Error: "error" };
// Python's logging on the server's stderr: `WARNING:pygls.protocol:…` or `ERROR …`.
const PYTHON = /^(DEBUG|INFO|WARNING|ERROR|CRITICAL)[:\s]/;
const PYTHON_LEVELS: Record<string, LogLevel> = { DEBUG: "debug", INFO: "info", WARNING: "warn", ERROR: "error", CRITICAL: "error" };

// The client logs every exit of the server process as an error, a clean one (a restart, a shutdown) too.
const CLEAN_EXIT = /^Server process exited with code 0\.?$/;
// A request the editor sends while the client is being stopped on purpose (a restart) fails by design: VS Code
// asks again once the new server runs.
const REQUEST_FAILED = /^Request \S+ failed\.?$/;

export function parseClientLine(line: string, { stopping = false } = {}): { level: LogLevel; message: string } {
    const client = PREFIX.exec(line);
    if (client) {
        const message = line.slice(client[0].length);
        if (CLEAN_EXIT.test(message)) return { level: "info", message };
        if (stopping && REQUEST_FAILED.test(message)) return { level: "debug", message };
        return { level: LEVELS[client[1]], message };
    }
    const python = PYTHON.exec(line);
    if (python) return { level: PYTHON_LEVELS[python[1]], message: line };
    return { level: "info", message: line };
}
