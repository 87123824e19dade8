// Geometry of the report's timeline: where the allocated, reserved and driver-used lines, the axis ticks and
// the OOM mark go in an SVG of a given size. Pure (no DOM), so it is unit-tested; report.ts draws it.

export type Point = [number, number]; // [seconds from the first point, bytes]

export interface Series {
    allocated?: Point[];
    reserved?: Point[];
    driverUsed?: Point[];
    oomAt?: number | null;
    peakAt?: number | null;
}

export interface Tick {
    at: number; // pixel position along its axis
    label: string;
}

export interface TimelineGeometry {
    width: number;
    height: number;
    plot: { left: number; top: number; right: number; bottom: number };
    lines: { name: "allocated" | "reserved" | "driverUsed"; points: string }[];
    samples: { x: number; y: number }[]; // NVML's readings inside the window, as dots: the line only joins them
    yTicks: Tick[];
    xTicks: Tick[];
    oomX: number | null;
    peakX: number | null;
}

export const MARGIN = { left: 72, right: 16, top: 12, bottom: 28 };
const SERIES_NAMES = ["reserved", "driverUsed", "allocated"] as const; // drawn back to front
const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

/** 1, 2 or 5 times a power of ten (of GiB or MiB steps), so axis labels are round. */
export function niceStep(span: number, targetTicks: number): number {
    if (!(span > 0)) return 1;
    const raw = span / targetTicks;
    const power = 10 ** Math.floor(Math.log10(raw));
    const multiple = [1, 2, 5, 10].find((m) => m * power >= raw) ?? 10;
    return multiple * power;
}

function byteLabel(bytes: number): string {
    if (bytes === 0) return "0";
    return bytes >= GIB ? `${+(bytes / GIB).toFixed(2)} GiB` : `${+(bytes / MIB).toFixed(1)} MiB`;
}

function validPoints(points: unknown): Point[] {
    if (!Array.isArray(points)) return [];
    return points.filter(
        (p): p is Point => Array.isArray(p) && p.length === 2 && Number.isFinite(p[0]) && Number.isFinite(p[1]),
    );
}

/**
 * The driver's samples that matter for the window: those inside it and the nearest one on either side, so
 * the line crosses the whole window even when NVML sampled less often than the trace lasted (it is clipped
 * to the plot when drawn).
 */
function driverWindow(points: Point[], tMin: number, tMax: number): Point[] {
    const sorted = [...points].sort((a, b) => a[0] - b[0]);
    const first = sorted.findIndex((p) => p[0] >= tMin);
    const lastInside = sorted.filter((p) => p[0] <= tMax).length - 1;
    const from = first === -1 ? sorted.length - 1 : Math.max(0, first - 1);
    const to = lastInside === -1 ? 0 : Math.min(sorted.length - 1, lastInside + 1);
    return from <= to ? sorted.slice(from, to + 1) : [];
}

/**
 * Layout for `series` in a width × height SVG; null when there is nothing to draw. The time axis spans the
 * allocator's trace (and the OOM): NVML also sampled the process's start-up and exit, which would squeeze a
 * short trace into a sliver of the plot.
 */
export function timelineGeometry(series: Series | null | undefined, width: number, height: number): TimelineGeometry | null {
    if (!series) return null;
    const trace = [...validPoints(series.allocated), ...validPoints(series.reserved)];
    const marks = [series.oomAt, series.peakAt].filter((t): t is number => typeof t === "number" && Number.isFinite(t));
    const driver = validPoints(series.driverUsed);
    const windowTimes = trace.length ? [...trace.map((p) => p[0]), ...marks] : driver.map((p) => p[0]);
    if (windowTimes.length === 0) return null;
    const tMin = Math.min(...windowTimes);
    const tMax = Math.max(...windowTimes, tMin + 1e-3);
    const all = SERIES_NAMES.map((name) => ({
        name,
        points: name === "driverUsed" ? driverWindow(driver, tMin, tMax) : validPoints(series[name]),
    }));
    const every = all.flatMap((s) => s.points);
    const bytesMax = Math.max(...every.map((p) => p[1]), 1);
    // Axis in GiB steps when the peak is over 1 GiB, else in MiB steps: ticks land on round figures.
    const unit = bytesMax >= GIB ? GIB : MIB;
    const yStep = niceStep(bytesMax / unit, 4) * unit;
    const yTop = Math.ceil(bytesMax / yStep) * yStep;
    const plot = { left: MARGIN.left, top: MARGIN.top, right: width - MARGIN.right, bottom: height - MARGIN.bottom };
    const x = (t: number) => plot.left + ((t - tMin) / (tMax - tMin)) * (plot.right - plot.left);
    const y = (b: number) => plot.bottom - (b / yTop) * (plot.bottom - plot.top);
    const round = (v: number) => Math.round(v * 10) / 10;
    const lines = all
        .filter((s) => s.points.length > 0)
        .map((s) => ({ name: s.name, points: s.points.map(([t, b]) => `${round(x(t))},${round(y(b))}`).join(" ") }));
    const samples = driverWindow(driver, tMin, tMax)
        .filter(([t]) => t >= tMin && t <= tMax)
        .map(([t, b]) => ({ x: round(x(t)), y: round(y(b)) }));
    const yTicks: Tick[] = [];
    for (let b = 0; b <= yTop + yStep / 2; b += yStep) yTicks.push({ at: round(y(b)), label: byteLabel(b) });
    const tStep = niceStep(tMax - tMin, 6);
    const xTicks: Tick[] = [];
    for (let t = Math.ceil(tMin / tStep) * tStep; t <= tMax + tStep / 1e6; t += tStep) {
        xTicks.push({ at: round(x(t)), label: `${+t.toFixed(4)} s` });
    }
    const at = (t: number | null | undefined) => (typeof t === "number" && Number.isFinite(t) ? round(x(t)) : null);
    return { width, height, plot, lines, samples, yTicks, xTicks, oomX: at(series.oomAt), peakX: at(series.peakAt) };
}
