// The report view's tables for a torchrun launch (one row per rank) and a controlled experiment (one row per
// variant), as plain cell text from the server's payload (docs/lsp-protocol.md, docs/experiments.md).
// No DOM here: unit-tested against the committed experiment fixtures.
import { formatBytes, formatPercent } from "./format";

export interface RankRow {
    rank: number;
    failed?: boolean;
    failing?: boolean;
    ending?: string;
    endingText?: string;
    collateral?: boolean;
    node?: number | null;
    hostname?: string | null;
    peakAllocated?: number | null;
    peakReserved?: number | null;
    driverUsed?: number | null;
    outsidePytorch?: number | null;
    shown?: boolean;
}

export const RANK_COLUMNS = ["rank", "how it ended", "peak allocated", "peak reserved", "driver-visible peak", "outside PyTorch"];

const ENDINGS: Record<string, string> = {
    oom: "out of memory",
    error: "failed (its own error)",
    collective_error: "collective failed",
    stopped: "stopped",
    completed: "completed",
};

/** One rank's cells, in RANK_COLUMNS order. */
export function rankCells(row: RankRow): string[] {
    let ending = ENDINGS[row.ending ?? ""] ?? row.ending ?? "—";
    if (row.failing) ending += " — failed first";
    else if (row.collateral) ending += " after the failing rank";
    return [`rank ${row.rank}`, ending, formatBytes(row.peakAllocated), formatBytes(row.peakReserved),
        formatBytes(row.driverUsed), formatBytes(row.outsidePytorch)];
}

interface Spread { median: number; min: number; max: number; n: number }
interface Difference { metric: string; change: number | null; real: boolean; text: string }
interface Variant {
    label: string;
    ooms: number;
    runs: unknown[];
    summary: Record<string, Spread | null>;
    fragmentation_at_oom: Spread | null;
    differences: Difference[];
    verdict: string;
}
export interface Experiment {
    script?: string;
    repeats?: number;
    memory_limit?: string | null;
    stopped?: string | null;
    variants?: Variant[];
    chosen?: { label?: string; text?: string; source?: string } | null;
    search?: Search | null;
}
interface Fit { slope_bytes_per_unit: number; intercept_bytes: number; r_squared: number | null; points: number; predicted_max: number | null }
interface Search {
    argument: string;
    limit: string;
    probes: { value: number; fits: boolean; peak_reserved: number | null }[];
    largest_fit: number | null;
    smallest_failure: number | null;
    outcome: string;
    fit: Record<string, Fit | null> | null;
}

export const EXPERIMENT_COLUMNS = ["variant", "OOM", "peak allocated", "peak reserved", "driver-visible peak",
    "fragmentation at OOM", "run time", "verdict"];
const METRICS: Record<string, string> = {
    oom: "OOM", peak_allocated: "peak allocated", peak_reserved: "peak reserved", driver_peak: "driver-visible peak",
    oom_cached: "cached at the OOM", duration_s: "run time",
};

export interface ExperimentRow {
    cells: string[]; // EXPERIMENT_COLUMNS order
    beyondNoise: string[]; // "peak reserved: −400.00 MiB (−20%): beyond noise (noise ±…)"
    withinNoise: string[];
}

function range(spread: Spread | null | undefined, format: (value: number) => string): string {
    if (!spread) return "—";
    if (spread.n === 1 || spread.min === spread.max) return format(spread.median);
    return `${format(spread.median)} (${format(spread.min)}–${format(spread.max)})`;
}

const seconds = (value: number) => `${value.toFixed(2)} s`;

/** Each variant's medians with their (min–max), its verdict, and which differences exceed the noise. */
export function experimentRows(experiment: Experiment): ExperimentRow[] {
    return (experiment.variants ?? []).map((variant) => {
        const summary = variant.summary ?? {};
        const measured = (variant.differences ?? []).filter((d) => d.change !== null);
        const describe = (d: Difference) => `${METRICS[d.metric] ?? d.metric}: ${d.text}`;
        return {
            cells: [
                shortLabel(variant.label),
                `${variant.ooms}/${variant.runs.length}`,
                range(summary.peak_allocated, formatBytes),
                range(summary.peak_reserved, formatBytes),
                range(summary.driver_peak, formatBytes),
                range(variant.fragmentation_at_oom, formatPercent),
                range(summary.duration_s, seconds),
                variant.verdict || (variant.differences?.length ? "" : "the baseline"),
            ],
            beyondNoise: measured.filter((d) => d.real).map(describe),
            withinNoise: measured.filter((d) => !d.real).map(describe),
        };
    });
}

/** A variant's label without the variable name every allocator setting shares (a note under the table names it). */
export function shortLabel(label: string): string {
    return label.replace(/^PYTORCH_CUDA_ALLOC_CONF=/, "");
}

/** The sentences under the table: what was chosen, the search's answer and fit, why it stopped early. */
export function experimentNotes(experiment: Experiment): string[] {
    const notes: string[] = [];
    if ((experiment.variants ?? []).some((v) => v.label !== shortLabel(v.label))) {
        notes.push("Allocator settings were set in PYTORCH_CUDA_ALLOC_CONF; figures are medians with (min–max) over the runs.");
    }
    if (experiment.memory_limit) notes.push(`Every run capped at ${experiment.memory_limit}.`);
    const search = experiment.search;
    if (search) {
        const tried = search.probes.map((p) => `${p.value} ${p.fits ? "fits" : "OOM"}`).join(", ");
        const answer = search.largest_fit === null ? "none fits" : String(search.largest_fit);
        notes.push(`Largest ${search.argument} under ${search.limit}: ${answer} (${search.outcome}; tried ${tried}).`);
        for (const [metric, fit] of Object.entries(search.fit ?? {})) {
            if (!fit) continue;
            const quality = fit.r_squared === null ? "two values: no R²" : `R² ${fit.r_squared.toFixed(3)}`;
            const meets = fit.predicted_max === null ? "" : `; meets the limit at ${fit.predicted_max}`;
            notes.push(`${METRICS[metric] ?? metric} ≈ ${formatBytes(fit.intercept_bytes)} + ${formatBytes(fit.slope_bytes_per_unit)} per unit (${quality}${meets}).`);
        }
    }
    const chosen = experiment.chosen;
    notes.push(chosen ? `Chosen: ${chosen.label ?? ""}${chosen.text ? ` — ${chosen.text}` : ""}`
        : "Nothing chosen: no variant beat the baseline beyond the run-to-run noise.");
    if (experiment.stopped) notes.push(`Stopped early: ${experiment.stopped}`);
    return notes;
}
