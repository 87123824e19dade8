import assert from "node:assert/strict";
import { test } from "node:test";
import { LineAnnotation, planDecorations, shadeLevel } from "../src/core/annotations";

const at = (line: number, share: number, extra: Partial<LineAnnotation> = {}): LineAnnotation => ({
    line, share, text: `${line} text`, liveBytes: 1, growing: false, stale: false, hover: "", ...extra,
});

test("shade level: one per fifth of the peak, any share above zero shows", () => {
    assert.deepEqual([0, 0.001, 0.2, 0.21, 0.41, 0.6, 0.99, 1, 1.5, NaN, -1].map(shadeLevel), [0, 1, 1, 2, 3, 3, 5, 5, 5, 0, 0]);
});

test("lines land in their shade bucket; end-of-line text only for that style", () => {
    const annotations = [at(19, 0.89), at(18, 0.1), at(3, 0.45)];
    const inlay = planDecorations(annotations, "inlayHints", 30);
    assert.deepEqual(inlay.shades, [[18], [], [3], [], [19]]);
    assert.deepEqual(inlay.endOfLine, []);
    const eol = planDecorations(annotations, "endOfLine", 30);
    assert.deepEqual(eol.shades, inlay.shades);
    assert.deepEqual(eol.endOfLine.map((e) => e.line), [19, 18, 3]);
    assert.equal(eol.endOfLine[0].text, "19 text");
});

test("off draws nothing; stale lines keep their text but lose shade; lines past the end are skipped", () => {
    const annotations = [at(2, 0.9, { stale: true, text: "stale · changed since the capture" }), at(40, 0.5), at(5, 0.3)];
    assert.deepEqual(planDecorations(annotations, "off", 30), { shades: [[], [], [], [], []], endOfLine: [] });
    const plan = planDecorations(annotations, "endOfLine", 30);
    assert.deepEqual(plan.shades, [[], [5], [], [], []]);
    assert.deepEqual(plan.endOfLine, [
        { line: 2, text: "stale · changed since the capture", longText: "stale · changed since the capture", stale: true, churn: false },
        { line: 5, text: "5 text", longText: "5 text", stale: false, churn: false },
    ]);
});

test("a line with nothing live at the moment is marked churn: drawn quieter, never shaded", () => {
    const plan = planDecorations([at(7, 0, { liveBytes: 0, text: "none live · 1.46 GiB allocated" }), at(9, 0.4)], "endOfLine", 30);
    assert.deepEqual(plan.endOfLine.map((e) => [e.line, e.churn]), [[7, true], [9, false]]);
    assert.ok(!plan.shades.flat().includes(7));
});

test("malformed answers draw nothing instead of throwing", () => {
    const empty = { shades: [[], [], [], [], []], endOfLine: [] };
    assert.deepEqual(planDecorations(undefined, "endOfLine", 10), empty);
    assert.deepEqual(planDecorations({ annotations: [] }, "endOfLine", 10), empty);
    assert.deepEqual(planDecorations([{ line: -1, text: "x", share: 1 }, { line: 1.5, text: "x", share: 1 }, null], "endOfLine", 10), empty);
});
