import assert from "node:assert/strict";
import { test } from "node:test";
import { parseReportMessage } from "../src/core/webviewMessages";

test("well-formed messages become actions", () => {
    assert.deepEqual(parseReportMessage({ type: "ready" }), { type: "ready" });
    assert.deepEqual(parseReportMessage({ type: "ready", width: 480 }), { type: "ready", width: 480 });
    assert.deepEqual(parseReportMessage({ type: "ready", width: "wide" }), { type: "ready" });
    assert.deepEqual(parseReportMessage({ type: "resized", width: 612 }), { type: "resized", width: 612 });
    assert.equal(parseReportMessage({ type: "resized" }), undefined);
    assert.equal(parseReportMessage({ type: "resized", width: 0 }), undefined);
    assert.equal(parseReportMessage({ type: "resized", width: Number.NaN }), undefined);
    assert.deepEqual(parseReportMessage({ type: "copyMarkdown", extra: 1 }), { type: "copyMarkdown" });
    assert.deepEqual(parseReportMessage({ type: "exportMarkdown" }), { type: "exportMarkdown" });
    assert.deepEqual(parseReportMessage({ type: "closeComparison" }), { type: "closeComparison" });
    // The page asks for the snapshot; a path it sends along is dropped (the extension knows which file).
    assert.deepEqual(parseReportMessage({ type: "exportSnapshot", path: "/etc/passwd" }), { type: "exportSnapshot" });
    assert.deepEqual(parseReportMessage({ type: "openLine", uri: "file:///ws/train.py", line: 19 }), {
        type: "openLine", uri: "file:///ws/train.py", line: 19,
    });
    assert.deepEqual(parseReportMessage({ type: "setRedacted", redacted: true }), { type: "setRedacted", redacted: true });
    assert.deepEqual(parseReportMessage({ type: "selectRank", rank: 3 }), { type: "selectRank", rank: 3 });
    assert.deepEqual(parseReportMessage({ type: "liveAt", index: 9314 }), { type: "liveAt", index: 9314 });
    assert.equal(parseReportMessage({ type: "liveAt", index: -1 }), undefined);
    assert.equal(parseReportMessage({ type: "liveAt", index: "9314" }), undefined);
});

test("anything else is dropped", () => {
    for (const message of [
        null, "ready", 7, {}, { type: "eval" },
        { type: "openLine", uri: "command:workbench.action.terminal.new", line: 1 },
        { type: "openLine", uri: "https://example.com/x.py", line: 1 },
        { type: "openLine", uri: "file:///x.py", line: -1 },
        { type: "openLine", uri: "file:///x.py", line: "3" },
        { type: "setRedacted", redacted: "yes" },
        { type: "selectRank", rank: 1.5 },
    ]) {
        assert.equal(parseReportMessage(message), undefined, JSON.stringify(message));
    }
});

test("the view's buttons name actions by index and commands by name only", () => {
    assert.deepEqual(parseReportMessage({ type: "action", recommendation: 1, action: 0 }), { type: "action", recommendation: 1, action: 0 });
    assert.deepEqual(parseReportMessage({ type: "command", name: "openSample" }), { type: "command", name: "openSample" });
    for (const message of [
        { type: "action", recommendation: -1, action: 0 },
        { type: "action", recommendation: 0 },
        { type: "command", name: "workbench.action.terminal.new" },
        { type: "command", name: "toString" },
    ]) {
        assert.equal(parseReportMessage(message), undefined, JSON.stringify(message));
    }
});
