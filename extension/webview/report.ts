// The report view's page script: draws the `vramlens/report` payload the extension relays, and posts the
// user's clicks back. Text goes in as textContent only: the payload quotes user files and paths.
import { formatBytes, formatPercent } from "./format";
import { Experiment, EXPERIMENT_COLUMNS, experimentNotes, experimentRows, RANK_COLUMNS, rankCells, RankRow } from "./tables";
import { Series, timelineGeometry } from "./timeline";

declare function acquireVsCodeApi(): { postMessage(message: unknown): void };
const vscode = acquireVsCodeApi();

interface ReportLine {
    label: string;
    uri?: string | null;
    line?: number | null;
    liveBytes?: number;
    share?: number;
}

interface Report {
    title?: string;
    capture?: string;
    redacted?: boolean;
    analysis?: Record<string, any> | null;
    lines?: ReportLine[];
    series?: Series | null;
    markdown?: string;
    ranks?: RankRow[] | null;
    selectedRank?: number | null;
    experiment?: Experiment | null;
}

const SVG = "http://www.w3.org/2000/svg";
const SERIES_LABELS = { allocated: "allocated (live tensors)", reserved: "reserved by PyTorch", driverUsed: "driver-visible used (NVML readings as dots)" };

type Child = Node | string | null | undefined | false;

function el(tag: string, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElement {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
    for (const child of children) if (child) node.append(child);
    return node;
}

function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
}

function section(title: string, ...children: Child[]): HTMLElement {
    return el("section", {}, el("h2", {}, title), ...children);
}

function timeline(series: Series | undefined): HTMLElement | null {
    const width = 720;
    const height = 240;
    const geometry = timelineGeometry(series, width, height);
    if (!geometry) return null;
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "timeline", role: "img", "aria-label": "Memory over time" });
    const { plot } = geometry;
    for (const tick of geometry.yTicks) {
        root.append(svg("line", { x1: plot.left, x2: plot.right, y1: tick.at, y2: tick.at, class: "grid" }));
        root.append(svg("text", { x: plot.left - 6, y: tick.at + 4, class: "tick", "text-anchor": "end" }, tick.label));
    }
    for (const tick of geometry.xTicks) {
        root.append(svg("text", { x: tick.at, y: plot.bottom + 18, class: "tick", "text-anchor": "middle" }, tick.label));
    }
    root.append(svg("line", { x1: plot.left, x2: plot.right, y1: plot.bottom, y2: plot.bottom, class: "axis" }));
    if (geometry.peakX !== null) {
        root.append(svg("line", { x1: geometry.peakX, x2: geometry.peakX, y1: plot.top, y2: plot.bottom, class: "peak" }));
    }
    // The driver's line reaches past the window to its nearest samples: clip it to the plot.
    const clip = svg("clipPath", { id: "plot-area" });
    clip.append(svg("rect", { x: plot.left, y: 0, width: plot.right - plot.left, height: plot.bottom }));
    root.append(clip);
    for (const line of geometry.lines) {
        root.append(svg("polyline", { points: line.points, class: `series ${line.name}`, "clip-path": "url(#plot-area)" }));
    }
    for (const sample of geometry.samples) {
        root.append(svg("circle", { cx: sample.x, cy: sample.y, r: 2.5, class: "sample driverUsed" }));
    }
    if (geometry.oomX !== null) {
        root.append(svg("line", { x1: geometry.oomX, x2: geometry.oomX, y1: plot.top, y2: plot.bottom, class: "oom" }));
        root.append(svg("text", { x: geometry.oomX - 4, y: plot.top + 12, class: "oom-label", "text-anchor": "end" }, "OOM"));
    }
    const legend = el(
        "ul",
        { class: "legend" },
        ...geometry.lines.map((line) => el("li", { class: line.name }, SERIES_LABELS[line.name])),
        geometry.oomX !== null && el("li", { class: "oom" }, "out of memory"),
    );
    return section("Timeline", root as unknown as Node, legend);
}

