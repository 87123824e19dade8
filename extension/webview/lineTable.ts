// The per-line table (Scalene's view): every annotated line with the server's labels, sortable by the
// numbers behind them, and a sparkline of the line's live bytes at each step's end. Pure: unit-tested.

export interface LineRow {
    label: string;
    uri?: string | null;
    line?: number | null;
    liveBytes?: number;
    share?: number;
    peakBytes?: number;
    growthPerStep?: number | null;
    allocatedBytes?: number;
    steps?: number[];
    cells?: Record<string, string>;
    // The line's view (analysis/rendering/line_view.py): labels only.
    place?: string;
    live?: boolean;
    figure?: string;
    figureWords?: string;
    headline?: string;
    blocks?: string;
    heldBy?: string | null;
    path?: string[];
    pathTitle?: string;
}

export interface LineColumn {
    key: string;
    sortBy: keyof LineRow;
    label: string;
}

export interface Sort {
    by: string; // a column's key
    descending: boolean;
}

/** The rows ordered by a column's number (rows without one last), ties by the live bytes. */
export function sortRows(rows: LineRow[], columns: LineColumn[], sort: Sort): LineRow[] {
    const column = columns.find((c) => c.key === sort.by);
    if (!column) return rows;
    const value = (row: LineRow) => {
        const v = row[column.sortBy];
        return typeof v === "number" && Number.isFinite(v) ? v : null;
    };
    return [...rows].sort((a, b) => {
        const [x, y] = [value(a), value(b)];
        if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
        const order = sort.descending ? y - x : x - y;
        return order || (b.liveBytes ?? 0) - (a.liveBytes ?? 0);
    });
}

/** Clicking a column: sort by it, largest first; clicking it again flips the order. */
export function nextSort(current: Sort, key: string): Sort {
    return current.by === key ? { by: key, descending: !current.descending } : { by: key, descending: true };
}

/** SVG polyline points of a sparkline `width` × `height` over `values` (scaled to the largest of them). */
export function sparkline(values: number[] | undefined, width: number, height: number): string {
    const points = (values ?? []).filter((v) => Number.isFinite(v));
    if (points.length < 2) return "";
    const top = Math.max(...points, 1);
    const step = width / (points.length - 1);
    const round = (v: number) => Math.round(v * 10) / 10;
    return points.map((v, i) => `${round(i * step)},${round(height - 1 - (v / top) * (height - 2))}`).join(" ");
}
