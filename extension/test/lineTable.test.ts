import assert from "node:assert/strict";
import { test } from "node:test";
import { LineColumn, LineRow, nextSort, sortRows, sparkline } from "../webview/lineTable";

const COLUMNS: LineColumn[] = [
    { key: "live", sortBy: "liveBytes", label: "live at the OOM" },
    { key: "growth", sortBy: "growthPerStep", label: "per step" },
];
const ROWS: LineRow[] = [
    { label: "a.py:1", liveBytes: 10, growthPerStep: null },
    { label: "a.py:2", liveBytes: 30, growthPerStep: 5 },
    { label: "a.py:3", liveBytes: 20, growthPerStep: 50 },
];

test("rows sort by a column's number, largest first; a second click flips; rows without one go last", () => {
    assert.deepEqual(sortRows(ROWS, COLUMNS, { by: "live", descending: true }).map((r) => r.label), ["a.py:2", "a.py:3", "a.py:1"]);
    assert.deepEqual(sortRows(ROWS, COLUMNS, { by: "growth", descending: true }).map((r) => r.label), ["a.py:3", "a.py:2", "a.py:1"]);
    assert.deepEqual(sortRows(ROWS, COLUMNS, { by: "growth", descending: false }).map((r) => r.label), ["a.py:2", "a.py:3", "a.py:1"]);
    assert.deepEqual(nextSort({ by: "live", descending: true }, "live"), { by: "live", descending: false });
    assert.deepEqual(nextSort({ by: "live", descending: false }, "growth"), { by: "growth", descending: true });
    assert.equal(sortRows(ROWS, COLUMNS, { by: "nothing", descending: true }), ROWS);
});

test("the sparkline spans the box, the largest value at the top", () => {
    const points = sparkline([0, 50, 100], 64, 16).split(" ").map((p) => p.split(",").map(Number));
    assert.deepEqual(points.map(([x]) => x), [0, 32, 64]);
    assert.equal(points[2][1], 1); // the largest, one pixel under the top edge
    assert.equal(points[0][1], 15); // zero, on the bottom line
    assert.equal(sparkline([5], 64, 16), ""); // one step: nothing to draw
    assert.equal(sparkline(undefined, 64, 16), "");
});