const ACCOUNTING: [string, string][] = [
    ["allocated", "allocated (live tensors)"],
    ["cached", "cached (reserved − allocated)"],
    ["largest_free_block", "largest free block"],
    ["reserved", "reserved by PyTorch"],
    ["non_pytorch", "non-PyTorch (driver used − reserved)"],
    ["driver_used", "driver-visible used"],
    ["limit", "limit"],
    ["request", "failed request"],
    ["peak_allocated", "peak allocated"],
    ["peak_reserved", "peak reserved"],
];

function accounting(memory: Record<string, number | null> | undefined, moment: string | undefined): HTMLElement | null {
    if (!memory) return null;
    const rows = ACCOUNTING.filter(([key]) => memory[key] !== null && memory[key] !== undefined).map(([key, label]) =>
        el("tr", { "data-key": key }, el("th", {}, label), el("td", {}, formatBytes(memory[key]))),
    );
    const when = { oom: "the OOM", peak: "the peak", end: "the end" }[moment ?? "end"] ?? moment;
    return section(`Memory at ${when}`, el("table", { class: "accounting" }, ...rows));
}

function cause(analysis: Record<string, any> | undefined): HTMLElement | null {
    if (!analysis?.cause) return null;
    const heading = el("p", { class: "cause" }, el("b", {}, String(analysis.cause).replace(/_/g, " ")), ` — ${analysis.confidence_label ?? ""} confidence`);
    const evidence = el("ul", { class: "evidence" }, ...(analysis.evidence ?? []).map((e: string) => el("li", {}, e)));
    const advice = (analysis.recommendations ?? []).map((r: { action: string; reason?: string }) =>
        el("li", {}, r.action, r.reason ? el("div", { class: "why" }, r.reason) : null),
    );
    return section("Cause", heading, evidence, advice.length ? el("h3", {}, "What to try") : null, advice.length ? el("ol", {}, ...advice) : null);
}

function topLines(lines: ReportLine[] | undefined): HTMLElement | null {
    if (!lines?.length) return null;
    const rows = lines.map((line) => {
        const target = line.uri && typeof line.line === "number" ? { uri: line.uri, line: line.line } : null;
        const label = target ? el("a", { href: "#", class: "open-line" }, line.label) : el("span", {}, line.label);
        if (target) label.addEventListener("click", (event) => {
            event.preventDefault();
            vscode.postMessage({ type: "openLine", ...target });
        });
        const bar = el("span", { class: "bar" });
        bar.style.width = formatPercent(line.share ?? 0); // CSSOM, not a style attribute: the CSP forbids inline styles
        return el("tr", {}, el("td", {}, label), el("td", { class: "num" }, formatBytes(line.liveBytes)), el("td", { class: "num" }, formatPercent(line.share)), el("td", { class: "share" }, bar));
    });
    return section("Top lines", el("table", { class: "lines" }, el("tr", {}, el("th", {}, "line"), el("th", {}, "live"), el("th", {}, "share"), el("th", {})), ...rows));
}

function table(className: string, columns: string[], ...rows: HTMLElement[]): HTMLElement {
    return el("table", { class: className }, el("tr", {}, ...columns.map((c) => el("th", {}, c))), ...rows);
}

/** The ranks of a torchrun launch: a picker (the failing rank is shown first) and how each rank fared. */
function ranks(report: Report): HTMLElement | null {
    if (!report.ranks?.length) return null;
    const pick = (rank: number) => vscode.postMessage({ type: "selectRank", rank });
    const select = el("select", { id: "rank" }) as HTMLSelectElement;
    for (const r of report.ranks.filter((row) => row.shown !== false)) {
        const option = el("option", { value: String(r.rank) }, `rank ${r.rank}${r.failing ? " (failed first)" : r.failed ? " (failed)" : ""}`) as HTMLOptionElement;
        option.selected = r.rank === report.selectedRank;
        select.append(option);
    }
    select.addEventListener("change", () => pick(Number(select.value)));
    const rows = report.ranks.map((r) => {
        const classes = [r.rank === report.selectedRank ? "selected" : "", r.failing ? "failing" : ""].filter(Boolean).join(" ");
        const row = el("tr", { "data-rank": String(r.rank), class: classes, title: r.endingText ?? "" },
            ...rankCells(r).map((cell, index) => el("td", { class: index > 1 ? "num" : "" }, cell)));
        if (r.shown !== false) row.addEventListener("click", () => pick(r.rank));
        return row;
    });
    return section("Ranks", el("p", { class: "ranks" }, el("label", { for: "rank" }, "Show rank "), select),
        table("ranks", RANK_COLUMNS, ...rows));
}

