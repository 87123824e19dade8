import assert from "node:assert/strict";
import { test } from "node:test";
import { iciclePlan, roleSegments } from "../webview/memoryViews";

const MIB = 1024 ** 2;

test("roles become one bar, largest first, shares adding up to one", () => {
    const segments = roleSegments([
        { role: "parameters", bytes: 100 * MIB, label: "parameters" },
        { role: "activations", bytes: 300 * MIB, label: "activations" },
        { role: "gradients", bytes: 0, label: "gradients" }, // nothing: no segment
    ]);
    assert.deepEqual(segments.map((s) => s.role), ["activations", "parameters"]);
    assert.equal(segments.reduce((sum, s) => sum + s.share, 0), 1);
    assert.deepEqual(roleSegments([]), []);
});

test("the icicle nests shares of the parent and leaves out slivers", () => {
    const plan = iciclePlan([{
        label: "train.py:20", bytes: 100, uri: "file:///ws/train.py", line: 20,
        children: [{ label: "GPT2Attention.forward", bytes: 60 }, { label: "cross_entropy", bytes: 39 }, { label: "tiny", bytes: 1 }],
    }]);
    assert.equal(plan.length, 1);
    assert.equal(plan[0].share, 1);
    assert.equal(plan[0].line, 19); // 0-based for the editor
    assert.deepEqual(plan[0].children.map((c) => [c.label, c.share]), [["GPT2Attention.forward", 0.6], ["cross_entropy", 0.39]]);
    assert.equal(iciclePlan([{ label: "x", bytes: 5, uri: "command:evil" }])[0].uri, null);
});
