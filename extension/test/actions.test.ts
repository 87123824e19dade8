import assert from "node:assert/strict";
import { test } from "node:test";
import { actionCommand, presetVariants } from "../src/core/actions";

test("each action kind becomes the client command that carries it out", () => {
    assert.deepEqual(actionCommand({ kind: "confirm", title: "Confirm" }, "file:///ws"), { command: "vramlens.runConfirmation", argument: { workspaceFolder: "file:///ws" } });
    assert.deepEqual(actionCommand({ kind: "compare", title: "Try", arguments: { preset: "expandable_segments" } }),
        { command: "vramlens.compareWithPreset", argument: { preset: "expandable_segments" } });
    assert.deepEqual(actionCommand({ kind: "open_line", title: "Open", uri: "file:///ws/train.py", line: 19 }),
        { command: "vramlens.openReportLine", argument: { uri: "file:///ws/train.py", line: 19 } });
    assert.deepEqual(actionCommand({ kind: "open_settings", title: "Settings", arguments: { query: "@id:vramlens.memoryLimit" } }),
        { command: "workbench.action.openSettings", argument: "@id:vramlens.memoryLimit" });
});

test("an action that cannot be carried out here gets no command", () => {
    assert.equal(actionCommand({ kind: "open_line", title: "Open" }), undefined); // the line is not on this machine
    assert.equal(actionCommand({ kind: "open_line", title: "Open", uri: "command:evil", line: 1 }), undefined);
    assert.equal(actionCommand({ kind: "launch_rockets", title: "?" }), undefined);
});

test("a compare preset becomes variants, or names what to ask", () => {
    assert.deepEqual(presetVariants({ preset: "expandable_segments" }), { variants: ["expandable_segments:True"] });
    assert.deepEqual(presetVariants({ preset: "max_split_size", setting: "max_split_size_mb:256" }), { variants: ["max_split_size_mb:256"] });
    assert.deepEqual(presetVariants({ preset: "memory_limit" }), { ask: "memoryLimit" });
    assert.deepEqual(presetVariants({ preset: "arg_values", arg: "batch-size", values: ["8", "16"] }), { variants: ["--batch-size=8,16"] });
    assert.deepEqual(presetVariants({ preset: "arg_values", arg: "batch-size" }), { ask: "argument" });
});
