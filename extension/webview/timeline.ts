// Geometry of the report's timeline, drawn at the container's pixel width (text stays 11–12 px): reserved as
// an area behind allocated, the driver's NVML readings as a dot each, held one sampling interval, the limit
// and the device total as horizontal lines, the OOM, the run's steps as bands, and what a hover at a given
// instant reads. Pure (no DOM), so it is unit-tested; report.ts draws it and handles the mouse.

export type Point = [number, number]; // [seconds from the first point, bytes]

export interface StepBand {
    number: number;
    kind?: string;
    start: number;
    end: number;
    complete?: boolean;
}

export interface Mark {
    at: number;
    label: string;
}

export interface Series {
    allocated?: Point[];
    reserved?: Point[];
    driverUsed?: Point[];
    oomAt?: number | null;
    peakAt?: number | null;
    limit?: number | null;
    limitIsCap?: boolean;
    deviceTotal?: number | null;
    limitLabel?: string | null; // the server's words for the two lines: "cap 3.00 GiB", "device 139.80 GiB"
    deviceTotalLabel?: string | null;
    tops?: ([string, number] | null)[] | null; // per allocated point: the user line holding most then
    steps?: StepBand[] | null;
    marks?: Mark[] | null;
    timeUnit?: "s" | "entry";
    sampleInterval?: number | null; // NVML's sampling period (s): a reading stands for this long, no longer
    pointIndex?: number[] | null; // per allocated point: its position in the allocator's trace
}

/** The trace position of the point in force at `t` (what "live at this instant" replays to), or null. */
export function traceIndexAt(series: Series, t: number): number | null {
    const points = validPoints(series.allocated);
    const indices = Array.isArray(series.pointIndex) ? series.pointIndex : [];
    if (indices.length !== points.length) return null;
    const i = lastAtOrBefore(points, t);
    const at = indices[Math.max(i, 0)];
    return Number.isInteger(at) && at >= 0 ? at : null;
}

export interface Tick {
    at: number; // pixel position along its axis
    label: string;
}

export interface HorizontalLine {
    y: number;
    label: string;
}

export interface TimelineGeometry {
    width: number;
    height: number;
    plot: { left: number; top: number; right: number; bottom: number };
    window: [number, number]; // the time span shown
    reservedArea: string; // SVG path: reserved, filled down to zero
    reservedLine: string; // polyline points
    allocatedArea: string;
    allocatedLine: string;
    driverPath: string; // SVG path: each reading held until the next
    samples: { x: number; y: number }[]; // NVML's readings inside the window, as dots
    yTicks: Tick[];
    xTicks: Tick[];
    yTitle: string;
    xTitle: string;
    limit: HorizontalLine | null;
    deviceTotal: HorizontalLine | null;
    offScale: string[]; // lines above the axis, named instead of flattening the plot
    oomX: number | null;
    peakX: number | null;
    bands: { x0: number; x1: number; label: string; odd: boolean; number: string | null }[];
    marks: { x: number; label: string }[];
}

export const MARGIN = { left: 52, right: 14, top: 22, bottom: 42 };
export const MIN_HEIGHT = 220;
const GIB = 1024 ** 3;
const MIB = 1024 ** 2;
// A horizontal line (limit, device total) this far above the data would squeeze the plot: named instead.
const OFF_SCALE_FACTOR = 1.6;
// A reading is held this many sampling intervals (one, and half of one for the sampler's jitter).
const HOLD_INTERVALS = 1.5;
const DEFAULT_INTERVAL_S = 0.5;
// Bands narrower than this many pixels are merged (several steps a band), so they never grey the plot.
const MIN_BAND_PX = 6;
const NUMBERED_BAND_PX = 22;
// Steps that fill less than this share of the run open zoomed on them (setup before them stays one drag away).
const STEPS_SHARE_TO_ZOOM = 0.5;

/** How long an NVML reading stands for, in the series' time unit. */
export function holdSpan(series: Series): number {
    if (series.timeUnit === "entry") return Infinity; // no clock: readings cannot be placed in time anyway
    const interval = finite(series.sampleInterval) && series.sampleInterval > 0 ? series.sampleInterval : DEFAULT_INTERVAL_S;
    return interval * HOLD_INTERVALS;
}

