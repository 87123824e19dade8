import assert from "node:assert/strict";
import { test } from "node:test";
import { choosePlacement, columnWidths, editorAreaWidth, placementOf, tooNarrowBeside } from "../src/core/placement";

test("a wide window gets the report beside the code, a narrow one below it", () => {
    assert.equal(choosePlacement(undefined, { orientation: 0, groups: [{ size: 1400 }] }), "beside");
    assert.equal(choosePlacement(undefined, { orientation: 0, groups: [{ size: 820 }] }), "below");
    assert.equal(choosePlacement(undefined, { orientation: 0, groups: [{ size: 1140 }] }), "beside");
    assert.equal(choosePlacement(undefined, { orientation: 0, groups: [{ size: 450 }, { size: 450 }] }), "below");
    assert.equal(choosePlacement(undefined, undefined), "beside"); // width unknown: the usual place
});

test("a lone group's size is its height: the width is measured by the view once open", () => {
    assert.equal(editorAreaWidth({ orientation: 1, groups: [{ size: 881 }] }), undefined);
    assert.equal(choosePlacement(undefined, { orientation: 1, groups: [{ size: 881 }] }), "beside");
    assert.equal(tooNarrowBeside(430), true);
    assert.equal(tooNarrowBeside(570), false);
    assert.equal(tooNarrowBeside(undefined), false);
});

test("where the user put it wins over the width", () => {
    assert.equal(choosePlacement("beside", { orientation: 0, groups: [{ size: 700 }] }), "beside");
    assert.equal(choosePlacement("active", { orientation: 0, groups: [{ size: 1700 }] }), "active");
    assert.equal(choosePlacement("sideways", { orientation: 0, groups: [{ size: 700 }] }), "below"); // junk ignored
});

test("the editor area's width is known only from side-by-side sizes", () => {
    assert.equal(editorAreaWidth({ orientation: 1, groups: [{ size: 400 }, { size: 300 }] }), undefined);
    assert.equal(editorAreaWidth({ orientation: 0, groups: [{}] }), undefined);
    assert.equal(editorAreaWidth({ orientation: 0, groups: [{ size: 600 }, { size: 650 }] }), 1250);
});

test("a moved report is remembered by where it now is", () => {
    assert.equal(placementOf(2, [1], { orientation: 1, groups: [{ size: 500 }, { size: 300 }] }), "below");
    assert.equal(placementOf(2, [1], { orientation: 0, groups: [{ size: 700 }, { size: 700 }] }), "beside");
    assert.equal(placementOf(1, [1], { orientation: 0, groups: [{ size: 1400 }] }), "active");
    assert.equal(placementOf(undefined, [1], undefined), undefined);
});

test("each group's width by view column: side by side sizes are widths, a stacked group has its column's", () => {
    assert.deepEqual(columnWidths({ orientation: 0, groups: [{ size: 620 }, { size: 640 }] }), [620, 640]);
    assert.deepEqual(columnWidths({ orientation: 1, groups: [{ size: 500 }, { size: 380 }] }), [undefined, undefined]);
    assert.deepEqual(columnWidths({ orientation: 1, groups: [{ size: 881 }] }), [undefined]); // a lone group: its height
    // Code and the report stacked on the left, a second file on the right.
    assert.deepEqual(columnWidths({ orientation: 0, groups: [{ size: 700, groups: [{ size: 500 }, { size: 380 }] }, { size: 560 }] }), [700, 700, 560]);
    // Two files side by side above the report.
    assert.deepEqual(columnWidths({ orientation: 1, groups: [{ size: 500, groups: [{ size: 600 }, { size: 660 }] }, { size: 380 }] }), [600, 660, undefined]);
    assert.deepEqual(columnWidths(undefined), []);
    // Stacked at the top, each group is as wide as the editor area, once that is known.
    assert.deepEqual(columnWidths({ orientation: 1, groups: [{ size: 500 }, { size: 380 }] }, 617), [617, 617]);
    assert.deepEqual(columnWidths({ orientation: 1, groups: [{ size: 881 }] }, 1242), [1242]);
    assert.deepEqual(columnWidths({ orientation: 0, groups: [{ size: 620 }, { size: 640 }] }, 2000), [620, 640]);
});

test("beside the report the code keeps 500 px, or the report goes below", () => {
    assert.equal(tooNarrowBeside(309), true);
    assert.equal(tooNarrowBeside(499), true);
    assert.equal(tooNarrowBeside(620), false);
});
