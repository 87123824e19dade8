import assert from "node:assert/strict";
import { test } from "node:test";
import { parseClientLine } from "../src/core/logLines";

test("the client's own timestamp goes, its level stays", () => {
    assert.deepEqual(parseClientLine("[Info  - 10:22:33 AM] Settings for file:///ws: {}"), { level: "info", message: "Settings for file:///ws: {}" });
    assert.deepEqual(parseClientLine("[Error - 9:01:02 PM] Server initialization failed."), { level: "error", message: "Server initialization failed." });
    assert.deepEqual(parseClientLine("[Warn  - 10:22:33] x"), { level: "warn", message: "x" });
});

test("the server's Python logging keeps its text and gets its level", () => {
    assert.deepEqual(parseClientLine("WARNING:pygls.protocol:Cancel notification for unknown message id"),
        { level: "warn", message: "WARNING:pygls.protocol:Cancel notification for unknown message id" });
    assert.equal(parseClientLine("ERROR:asyncio:Task exception").level, "error");
});

test("any other line is information, unchanged", () => {
    assert.deepEqual(parseClientLine("plain text [Info - not a prefix]"), { level: "info", message: "plain text [Info - not a prefix]" });
});

test("a clean exit of the server (a restart) is no error; any other exit is", () => {
    assert.deepEqual(parseClientLine("[Error - 10:45:41 AM] Server process exited with code 0."), { level: "info", message: "Server process exited with code 0." });
    assert.equal(parseClientLine("[Error - 10:45:41 AM] Server process exited with code 1.").level, "error");
});

test("a request that fails while the client is stopped on purpose is no error; at any other time it is", () => {
    const line = "[Error - 5:23:11 PM] Request textDocument/codeLens failed.";
    assert.deepEqual(parseClientLine(line, { stopping: true }), { level: "debug", message: "Request textDocument/codeLens failed." });
    assert.equal(parseClientLine(line).level, "error");
    assert.equal(parseClientLine("[Error - 5:23:11 PM] Server initialization failed.", { stopping: true }).level, "error");
});