/** The window a capture opens on: the steps when setup before them takes most of the run, else all of it. */
export function defaultWindow(series: Series | null | undefined): [number, number] | null {
    const full = fullWindow(series);
    const steps = (series?.steps ?? []).filter((s) => finite(s.start) && finite(s.end));
    if (!full || !steps.length) return full;
    const start = Math.min(...steps.map((s) => s.start));
    const span = full[1] - full[0];
    if (span <= 0 || (full[1] - start) / span >= STEPS_SHARE_TO_ZOOM) return full;
    const margin = (full[1] - start) * 0.04;
    return [Math.max(full[0], start - margin), full[1]];
}

/** 1, 2 or 5 times a power of ten, so axis labels are round. */
export function niceStep(span: number, targetTicks: number): number {
    if (!(span > 0)) return 1;
    const raw = span / targetTicks;
    const power = 10 ** Math.floor(Math.log10(raw));
    const multiple = [1, 2, 5, 10].find((m) => m * power >= raw) ?? 10;
    return multiple * power;
}

/** The plot's height for a container width: wide enough to read, never a thumbnail in a narrow column. */
export function plotHeight(width: number): number {
    return Math.round(Math.max(MIN_HEIGHT, Math.min(340, width * 0.42)));
}

function validPoints(points: unknown): Point[] {
    if (!Array.isArray(points)) return [];
    return points.filter(
        (p): p is Point => Array.isArray(p) && p.length === 2 && Number.isFinite(p[0]) && Number.isFinite(p[1]),
    );
}

const finite = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value);

/**
 * The driver's readings that matter for the window: those inside it and the one before it (held into the
 * window). NVML reads every half second or so: a reading stands until the next one, it is never interpolated.
 */
function heldReadings(points: Point[], tMin: number, tMax: number): Point[] {
    const sorted = [...points].sort((a, b) => a[0] - b[0]);
    const before = sorted.filter((p) => p[0] < tMin).at(-1);
    const inside = sorted.filter((p) => p[0] >= tMin && p[0] <= tMax);
    return before ? [before, ...inside] : inside;
}

/** The full time span of a series: the allocator's trace and the OOM (NVML also read start-up and exit). */
export function fullWindow(series: Series | null | undefined): [number, number] | null {
    if (!series) return null;
    const trace = [...validPoints(series.allocated), ...validPoints(series.reserved)];
    const marks = [series.oomAt, series.peakAt].filter(finite);
    const times = trace.length ? [...trace.map((p) => p[0]), ...marks] : validPoints(series.driverUsed).map((p) => p[0]);
    if (!times.length) return null;
    const tMin = Math.min(...times);
    return [tMin, Math.max(...times, tMin + 1e-3)];
}

function inWindow(points: Point[], [tMin, tMax]: [number, number]): Point[] {
    // One point on either side keeps the line running to the window's edges (it is clipped when drawn).
    const first = points.findIndex((p) => p[0] >= tMin);
    const last = points.length - 1 - [...points].reverse().findIndex((p) => p[0] <= tMax);
    if (first === -1 || last < 0 || last === points.length) return points.length ? [points.at(-1)!] : [];
    return points.slice(Math.max(0, first - 1), Math.min(points.length, last + 2));
}

function axisUnit(bytes: number): { unit: number; name: string } {
    return bytes >= GIB ? { unit: GIB, name: "GiB" } : { unit: MIB, name: "MiB" };
}

/**
 * Layout for `series` in a width × height SVG over `window` (default: the whole run); null when there is
 * nothing to draw.
 */
