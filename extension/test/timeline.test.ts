import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { formatBytes, formatPercent } from "../webview/format";
import { brushWindow, defaultWindow, traceIndexAt, MARGIN, MIN_HEIGHT, niceStep, plotHeight, readingAt, Series, timeAt, timelineGeometry } from "../webview/timeline";

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

test("round steps", () => {
    assert.equal(niceStep(10, 5), 2);
    assert.equal(niceStep(3, 4), 1);
    assert.equal(niceStep(0.7, 4), 0.2);
    assert.equal(niceStep(0, 4), 1);
});

test("a narrow column keeps a readable plot height", () => {
    assert.equal(plotHeight(300), MIN_HEIGHT);
    assert.ok(plotHeight(800) > MIN_HEIGHT && plotHeight(5000) <= 340);
});

const basic: Series = { allocated: [[0, 0], [5, 2 * GIB], [10, 3 * GIB]], reserved: [[0, GIB], [10, 3.5 * GIB]], driverUsed: [], oomAt: 10, peakAt: 5 };

test("points are scaled into the plot at its pixel size; the unit is in the axis title, not on each tick", () => {
    const g = timelineGeometry(basic, 400, 240)!;
    const { plot } = g;
    assert.deepEqual(plot, { left: MARGIN.left, top: MARGIN.top, right: 400 - MARGIN.right, bottom: 240 - MARGIN.bottom });
    const allocated = g.allocatedLine.split(" ").map((p) => p.split(",").map(Number));
    assert.deepEqual(allocated[0], [plot.left, plot.bottom]);
    assert.equal(allocated[2][0], plot.right);
    assert.equal(g.yTitle, "memory (GiB)");
    assert.equal(g.yTicks[0].label, "0");
    assert.equal(g.xTitle, "time since the first recorded allocation (s)");
    // The axis stops just above the 3.5 GiB peak, not a whole step beyond it.
    const top = Number(g.yTicks.at(-1)!.label);
    assert.ok(top >= 3.5 && top <= 4, JSON.stringify(g.yTicks));
    assert.equal(g.oomX, plot.right);
    assert.ok(Math.abs(g.peakX! - (plot.left + plot.right) / 2) < 0.2);
    // Reserved is an area closed at zero, drawn behind allocated.
    assert.match(g.reservedArea, /^M[\d.]+,[\d.]+ L.* Z$/);
    assert.ok(g.reservedArea.startsWith(`M${plot.left},${plot.bottom}`));
});

test("an NVML reading holds one sampling interval: a step to the next reading in time, else the line ends", () => {
    const g = timelineGeometry({
        allocated: [[0, 0], [4, GIB]], reserved: [[0, GIB], [4, GIB]], sampleInterval: 0.5,
        driverUsed: [[-0.2, 1 * GIB], [0.3, 2 * GIB], [3, 2.5 * GIB]], oomAt: 4,
    }, 500, 260)!;
    const pieces = g.driverPath.split(/(?=[ML])/).map((s) => s.trim()).filter(Boolean);
    const moves = pieces.map((s) => s.slice(1).split(",").map(Number));
    // Each reading: to its own point, then across at the same height.
    for (let i = 0; i + 1 < moves.length; i += 2) assert.equal(moves[i][1], moves[i + 1][1]);
    assert.ok(moves[0][0] < g.plot.left); // the reading just before the window holds into it
    assert.equal(pieces[2][0], "L"); // 0.5 s later: joined to the first
    assert.equal(pieces[4][0], "M"); // 2.7 s later: a new line, the 2 GiB reading was not held across the gap
    const x = (t: number) => g.plot.left + (t / 4) * (g.plot.right - g.plot.left);
    assert.ok(Math.abs(moves[3][0] - x(0.3 + 0.75)) < 0.2, "held 1.5 intervals, then ended");
    assert.ok(Math.abs(moves.at(-1)![0] - x(3.75)) < 0.2, "the last reading holds one interval, not to the end");
    assert.equal(g.samples.length, 2); // dots only for the readings inside the window
});

test("the readout gives no driver figure when the last reading is older than one interval", () => {
    const series: Series = { allocated: [[0, 0], [9.999, GIB], [10, GIB]], sampleInterval: 0.5,
        driverUsed: [[1, 1.68 * GIB], [10, 4.62 * GIB]], oomAt: 10 };
    assert.equal(readingAt(series, 1.2).driverUsed, 1.68 * GIB);
    assert.equal(readingAt(series, 9.999).driverUsed, null); // not 1.68 GiB, read 9 s before
    assert.equal(readingAt(series, 10).driverUsed, 4.62 * GIB); // the reading taken at the OOM
});

test("a run whose steps fill its last few percent opens on the steps; most-steps runs open whole", () => {
    const late: Series = { ...basic, steps: [{ number: 1, start: 9.3, end: 9.6 }, { number: 2, start: 9.6, end: 10 }] };
    const [from, to] = defaultWindow(late)!;
    assert.ok(from > 9 && from < 9.3 && to === 10, `${from}–${to}`);
    const early: Series = { ...basic, steps: [{ number: 1, start: 1, end: 5 }, { number: 2, start: 5, end: 10 }] };
    assert.deepEqual(defaultWindow(early), [0, 10]);
    assert.deepEqual(defaultWindow(basic), [0, 10]);
});