/** "1.50 GiB (1.49 GiB–1.51 GiB)": the median, and its range below it in small print. */
function withRange(cell: string): Child[] {
    const at = cell.indexOf(" (");
    return at < 0 ? [cell] : [cell.slice(0, at), el("div", { class: "range" }, cell.slice(at + 1))];
}

/** A controlled experiment: per variant the medians (min–max), its verdict, and what exceeded the noise. */
function experiment(data: Experiment | null | undefined): HTMLElement | null {
    if (!data || typeof data !== "object") return null;
    // Each variant: its name, its figures, then its verdict and what exceeded the noise — rows the narrow view can hold.
    const rows = experimentRows(data).flatMap((row) => {
        const [label, ...figures] = row.cells.slice(0, -1);
        const differences = [...row.beyondNoise.map((t) => el("li", { class: "real" }, t)), ...row.withinNoise.map((t) => el("li", { class: "noise" }, t))];
        return [
            el("tr", { class: "variant-name" }, el("td", { colspan: String(figures.length) }, label)),
            el("tr", { class: "variant" }, ...figures.map((cell, index) => el("td", { class: index > 0 ? "num" : "" }, ...withRange(cell)))),
            el("tr", { class: "verdict" }, el("td", { colspan: String(figures.length) }, row.cells[row.cells.length - 1],
                differences.length ? el("ul", { class: "differences" }, ...differences) : null)),
        ];
    });
    const script = data.script?.split(/[\\/]/).pop();
    const heading = `Controlled experiment${script ? ` — ${script}` : ""}${data.repeats ? ` (${data.repeats} runs per variant)` : ""}`;
    return section(heading,
        rows.length ? table("experiment", EXPERIMENT_COLUMNS.slice(1, -1), ...rows) : null,
        rows.length ? el("p", { class: "legend-note" }, el("span", { class: "real" }, "■ beyond the run-to-run noise"), " ", el("span", { class: "noise" }, "■ within noise")) : null,
        ...experimentNotes(data).map((note) => el("p", { class: "experiment-note" }, note)));
}

function markdown(report: Report): HTMLElement | null {
    if (typeof report.markdown !== "string") return null;
    const redact = el("input", { type: "checkbox", id: "redact" }) as HTMLInputElement;
    redact.checked = !!report.redacted;
    redact.addEventListener("change", () => vscode.postMessage({ type: "setRedacted", redacted: redact.checked }));
    const copy = el("button", { id: "copy" }, "Copy");
    copy.addEventListener("click", () => vscode.postMessage({ type: "copyMarkdown" }));
    const save = el("button", { id: "export" }, "Export…");
    save.addEventListener("click", () => vscode.postMessage({ type: "exportMarkdown" }));
    const tools = el("div", { class: "tools" }, copy, save, el("label", { for: "redact" }, redact, " Redact paths and user names"));
    return section("Reproducibility report", tools, el("pre", { class: "markdown" }, report.markdown));
}

function render(report: Report | null): void {
    const main = document.getElementById("report")!;
    main.replaceChildren();
    if (!report) {
        main.append(el("p", { class: "empty" }, "No capture loaded: run “VRAM Lens: Diagnose CUDA memory” on a script, or “Open capture or snapshot…”."));
        return;
    }
    const analysis = report.analysis;
    main.append(
        el("h1", {}, report.title ?? "VRAM Lens report"),
        el("p", { class: "capture" }, report.capture ?? "", report.redacted ? " (redacted)" : ""),
        ...[ranks(report), experiment(report.experiment), timeline(report.series ?? undefined), cause(analysis ?? undefined), accounting(analysis?.memory, analysis?.moment), topLines(report.lines), markdown(report)].filter(
            (n): n is HTMLElement => n !== null,
        ),
    );
}

window.addEventListener("message", (event: MessageEvent) => {
    if (event.data?.type === "report") render(event.data.payload as Report | null);
});
vscode.postMessage({ type: "ready" });
