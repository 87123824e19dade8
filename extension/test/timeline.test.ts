import assert from "node:assert/strict";
import { test } from "node:test";
import { formatBytes, formatPercent } from "../webview/format";
import { MARGIN, niceStep, timelineGeometry } from "../webview/timeline";

const GIB = 1024 ** 3;

test("round steps", () => {
    assert.equal(niceStep(10, 5), 2);
    assert.equal(niceStep(3, 4), 1);
    assert.equal(niceStep(0.7, 4), 0.2);
    assert.equal(niceStep(0, 4), 1);
});

test("points are scaled into the plot; the OOM and peak marks sit at their time", () => {
    const g = timelineGeometry(
        { allocated: [[0, 0], [5, 2 * GIB], [10, 3 * GIB]], reserved: [[0, GIB], [10, 3.5 * GIB]], driverUsed: [], oomAt: 10, peakAt: 5 },
        400, 200,
    )!;
    const { plot } = g;
    assert.deepEqual(plot, { left: MARGIN.left, top: MARGIN.top, right: 400 - MARGIN.right, bottom: 200 - MARGIN.bottom });
    assert.deepEqual(g.lines.map((l) => l.name), ["reserved", "allocated"]); // empty driverUsed not drawn; allocated on top
    const allocated = g.lines[1].points.split(" ").map((p) => p.split(",").map(Number));
    assert.deepEqual(allocated[0], [plot.left, plot.bottom]);
    assert.equal(allocated[2][0], plot.right);
    // y axis tops at 4 GiB (1 GiB steps over a 3.5 GiB peak): 3 GiB sits a quarter below the top.
    assert.equal(g.yTicks.at(-1)!.label, "4 GiB");
    assert.ok(Math.abs(allocated[2][1] - (plot.top + (plot.bottom - plot.top) / 4)) < 0.2);
    assert.equal(g.oomX, plot.right);
    assert.ok(Math.abs(g.peakX! - (plot.left + plot.right) / 2) < 0.2);
    assert.equal(g.xTicks[0].label, "0 s");
});

test("the time axis spans the trace; the driver line keeps only its samples around it", () => {
    const g = timelineGeometry(
        {
            allocated: [[0, 0], [0.05, GIB]],
            reserved: [[0, GIB], [0.05, GIB]],
            driverUsed: [[-1.5, 600e6], [-1, 600e6], [0.02, 2 * GIB], [3, 2 * GIB], [6, 600e6]],
            oomAt: 0.05,
        },
        400, 200,
    )!;
    const driver = g.lines.find((l) => l.name === "driverUsed")!.points.split(" ").map((p) => p.split(",").map(Number));
    assert.equal(driver.length, 3); // -1, 0.02, 3: the neighbours of the window and the sample inside it
    assert.ok(driver[0][0] < g.plot.left && driver[2][0] > g.plot.right);
    assert.equal(g.samples.length, 1); // only the reading inside the window gets a dot
    assert.deepEqual([g.samples[0].x, g.samples[0].y], driver[1]);
    assert.equal(g.oomX, g.plot.right);
    assert.equal(g.xTicks[0].label, "0 s");
    assert.equal(g.xTicks.at(-1)!.label, "0.05 s");
});

test("small runs get MiB ticks; nothing to draw gives null", () => {
    const g = timelineGeometry({ allocated: [[0, 0], [1, 300 * 1024 ** 2]], oomAt: null }, 400, 200)!;
    assert.ok(g.yTicks.every((t) => /MiB|^0$/.test(t.label)), JSON.stringify(g.yTicks));
    assert.equal(g.oomX, null);
    assert.equal(timelineGeometry(null, 400, 200), null);
    assert.equal(timelineGeometry({ allocated: [[0, "x"] as any] }, 400, 200), null);
});

test("byte and share labels", () => {
    assert.equal(formatBytes(512), "512 B");
    assert.equal(formatBytes(1.5 * GIB), "1.50 GiB");
    assert.equal(formatBytes(384 * 1024 ** 2), "384.00 MiB");
    assert.equal(formatBytes(null), "—");
    assert.equal(formatPercent(0.329), "33%");
});