test("hundreds of steps are merged into bands a few pixels wide at least; wide bands carry their number", () => {
    const steps = Array.from({ length: 255 }, (_, i) => ({ number: i + 1, start: i * 10 / 255, end: (i + 1) * 10 / 255 }));
    const g = timelineGeometry({ ...basic, steps }, 400, 240)!;
    assert.ok(g.bands.length < 255 && g.bands.length >= 20, String(g.bands.length));
    for (const band of g.bands) assert.ok(band.x1 - band.x0 >= 5, JSON.stringify(band));
    assert.match(g.bands[0].label, /^steps 1–\d+$/);
    const few = timelineGeometry({ ...basic, steps: steps.slice(0, 3).map((s, i) => ({ ...s, start: i * 3, end: (i + 1) * 3 })) }, 400, 240)!;
    assert.deepEqual(few.bands.map((b) => b.number), ["1", "2", "3"]);
});

test("the limit and the device total are lines when near the data, named when far above it", () => {
    const labels = { limitLabel: "cap 3.75 GiB", deviceTotalLabel: "device 140.00 GiB" }; // the server's words
    const capped = timelineGeometry({ ...basic, limit: 3.75 * GIB, limitIsCap: true, deviceTotal: 140 * GIB, ...labels }, 400, 240)!;
    assert.ok(capped.limit && capped.limit.y >= capped.plot.top && capped.limit.label === "cap 3.75 GiB");
    assert.equal(capped.deviceTotal, null);
    assert.deepEqual(capped.offScale, ["device 140.00 GiB"]);
    const small = timelineGeometry({ ...basic, limit: 4 * GIB, deviceTotal: 4.2 * GIB }, 400, 240)!;
    assert.ok(small.limit && small.deviceTotal && small.deviceTotal.y < small.limit.y);
});

test("steps become bands; phase marks inside the window are kept", () => {
    const g = timelineGeometry({ ...basic, steps: [{ number: 1, start: 0, end: 4, kind: "train" }, { number: 2, start: 4, end: 10, complete: false }],
        marks: [{ at: 2, label: "eval" }, { at: 99, label: "outside" }] }, 400, 240)!;
    assert.deepEqual(g.bands.map((b) => b.label), ["train step 1", "step 2 (unfinished)"]);
    assert.equal(g.bands[0].x0, g.plot.left);
    assert.deepEqual(g.marks.map((m) => m.label), ["eval"]);
});

test("the hover reads each series at that instant and the line holding most then", () => {
    const series: Series = { ...basic, driverUsed: [[1, 1.5 * GIB], [8, 2.5 * GIB]], tops: [null, ["train.py:20", 2 * GIB], ["train.py:20", 3 * GIB]] };
    const reading = readingAt(series, 6);
    assert.deepEqual(reading, { t: 6, allocated: 2 * GIB, reserved: GIB, driverUsed: null, top: ["train.py:20", 2 * GIB] });
    assert.equal(readingAt({ ...series, sampleInterval: 4 }, 6).driverUsed, 1.5 * GIB); // within 1.5 intervals
    assert.equal(readingAt(series, -1).allocated, null);
});

test("a drag zooms to its span; a click does not; zoomed, the axis covers the span", () => {
    const g = timelineGeometry(basic, 400, 240)!;
    assert.equal(brushWindow(g, 100, 103), null);
    const window = brushWindow(g, g.plot.left, (g.plot.left + g.plot.right) / 2)!;
    assert.deepEqual(window.map((t) => Math.round(t * 10) / 10), [0, 5]);
    const zoomed = timelineGeometry(basic, 400, 240, window)!;
    assert.equal(Math.round(timeAt(zoomed, zoomed.plot.right) * 10) / 10, 5);
    assert.equal(zoomed.oomX, null); // the OOM at 10 s is outside the zoomed span
});

test("small runs get a MiB axis; nothing to draw gives null", () => {
    const g = timelineGeometry({ allocated: [[0, 0], [1, 300 * MIB]], oomAt: null }, 400, 240)!;
    assert.equal(g.yTitle, "memory (MiB)");
    assert.equal(g.oomX, null);
    assert.equal(timelineGeometry(null, 400, 240), null);
    assert.equal(timelineGeometry({ allocated: [[0, "x"] as any] }, 400, 240), null);
});

test("on the real capture's series the whole run fits and the cap is drawn", () => {
    // The series the server sends for tests/fixtures/captures/retained_references (tests/lsp/test_editor_presentation.py
    // checks that this file is exactly what the server sends).
    const payloadFile = path.join(__dirname, "../../tests/fixtures/editor/retained_references.series.json");
    const series = JSON.parse(readFileSync(payloadFile, "utf8")) as Series;
    const g = timelineGeometry(series, 700, plotHeight(700))!;
    assert.ok(g.limit, "the 3 GiB cap is near the 2.96 GiB peak: drawn as a line");
    assert.ok(g.offScale.some((s) => s.startsWith("device ")), "the 140 GiB device is named above the axis");
    assert.ok(g.samples.length > 0 && g.oomX === g.plot.right);
    // The driver saw 4.22 GiB at the OOM: the axis ends at the next round figure, 5 GiB.
    assert.equal(g.yTicks.at(-1)!.label, "5", JSON.stringify(g.yTicks));
});

test("byte and share labels", () => {
    assert.equal(formatBytes(512), "512 B");
    assert.equal(formatBytes(1.5 * GIB), "1.50 GiB");
    assert.equal(formatBytes(384 * MIB), "384.00 MiB");
    assert.equal(formatBytes(null), "—");
    assert.equal(formatPercent(0.329), "33%");
});

test("a click on the plot asks for the trace position of the point in force then", () => {
    const series: Series = { allocated: [[0, 0], [5, GIB], [10, 2 * GIB]], pointIndex: [0, 1200, 9314] };
    assert.equal(traceIndexAt(series, 7), 1200);
    assert.equal(traceIndexAt(series, 10), 9314);
    assert.equal(traceIndexAt({ ...series, pointIndex: [0, 1] }, 7), null); // not one per point: no guess
});