export function timelineGeometry(
    series: Series | null | undefined,
    width: number,
    height: number,
    window?: [number, number] | null,
): TimelineGeometry | null {
    const full = fullWindow(series);
    if (!series || !full) return null;
    const [tMin, tMax] = window && window[1] > window[0] ? window : full;
    const allocated = inWindow(validPoints(series.allocated), [tMin, tMax]);
    const reserved = inWindow(validPoints(series.reserved), [tMin, tMax]);
    const driver = heldReadings(validPoints(series.driverUsed), tMin, tMax);
    const dataMax = Math.max(...[...allocated, ...reserved, ...driver].map((p) => p[1]), 1);
    // The limit and the device total count for the scale only when they are near the data.
    const near = (value: number | null | undefined): value is number => finite(value) && value > 0 && value <= dataMax * OFF_SCALE_FACTOR;
    const limit = series.limit;
    const total = series.deviceTotal;
    const drawnLimit = near(limit) ? limit : null;
    const drawnTotal = near(total) && total !== limit ? total : null;
    const top = Math.max(dataMax, drawnLimit ?? 0, drawnTotal ?? 0);
    const { unit, name } = axisUnit(top);
    // A little headroom, and of the round steps the one whose last tick is closest above the data.
    const { step: yStep, top: yTop } = [3, 4, 5, 6]
        .map((ticks) => {
            const step = niceStep((top * 1.04) / unit, ticks) * unit;
            return { step, top: Math.ceil((top * 1.04) / step) * step };
        })
        .reduce((best, candidate) => (candidate.top < best.top - 1e-9 ? candidate : best));
    const plot = { left: MARGIN.left, top: MARGIN.top, right: width - MARGIN.right, bottom: height - MARGIN.bottom };
    const round = (v: number) => Math.round(v * 10) / 10;
    const x = (t: number) => round(plot.left + ((t - tMin) / (tMax - tMin)) * (plot.right - plot.left));
    const y = (b: number) => round(plot.bottom - (b / yTop) * (plot.bottom - plot.top));
    const polyline = (points: Point[]) => points.map(([t, b]) => `${x(t)},${y(b)}`).join(" ");
    const area = (points: Point[]) =>
        points.length ? `M${x(points[0][0])},${y(0)} ${points.map(([t, b]) => `L${x(t)},${y(b)}`).join(" ")} L${x(points.at(-1)![0])},${y(0)} Z` : "";
    // Each reading holds one sampling interval: across to the next reading when it comes in time (then up or
    // down to it), else the line ends there, so an old reading never stands for the memory of later.
    const hold = holdSpan(series);
    let driverPath = "";
    driver.forEach(([t, b], i) => {
        const next = driver[i + 1]?.[0];
        const joined = i > 0 && t - driver[i - 1][0] <= hold;
        const end = next !== undefined && next - t <= hold ? next : Math.min(t + hold, Math.max(t, tMax));
        driverPath += `${joined ? "L" : "M"}${x(t)},${y(b)} L${x(end)},${y(b)} `;
    });
    const samples = driver.filter(([t]) => t >= tMin && t <= tMax).map(([t, b]) => ({ x: x(t), y: y(b) }));
    const yTicks: Tick[] = [];
    for (let b = 0; b <= yTop + yStep / 2; b += yStep) yTicks.push({ at: y(b), label: `${+(b / unit).toFixed(2)}` });
    const seconds = series.timeUnit !== "entry";
    const tStep = niceStep(tMax - tMin, Math.max(2, Math.floor((plot.right - plot.left) / 90)));
    const xTicks: Tick[] = [];
    for (let t = Math.ceil(tMin / tStep) * tStep; t <= tMax + tStep / 1e6; t += tStep) {
        xTicks.push({ at: x(t), label: `${+t.toFixed(4)}` });
    }
    const at = (t: number | null | undefined) => (finite(t) && t >= tMin && t <= tMax ? x(t) : null);
    const offScale: string[] = [];
    // The two lines' words come from the server (the figures the CLI and the accounting print).
    const limitLabel = series.limitLabel ?? "", totalLabel = series.deviceTotalLabel ?? "";
    if (finite(limit) && limit > 0 && drawnLimit === null && limitLabel) offScale.push(limitLabel);
    if (finite(total) && total > 0 && drawnTotal === null && total !== limit && totalLabel) offScale.push(totalLabel);
    const bands = stepBands(series.steps ?? [], tMin, tMax, x);
    const marks = (series.marks ?? []).filter((m) => finite(m.at) && typeof m.label === "string" && m.at >= tMin && m.at <= tMax)
        .map((m) => ({ x: x(m.at), label: m.label }));
    return {
        width, height, plot, window: [tMin, tMax],
        reservedArea: area(reserved), reservedLine: polyline(reserved),
        allocatedArea: area(allocated), allocatedLine: polyline(allocated),
        driverPath: driverPath.trim(), samples, yTicks, xTicks,
        yTitle: `memory (${name})`,
        xTitle: seconds ? "time since the first recorded allocation (s)" : "position in the allocator's trace",
        limit: drawnLimit === null ? null : { y: y(drawnLimit), label: limitLabel },
        deviceTotal: drawnTotal === null ? null : { y: y(drawnTotal), label: totalLabel },
        offScale,
        oomX: at(series.oomAt), peakX: at(series.peakAt), bands, marks,
    };
}

