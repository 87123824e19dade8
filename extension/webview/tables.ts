// The report view's tables for a torchrun launch (one row per rank) and a controlled experiment (one row per
// variant), as the server's payload gives them (docs/lsp-protocol.md, docs/experiments.md): the words and
// figures are made by the server (analysis/rendering/), the view only lays them out.

/** A controlled experiment as the server words it (analysis/rendering/experiment_view.py): labels only. */
export interface ExperimentView {
    title: string;
    columns: string[];
    rows: { cells: string[]; beyondNoise: string[]; withinNoise: string[] }[];
    notes: string[];
    legend: { beyond: string; within: string };
}

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
    cells?: string[]; // the server's words, in the payload's rankColumns order (analysis/rendering/ranks_text.py)
}
