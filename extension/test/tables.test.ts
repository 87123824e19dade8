import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { EXPERIMENT_COLUMNS, experimentNotes, experimentRows, rankCells, RANK_COLUMNS } from "../webview/tables";

// The committed experiments, measured on an H200 (tests/fixtures/experiments/README.md).
const fixture = (name: string) =>
    JSON.parse(readFileSync(path.join(__dirname, "..", "..", "tests", "fixtures", "experiments", `${name}.json`), "utf-8"));

test("one row per variant, medians with their spread, in the column order", () => {
    const data = fixture("fragmentation");
    const rows = experimentRows(data);
    assert.equal(rows.length, data.variants.length);
    for (const row of rows) assert.equal(row.cells.length, EXPERIMENT_COLUMNS.length);
    assert.deepEqual(rows.map((r) => r.cells[0]), ["baseline", "expandable_segments:True", "max_split_size_mb:128", "garbage_collection_threshold:0.6"]);
    assert.deepEqual(data.variants.map((v: { label: string }) => v.label).slice(1, 2), ["PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"]);
    assert.deepEqual(rows.map((r) => r.cells[1]), ["3/3", "0/3", "0/3", "3/3"]);
    assert.equal(rows[0].cells[5], "50%"); // equal min and max: the median alone
    assert.match(rows[0].cells[6], /^\d+\.\d\d s \(\d+\.\d\d s–\d+\.\d\d s\)$/);
    assert.equal(rows[1].cells[5], "—"); // no OOM, no fragmentation at one
    assert.equal(rows[1].cells[7], data.variants[1].verdict);
});

test("differences are split into beyond and within the noise, as the server judged them", () => {
    const data = fixture("fragmentation");
    const [baseline, expandable, , threshold] = experimentRows(data);
    assert.deepEqual(baseline.beyondNoise, []);
    assert.deepEqual(baseline.withinNoise, []);
    assert.ok(expandable.beyondNoise.includes("OOM: prevented the OOM (OOM in 0/3 runs against 3/3)"), expandable.beyondNoise.join("|"));
    assert.ok(expandable.withinNoise.some((t) => t.startsWith("peak reserved: +4.00 MiB (+0%): within noise")));
    assert.deepEqual(threshold.beyondNoise.filter((t) => !t.startsWith("run time")), []); // changed nothing beyond noise
    const real = data.variants.flatMap((v: { differences: { real: boolean; change: number | null }[] }) =>
        v.differences.filter((d) => d.real && d.change !== null)).length;
    assert.equal(experimentRows(data).reduce((n, r) => n + r.beyondNoise.length, 0), real);
});

test("notes: the chosen intervention, or that nothing was chosen, and a search's fit", () => {
    assert.deepEqual(experimentNotes(fixture("fragmentation")).slice(-1),
        ["Chosen: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True — prevented the OOM (OOM in 0/3 runs against 3/3); peaks not compared (one side ended at the OOM)"]);
    assert.ok(experimentNotes(fixture("checkerboard")).includes("Nothing chosen: no variant beat the baseline beyond the run-to-run noise."));
    const search = experimentNotes(fixture("batch_size"));
    assert.ok(search.some((t) => t.startsWith("Largest --batch-size under 1GiB: 10240 (found; tried 1024 fits, 2048 fits")), search.join("\n"));
    assert.ok(search.some((t) => /^peak reserved ≈ 230\.80 MiB \+ 76\.00 KiB per unit \(R² 0\.998; meets the limit at 10687\)\.$/.test(t)), search.join("\n"));
    assert.deepEqual(experimentRows(fixture("batch_size")), []);
});

test("rank cells say how each rank ended and which failed first", () => {
    const failing = { rank: 1, failed: true, failing: true, ending: "oom", peakAllocated: 2450653184, peakReserved: 2459959296,
        driverUsed: 4047503360, outsidePytorch: 1593835520 };
    const follower = { rank: 0, ending: "stopped", collateral: true, peakAllocated: 1444217344, driverUsed: null };
    assert.equal(rankCells(failing).length, RANK_COLUMNS.length);
    assert.deepEqual(rankCells(failing).slice(0, 3), ["rank 1", "out of memory — failed first", "2.28 GiB"]);
    assert.deepEqual(rankCells(follower).slice(0, 2), ["rank 0", "stopped after the failing rank"]);
    assert.equal(rankCells(follower)[4], "—");
});