/** The steps inside the window as bands; where single steps would be thinner than a few pixels, runs of
 * consecutive steps share a band ("steps 5–12"), and a band wide enough carries its number. */
function stepBands(steps: StepBand[], tMin: number, tMax: number, x: (t: number) => number): TimelineGeometry["bands"] {
    const shown = steps.filter((s) => finite(s.start) && finite(s.end) && s.end > tMin && s.start < tMax);
    if (!shown.length) return [];
    const span = x(Math.min(shown.at(-1)!.end, tMax)) - x(Math.max(shown[0].start, tMin));
    const per = Math.max(1, Math.ceil((shown.length * MIN_BAND_PX) / Math.max(span, 1)));
    const bands: TimelineGeometry["bands"] = [];
    for (let i = 0; i < shown.length; i += per) {
        const group = shown.slice(i, i + per);
        const first = group[0], last = group.at(-1)!;
        const kind = first.kind && first.kind !== "step" ? `${first.kind} ` : "";
        const label = group.length === 1
            ? `${kind}step ${first.number}${first.complete === false ? " (unfinished)" : ""}`
            : `${kind}steps ${first.number}–${last.number}`;
        const x0 = x(Math.max(first.start, tMin)), x1 = x(Math.min(last.end, tMax));
        const number = group.length === 1 ? String(first.number) : `${first.number}–${last.number}`;
        bands.push({ x0, x1, label, odd: (i / per) % 2 === 1, number: x1 - x0 >= NUMBERED_BAND_PX + 6 * number.length ? number : null });
    }
    return bands;
}

/** The time at a pixel of the plot (for the hover and the brush). */
export function timeAt(geometry: TimelineGeometry, px: number): number {
    const { plot, window: [tMin, tMax] } = geometry;
    const fraction = Math.min(1, Math.max(0, (px - plot.left) / (plot.right - plot.left)));
    return tMin + fraction * (tMax - tMin);
}

export interface Reading {
    t: number;
    allocated: number | null;
    reserved: number | null;
    driverUsed: number | null; // the reading in force then (taken at most one sampling interval before)
    top: [string, number] | null; // the user line holding most then
}

/** What the plot says at instant `t`: each series' value then (the last point at or before it). */
export function readingAt(series: Series, t: number): Reading {
    const allocated = validPoints(series.allocated);
    const index = lastAtOrBefore(allocated, t);
    const value = (points: Point[]) => {
        const i = lastAtOrBefore(points, t);
        return i < 0 ? null : points[i][1];
    };
    const tops = Array.isArray(series.tops) ? series.tops : [];
    const top = index >= 0 && Array.isArray(tops[index]) ? (tops[index] as [string, number]) : null;
    return {
        t,
        allocated: index < 0 ? null : allocated[index][1],
        reserved: value(validPoints(series.reserved)),
        driverUsed: heldAt([...validPoints(series.driverUsed)].sort((a, b) => a[0] - b[0]), t, holdSpan(series)),
        top,
    };
}

/** The reading in force at `t`: the last one taken at or before it, if it is at most `hold` old. */
function heldAt(points: Point[], t: number, hold: number): number | null {
    const i = lastAtOrBefore(points, t);
    return i < 0 || t - points[i][0] > hold ? null : points[i][1];
}

function lastAtOrBefore(points: Point[], t: number): number {
    let found = -1;
    for (let i = 0; i < points.length && points[i][0] <= t; i++) found = i;
    return found;
}

/** A dragged span of the plot as a window to zoom to, or null for a click (too narrow to mean a span). */
export function brushWindow(geometry: TimelineGeometry, fromPx: number, toPx: number): [number, number] | null {
    if (Math.abs(toPx - fromPx) < 6) return null;
    const a = timeAt(geometry, Math.min(fromPx, toPx));
    const b = timeAt(geometry, Math.max(fromPx, toPx));
    return b > a ? [a, b] : null;
}
