// The report view's page script: draws the `vramlens/report` payload the extension relays, and posts the
// user's clicks back. Text goes in as textContent only (the payload quotes user files and paths); the one
// HTML string, the rendered Markdown, comes from markdown-it with raw HTML disabled.
import { formatBytes, formatPercent } from "./format";
import { codeSpans } from "./inline";
import { LineLink, linkPieces } from "./links";
import { renderMarkdown } from "./markdown";
import { LineColumn, LineRow, nextSort, Sort, sortRows, sparkline } from "./lineTable";
import { BreakdownNode, Holder, iciclePlan, IcicleNode, RoleShare, roleSegments } from "./memoryViews";
import { ExperimentView, RankRow } from "./tables";
import { brushWindow, defaultWindow, fullWindow, plotHeight, readingAt, Series, timeAt, timelineGeometry, traceIndexAt } from "./timeline";

declare function acquireVsCodeApi(): { postMessage(message: unknown): void };
const vscode = acquireVsCodeApi();

interface Action {
    kind: string;
    title: string;
    arguments?: Record<string, unknown>;
    uri?: string;
    line?: number;
}

interface Recommendation {
    action: string;
    reason?: string;
    experiment?: boolean;
    command?: string | null;
    actions?: Action[];
}

interface DiagnosisView {
    cause: string;
    causeText?: string;
    confidenceLabel?: string;
    alternative?: string | null;
    alternativeText?: string | null;
    measured?: string | null;
    confirm?: { question?: string; expectation?: string } | null;
}

interface SegmentView {
    title: string;
    rows: { address: number; size: number; pool: string; label: string; blocks: [number, number, string][] }[];
    request?: number | null;
    requestText?: string | null;
    summary: string;
    leftOut?: string | null;
    legend: Record<string, string>;
}

interface Verdict {
    cause: string;
    confidence: string;
    alternative?: string | null;
    decide?: string | null;
    memory?: string;
    source?: string | null;
    line?: { place: string; figureWords: string; heldBy?: string | null } | null;
    fix?: { action: string; reason: string } | null;
}

interface AccountingView {
    title: string;
    rows: { key: string; label: string; value: string; remark: string }[];
}

interface Report {
    title?: string;
    capture?: string;
    captureShown?: string; // relative to the workspace folder holding it, else with ~ for the home folder
    redacted?: boolean;
    analysis?: Record<string, any> | null;
    diagnosis?: DiagnosisView | null;
    recommendations?: Recommendation[] | null;
    links?: LineLink[] | null;
    lines?: LineRow[];
    lineColumns?: LineColumn[];
    verdict?: Verdict | null;
    accounting?: AccountingView | null;
    holderColumns?: string[];
    segments?: SegmentView | null;
    notebook?: { title: string; cells: string[]; keptTitle: string; kept: string[] } | null;
    snapshotFile?: string | null;
    series?: Series | null;
    roles?: RoleShare[] | null;
    holders?: Holder[] | null;
    breakdown?: BreakdownNode[] | null;
    unmapped?: { recordedRoot?: string | null; files?: string[] } | null;
    confirmable?: boolean;
    markdown?: string;
    ranks?: RankRow[] | null;
    selectedRank?: number | null;
    rankColumns?: string[];
    experimentView?: ExperimentView | null;
}

const SVG = "http://www.w3.org/2000/svg";
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

function button(text: string, onClick: () => void, attrs: Record<string, string> = {}): HTMLElement {
    const node = el("button", attrs, text);
    node.addEventListener("click", onClick);
    return node;
}

const command = (name: string) => () => vscode.postMessage({ type: "command", name });

function lineLink(target: { label: string; uri: string; line: number }): HTMLElement {
    const link = el("a", { href: "#", class: "open-line", title: `Open ${target.label}` }, target.label);
    link.addEventListener("click", (event) => {
        event.preventDefault();
        vscode.postMessage({ type: "openLine", uri: target.uri, line: target.line });
    });
    return link;
}

/** A sentence with every file:line the server can open as a link. */
function linked(text: string, report: Report): Child[] {
    return linkPieces(text, report.links ?? []).map((piece) => (typeof piece === "string" ? piece : lineLink(piece)));
}

/** One of the server's sentences: its `code` as code (inline.ts), every file:line outside it as a link. */
function sentence(text: string, report: Report): Child[] {
    return codeSpans(text).flatMap((span) => (span.code ? [el("code", {}, span.text)] : linked(span.text, report)));
}

// ---- timeline ----------------------------------------------------------------------------------

// What was live at the instant last clicked on the timeline (the server's answer), drawn under the plot.
interface LiveAtView { summary: string; groups: { bytes: number; blocks: number; label: string; frames: string[] }[] }
const liveAtBox = el("div", { class: "live-at", id: "live-at" });
let liveAtTime: number | null = null;

function showLiveAt(found: LiveAtView | null, report: Report | null): void {
    if (!found) {
        liveAtBox.replaceChildren();
        return;
    }
    const unit = report?.series?.timeUnit === "entry" ? "" : " s";
    const items = found.groups.map((group) => el("li", {},
        el("details", {}, el("summary", {}, el("span", { class: "num" }, group.label), " ", el("span", { class: "code" }, group.frames.find((f) => !/^torch\//.test(f)) ?? group.frames[0] ?? "")),
            el("ol", { class: "stack" }, ...group.frames.map((frame) => el("li", { class: "code" }, ...linked(frame, report ?? {}))))))
    );
    liveAtBox.replaceChildren(el("h3", {}, liveAtTime !== null ? `Live at ${liveAtTime.toFixed(3)}${unit}` : "Live then"),
        el("p", { class: "why" }, found.summary), el("ul", { class: "live-groups" }, ...items));
}

// The window shown: undefined until the user zooms (the capture's default window), null for the whole run.
let zoom: [number, number] | null | undefined;

function timeline(report: Report): HTMLElement | null {
    const series = report.series ?? undefined;
    if (!series) return null;
    const holder = el("div", { class: "timeline-box" });
    const readout = el("div", { class: "readout", "aria-live": "polite" });
    const reset = button("Whole run", () => {
        zoom = null;
        draw();
    }, { class: "secondary", id: "reset-zoom" });
    const draw = () => {
        const width = Math.max(240, Math.floor(holder.clientWidth || 600));
        const shown = zoom === undefined ? defaultWindow(series) : zoom;
        const geometry = timelineGeometry(series, width, plotHeight(width), shown);
        holder.replaceChildren();
        const full = fullWindow(series);
        reset.hidden = !shown || !full || (shown[0] <= full[0] && shown[1] >= full[1]);
        if (!geometry) return;
        holder.append(drawTimeline(geometry, series, readout, (window) => {
            zoom = window;
            draw();
        }) as unknown as Node);
    };
    const legend = el("ul", { class: "legend" },
        el("li", { class: "allocated" }, "allocated"),
        el("li", { class: "reserved" }, "reserved"),
        (series.driverUsed?.length ?? 0) > 0 && el("li", { class: "driverUsed", title: "driver-visible memory: NVML's readings (dots), each held one sampling interval" }, "driver (NVML)"),
        typeof series.limit === "number" && el("li", { class: "limit" }, series.limitIsCap ? "cap" : "limit"),
        typeof series.oomAt === "number" && el("li", { class: "oom" }, "OOM"),
        (series.steps?.length ?? 0) > 0 && el("li", { class: "step" }, "steps"),
    );
    new ResizeObserver(() => draw()).observe(holder);
    queueMicrotask(draw);
    return section("Timeline", legend, holder, el("div", { class: "timeline-tools" }, readout, reset),
        el("p", { class: "hint" }, "Hover for the values at an instant; click for what was live then; drag across the plot to zoom, double-click for the whole run."),
        liveAtBox);
}

function drawTimeline(g: NonNullable<ReturnType<typeof timelineGeometry>>, series: Series, readout: HTMLElement, onZoom: (w: [number, number] | null) => void): SVGElement {
    const { plot } = g;
    const root = svg("svg", { width: g.width, height: g.height, viewBox: `0 0 ${g.width} ${g.height}`, class: "timeline", role: "img", "aria-label": "Memory over time" });
    const clipId = "plot-area";
    const clip = svg("clipPath", { id: clipId });
    clip.append(svg("rect", { x: plot.left, y: plot.top - 2, width: plot.right - plot.left, height: plot.bottom - plot.top + 2 }));
    root.append(clip);
    const clipped = svg("g", { "clip-path": `url(#${clipId})` });
    for (const band of g.bands) {
        const rect = svg("rect", { x: band.x0, y: plot.top, width: Math.max(1, band.x1 - band.x0), height: plot.bottom - plot.top, class: `band${band.odd ? " odd" : ""}` });
        rect.append(svg("title", {}, band.label));
        clipped.append(rect);
        if (band.number) clipped.append(svg("text", { x: (band.x0 + band.x1) / 2, y: plot.bottom - 4, class: "band-number", "text-anchor": "middle" }, band.number));
    }
    for (const tick of g.yTicks) root.append(svg("line", { x1: plot.left, x2: plot.right, y1: tick.at, y2: tick.at, class: "grid" }));
    if (g.reservedArea) clipped.append(svg("path", { d: g.reservedArea, class: "area reserved" }));
    if (g.allocatedArea) clipped.append(svg("path", { d: g.allocatedArea, class: "area allocated" }));
    if (g.reservedLine) clipped.append(svg("polyline", { points: g.reservedLine, class: "series reserved" }));
    if (g.allocatedLine) clipped.append(svg("polyline", { points: g.allocatedLine, class: "series allocated" }));
    if (g.driverPath) clipped.append(svg("path", { d: g.driverPath, class: "series driverUsed" }));
    for (const sample of g.samples) clipped.append(svg("circle", { cx: sample.x, cy: sample.y, r: 3, class: "sample driverUsed" }));
    root.append(clipped);
    const horizontal = (line: { y: number; label: string } | null, kind: string) => {
        if (!line) return;
        root.append(svg("line", { x1: plot.left, x2: plot.right, y1: line.y, y2: line.y, class: kind }));
        root.append(svg("text", { x: plot.right - 4, y: line.y - 4, class: `line-label ${kind}`, "text-anchor": "end" }, line.label));
    };
    horizontal(g.limit, "limit");
    horizontal(g.deviceTotal, "device-total");
    if (g.offScale.length) {
        // Inside the plot, under the OOM label: above it, it would run into the axis title in a narrow column.
        root.append(svg("text", { x: plot.right - 4, y: plot.top + 26, class: "line-label off-scale", "text-anchor": "end" }, `↑ ${g.offScale.join(" · ")}`));
    }
    for (const mark of g.marks) {
        root.append(svg("line", { x1: mark.x, x2: mark.x, y1: plot.top, y2: plot.bottom, class: "phase" }));
        root.append(svg("text", { x: mark.x + 3, y: plot.top + 10, class: "phase-label" }, mark.label));
    }
    if (g.peakX !== null) root.append(svg("line", { x1: g.peakX, x2: g.peakX, y1: plot.top, y2: plot.bottom, class: "peak" }));
    if (g.oomX !== null) {
        root.append(svg("line", { x1: g.oomX, x2: g.oomX, y1: plot.top, y2: plot.bottom, class: "oom" }));
        root.append(svg("text", { x: g.oomX - 4, y: plot.top + 12, class: "oom-label", "text-anchor": "end" }, "OOM"));
    }
    root.append(svg("line", { x1: plot.left, x2: plot.right, y1: plot.bottom, y2: plot.bottom, class: "axis" }));
    root.append(svg("line", { x1: plot.left, x2: plot.left, y1: plot.top, y2: plot.bottom, class: "axis" }));
    for (const tick of g.yTicks) root.append(svg("text", { x: plot.left - 6, y: tick.at + 4, class: "tick", "text-anchor": "end" }, tick.label));
    for (const tick of g.xTicks) root.append(svg("text", { x: tick.at, y: plot.bottom + 16, class: "tick", "text-anchor": "middle" }, tick.label));
    root.append(svg("text", { x: plot.left, y: 12, class: "axis-title" }, g.yTitle));
    root.append(svg("text", { x: (plot.left + plot.right) / 2, y: g.height - 6, class: "axis-title", "text-anchor": "middle" }, g.xTitle));

    // Crosshair, readout and brush.
    const cross = svg("line", { x1: 0, x2: 0, y1: plot.top, y2: plot.bottom, class: "crosshair", visibility: "hidden" });
    const brush = svg("rect", { x: 0, y: plot.top, width: 0, height: plot.bottom - plot.top, class: "brush", visibility: "hidden" });
    const surface = svg("rect", { x: plot.left, y: plot.top, width: plot.right - plot.left, height: plot.bottom - plot.top, class: "surface" });
    root.append(brush, cross, surface);
    let dragFrom: number | null = null;
    const px = (event: MouseEvent) => event.clientX - root.getBoundingClientRect().left;
    surface.addEventListener("mousemove", (event) => {
        const at = px(event as MouseEvent);
        cross.setAttribute("x1", String(at));
        cross.setAttribute("x2", String(at));
        cross.setAttribute("visibility", "visible");
        showReading(readout, readingAt(series, timeAt(g, at)), series.timeUnit);
        if (dragFrom !== null) {
            brush.setAttribute("x", String(Math.min(dragFrom, at)));
            brush.setAttribute("width", String(Math.abs(at - dragFrom)));
            brush.setAttribute("visibility", "visible");
        }
    });
    surface.addEventListener("mouseleave", () => {
        cross.setAttribute("visibility", "hidden");
        brush.setAttribute("visibility", "hidden");
        dragFrom = null;
    });
    surface.addEventListener("mousedown", (event) => {
        dragFrom = px(event as MouseEvent);
    });
    surface.addEventListener("mouseup", (event) => {
        if (dragFrom === null) return;
        const at = px(event as MouseEvent);
        const window = brushWindow(g, dragFrom, at);
        dragFrom = null;
        brush.setAttribute("visibility", "hidden");
        if (window) return onZoom(window);
        // A click, not a drag: what was live at that instant (memory_viz's active memory at a point).
        const index = traceIndexAt(series, timeAt(g, at));
        if (index !== null) {
            liveAtTime = timeAt(g, at);
            vscode.postMessage({ type: "liveAt", index });
        }
    });
    surface.addEventListener("dblclick", () => onZoom(null));
    return root;
}

function showReading(readout: HTMLElement, reading: ReturnType<typeof readingAt>, unit?: string): void {
    const value = (name: string, bytes: number | null) => el("span", { class: `value ${name}` }, el("span", { class: "swatch" }), `${name} `, el("b", { class: "num" }, formatBytes(bytes)));
    readout.replaceChildren(
        el("span", { class: "num at" }, unit === "entry" ? `entry ${Math.round(reading.t)}` : `${reading.t.toFixed(3)} s`),
        value("allocated", reading.allocated),
        value("reserved", reading.reserved),
        value("driver", reading.driverUsed),
        reading.top ? el("span", { class: "value top" }, "top line ", el("b", { class: "code" }, reading.top[0]), " ", el("span", { class: "num" }, formatBytes(reading.top[1])))
            : el("span", { class: "value top none" }, "top line —"),
    );
}

// ---- what the memory is, who holds it, where below a line ----------------------------------------

function roles(report: Report): HTMLElement | null {
    const segments = roleSegments(report.roles ?? []);
    if (!segments.length) return null;
    const bar = el("div", { class: "roles-bar", role: "img", "aria-label": "What the allocated memory is" });
    for (const segment of segments) {
        const part = el("span", { class: `role role-${segment.index % 8}`, title: `${segment.label}: ${formatBytes(segment.bytes)} (${formatPercent(segment.share)})` });
        part.style.width = `${(segment.share * 100).toFixed(2)}%`; // CSSOM: the CSP forbids style attributes
        bar.append(part);
    }
    const legend = el("ul", { class: "roles-legend" }, ...segments.map((s) =>
        el("li", {}, el("span", { class: `swatch role-${s.index % 8}` }), `${s.label} `, el("span", { class: "num" }, s.figure ?? `${formatBytes(s.bytes)} · ${formatPercent(s.share)}`))));
    return section("What the memory is", bar, legend);
}

function holders(report: Report): HTMLElement | null {
    const list = report.holders ?? [];
    if (!list.length) return null;
    const rows = list.map((h) => el("tr", {},
        el("td", { class: "code holder-root" }, h.root), el("td", {}, h.kindText ?? h.kind),
        el("td", { class: "num" }, h.bytesText ?? formatBytes(h.bytes)), el("td", { class: "num" }, h.tensorsText ?? String(h.tensors)),
        el("td", { class: "code" }, ...(h.filledAt ? linked(h.filledAt, report) : ["—"]))));
    const columns = report.holderColumns ?? [];
    return section("Who holds it", el("div", { class: "table-scroll" }, table("holders", columns, ...rows)));
}

// The icicle's focus: the labels from a root down to the node drawn full width (empty: every tree).
let icicleFocus: string[] = [];

function breakdown(report: Report): HTMLElement | null {
    const trees = report.breakdown ?? [];
    if (!trees.length) return null;
    const box = el("div", { class: "icicle-box" });
    const draw = () => {
        // Walk the focus down the plan; a label no longer there (another capture) ends the walk.
        const trail: IcicleNode[] = [];
        let level = iciclePlan(trees);
        for (const label of icicleFocus) {
            const found = level.find((node) => node.label === label);
            if (!found) break;
            trail.push(found);
            level = found.children;
        }
        icicleFocus = trail.map((node) => node.label);
        const focused = trail.at(-1);
        const shown = focused ? [{ ...focused, share: 1 }] : iciclePlan(trees);
        const all = button("All lines", () => { icicleFocus = []; draw(); }, { class: "link" }) as HTMLButtonElement;
        all.disabled = trail.length === 0;
        const crumbs = el("nav", { class: "icicle-crumbs", "aria-label": "Zoomed into" }, all,
            ...trail.flatMap((node, i) => [" › ", button(node.label, () => { icicleFocus = icicleFocus.slice(0, i + 1); draw(); }, { class: "link" })]));
        const nodeBox = (node: IcicleNode, path: string[]): HTMLElement => {
            const here = [...path, node.label];
            const label = el("div", { class: "icicle-label", title: `${node.label}: ${node.bytesText ?? formatBytes(node.bytes)} — click to zoom` },
                node.uri ? lineLink({ label: node.label, uri: node.uri, line: node.line ?? 0 }) : node.label, " ",
                el("span", { class: "num" }, node.bytesText ?? formatBytes(node.bytes)));
            label.addEventListener("click", (event) => {
                if ((event.target as HTMLElement).closest("a")) return;
                icicleFocus = here;
                draw();
            });
            const wrap = el("div", { class: "icicle-node" }, label);
            wrap.style.width = `${(node.share * 100).toFixed(2)}%`; // CSSOM: the CSP forbids style attributes
            if (node.children.length) wrap.append(el("div", { class: "icicle-row" }, ...node.children.map((child) => nodeBox(child, here))));
            return wrap;
        };
        const above = trail.slice(0, -1).map((node) => node.label);
        box.replaceChildren(crumbs, el("div", { class: "icicle" }, el("div", { class: "icicle-row" }, ...shown.map((node) => nodeBox(node, above)))));
    };
    draw();
    return section("Below the top lines", box,
        el("p", { class: "hint" }, "Each box is as wide as its share of the box above; click one to zoom into it."));
}

/** A notebook capture: its cells in the order they ran, and what the kernel itself keeps (`Out[3]`, `%xdel _3`). */
function notebookSection(report: Report): HTMLElement | null {
    const nb = report.notebook;
    if (!nb?.cells?.length) return null;
    return section(nb.title, el("ol", { class: "cells" }, ...nb.cells.map((row) => el("li", { class: "code" }, ...linked(row, report)))),
        nb.kept.length ? el("h3", {}, nb.keptTitle) : null,
        nb.kept.length ? el("ul", { class: "kept" }, ...nb.kept.map((row) => el("li", {}, ...sentence(row, report)))) : null);
}

/** Two captures side by side (the server's labelled rows of `vramlens diff`): the run before a change and after it. */
interface DeltaRow { label: string; before: string; after: string; change: string; growth?: string; source?: string | null }
interface ComparisonView {
    title: string; sentence: string; columns: string[]; rows: string[][];
    linesTitle: string; lines: DeltaRow[]; holdersTitle: string; holders: DeltaRow[]; notes: string[];
}
let comparison: ComparisonView | null = null;

function comparisonSection(report: Report): HTMLElement | null {
    const view = comparison;
    if (!view) return null;
    const cellClass = (index: number) => (index === 0 ? "" : "num");
    const head = el("tr", {}, ...view.columns.map((c, i) => el("th", { class: cellClass(i) }, c)));
    const rows = view.rows.map((row) => el("tr", {}, ...row.map((cell, i) => el(i === 0 ? "th" : "td", { class: cellClass(i) }, cell))));
    const deltas = (title: string, items: DeltaRow[]) => items.length ? el("div", {}, el("h3", {}, title),
        el("div", { class: "table-scroll" }, el("table", { class: "diff-lines" }, head.cloneNode(true) as HTMLElement,
            ...items.map((item) => el("tr", {}, el("td", { class: "code" }, ...linked(item.label, report)), el("td", { class: "num" }, item.before),
                el("td", { class: "num" }, item.after), el("td", { class: "num" }, item.change)))))) : null;
    return section(view.title, el("p", {}, view.sentence),
        el("div", { class: "table-scroll" }, el("table", { class: "diff" }, head, ...rows)),
        deltas(view.linesTitle, view.lines), deltas(view.holdersTitle, view.holders),
        ...view.notes.map((note) => el("p", { class: "hint" }, note)),
        el("div", { class: "actions" }, button("Close comparison", () => { comparison = null; vscode.postMessage({ type: "closeComparison" }); if (shownReport) render(shownReport); }, { class: "secondary", id: "close-comparison" })));
}

/** The allocator's segments (memory_viz's segment view): each a bar as long as its size next to the largest,
 * its blocks live or free in address order, and the failing request to the same scale. */
function segmentMap(report: Report): HTMLElement | null {
    const map = report.segments;
    if (!map?.rows?.length) return null;
    const largest = Math.max(...map.rows.map((row) => row.size), map.request ?? 0, 1);
    const readout = el("div", { class: "segment-readout", "aria-live": "polite" }, "Hover a segment for its blocks.");
    const bar = (bytes: number, className: string, title: string) => {
        const node = el("div", { class: className, title });
        node.style.width = `${((bytes / largest) * 100).toFixed(3)}%`; // CSSOM: the CSP forbids style attributes
        return node;
    };
    const rows = map.rows.map((row) => {
        const segment = bar(row.size, `segment pool-${row.pool}`, row.label);
        for (const [, size, state] of row.blocks) {
            const block = el("span", { class: `block ${state === "free" ? "free" : "live"}` });
            block.style.width = `${((size / Math.max(row.size, 1)) * 100).toFixed(3)}%`;
            segment.append(block);
        }
        segment.addEventListener("mouseenter", () => readout.replaceChildren(row.label));
        return segment;
    });
    const request = map.request && map.requestText
        ? el("div", { class: "segment-request-row" }, bar(map.request, "segment-request", map.legend.request ?? ""), el("span", { class: "num" }, map.requestText))
        : null;
    const legend = el("ul", { class: "legend segment-legend" },
        el("li", { class: "seg-live" }, map.legend.live ?? "live"), el("li", { class: "seg-free" }, map.legend.free ?? "free"),
        request ? el("li", { class: "seg-request" }, map.legend.request ?? "request") : null);
    return section(map.title, el("p", {}, map.summary), legend, request, el("div", { class: "segments" }, ...rows), readout,
        map.leftOut ? el("p", { class: "hint" }, map.leftOut) : null);
}

// ---- cause, advice, accounting, lines ------------------------------------------------------------

function cause(report: Report): HTMLElement | null {
    const analysis = report.analysis;
    const v = report.verdict;
    if (!analysis?.cause || !v) return null;
    const d = report.diagnosis;
    const heading = el("p", { class: "cause", title: `cause: ${String(analysis.cause)}` },
        el("b", {}, v.cause.charAt(0).toUpperCase() + v.cause.slice(1)), ` — ${v.confidence}`);
    const alternative = v.alternative ? el("p", { class: "alternative" }, `${v.alternative.charAt(0).toUpperCase()}${v.alternative.slice(1)}.`,
        v.decide ? el("span", {}, " To decide: ", el("code", {}, v.decide)) : null) : null;
    const line = v.line ? el("p", { class: "line-to-change" }, "Line to change: ", ...linked(v.line.place, report), ` — ${v.line.figureWords}`,
        v.line.heldBy ? el("span", { class: "held" }, `; ${v.line.heldBy}`) : null) : null;
    const source = v.source ? el("pre", { class: "source" }, v.source) : null;
    const measured = d?.measured ? el("p", { class: "measured" }, d.measured) : null;
    const evidence = el("details", { class: "evidence" }, el("summary", {}, "Why"),
        el("ul", {}, ...(analysis.evidence ?? []).map((e: string) => el("li", {}, ...sentence(e, report)))));
    // Deciding by measurement leads only when the runner-up is close; otherwise it is a check, not the next step.
    const confirm = report.confirmable ? button(v.alternative ? "Confirm the diagnosis" : "Check by measurement", command("confirm"),
        { id: "confirm", class: v.alternative && environment.canRun ? "" : "secondary", title: d?.confirm?.expectation ?? "Run the experiment that tells this cause from the next likely one" }) : null;
    return section("Cause", heading, alternative, line, source, measured, evidence, confirm && el("div", { class: "actions" }, confirm));
}

function advice(report: Report): HTMLElement | null {
    const items = report.recommendations ?? (report.analysis?.recommendations as Recommendation[] | undefined) ?? [];
    if (!items.length) return null;
    const rows = items.map((r, index) => el("li", {},
        el("div", {}, ...sentence(r.action, report), r.experiment ? el("span", { class: "tag" }, "measure it") : null),
        r.reason ? el("div", { class: "why" }, ...sentence(r.reason, report)) : null,
        (r.actions?.length ?? 0) > 0
            ? el("div", { class: "actions" }, ...r.actions!.map((action, j) =>
                button(action.title, () => vscode.postMessage({ type: "action", recommendation: index, action: j }), { class: `action ${action.kind}`, "data-kind": action.kind })))
            : null,
        r.command ? el("details", { class: "cli" }, el("summary", {}, "In a terminal"), el("code", {}, r.command)) : null,
    ));
    return section("What to try", el("ol", { class: "advice" }, ...rows));
}

/** The accounting's rows as the server words them (analysis/rendering/accounting_view.py), remarks under labels. */
function accounting(view: AccountingView | null | undefined): HTMLElement | null {
    if (!view?.rows?.length) return null;
    const rows = view.rows.map((row) => el("tr", { "data-key": row.key },
        el("th", {}, row.label, row.remark ? el("div", { class: "why" }, row.remark) : null), el("td", { class: "num" }, row.value)));
    return section(view.title, el("div", { class: "table-scroll" }, el("table", { class: "accounting" }, ...rows)));
}

let lineSort: Sort = { by: "live", descending: true };
let openLine: string | null = null;

/** Every annotated line: sortable figures, a sparkline over the steps, and its details (blocks, holder,
 * the whole call path) a click away. */
function topLines(report: Report): HTMLElement | null {
    const lines = report.lines;
    const columns = report.lineColumns ?? [];
    if (!lines?.length || !columns.length) return null;
    const holder = el("div", {});
    const draw = () => {
        const head = el("tr", {}, el("th", {}, "line"), ...columns.map((c) => {
            const th = el("th", { class: "num sortable", tabindex: "0", "aria-sort": lineSort.by === c.key ? (lineSort.descending ? "descending" : "ascending") : "none" },
                c.label, lineSort.by === c.key ? (lineSort.descending ? " ▾" : " ▴") : "");
            const sortBy = () => { lineSort = nextSort(lineSort, c.key); draw(); };
            th.addEventListener("click", sortBy);
            th.addEventListener("keydown", (event) => { if ((event as KeyboardEvent).key === "Enter") sortBy(); });
            return th;
        }), el("th", {}, "steps"));
        const rows = sortRows(lines, columns, lineSort).flatMap((line) => {
            const label = line.uri && typeof line.line === "number" ? lineLink({ label: line.label, uri: line.uri, line: line.line }) : el("span", { class: "code" }, line.label);
            const spark = svg("svg", { width: 64, height: 16, class: "sparkline", role: "img", "aria-label": `live bytes at each step's end` });
            const points = sparkline(line.steps, 64, 16);
            if (points) spark.append(svg("polyline", { points }));
            const toggle = button(openLine === line.label ? "▾" : "▸", () => { openLine = openLine === line.label ? null : line.label; draw(); },
                { class: "link expand", "aria-expanded": String(openLine === line.label), title: "blocks, holder and the whole call path" });
            return [el("tr", { class: [line.live === false ? "churn" : "", openLine === line.label ? "open" : ""].join(" ").trim() },
                el("td", { class: "code" }, toggle, label),
                ...columns.map((c) => el("td", { class: "num" }, line.cells?.[c.key] ?? "—")), el("td", {}, spark as unknown as Node))];
        });
        // The open line's details sit under the table, at the view's width (a row would be as wide as the table).
        const open = lines.find((line) => line.label === openLine);
        const details = open ? el("div", { class: "line-details" },
            el("h3", {}, ...linked(open.place ?? open.label, report)), el("div", {}, open.headline ?? ""), el("div", { class: "why" }, open.blocks ?? ""),
            open.heldBy ? el("div", {}, open.heldBy) : null,
            (open.path?.length ?? 0) > 0 ? el("div", { class: "why" }, open.pathTitle ?? "") : null,
            (open.path?.length ?? 0) > 0 ? el("ol", { class: "stack" }, ...open.path!.map((frame) => el("li", { class: "code" }, ...linked(frame, report)))) : null) : null;
        holder.replaceChildren(el("div", { class: "table-scroll" }, el("table", { class: "lines" }, head, ...rows)), ...(details ? [details] : []));
    };
    draw();
    return section("Top lines", holder);
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
            ...(r.cells ?? []).map((cell, index) => el("td", { class: index > 1 ? "num" : "" }, cell)));
        if (r.shown !== false) row.addEventListener("click", () => pick(r.rank));
        return row;
    });
    return section("Ranks", el("p", { class: "ranks" }, el("label", { for: "rank" }, "Show rank "), select),
        table("ranks", report.rankColumns ?? [], ...rows));
}

/** "1.50 GiB (1.49 GiB–1.51 GiB)": the median, and its range below it in small print. */
function withRange(cell: string): Child[] {
    const at = cell.indexOf(" (");
    return at < 0 ? [cell] : [cell.slice(0, at), el("div", { class: "range" }, cell.slice(at + 1))];
}

/** A controlled experiment: per variant the medians (min–max), its verdict, and what exceeded the noise. */
function experiment(data: ExperimentView | null | undefined): HTMLElement | null {
    if (!data?.title) return null;
    const rows = data.rows.flatMap((row) => {
        const [label, ...figures] = row.cells.slice(0, -1);
        const differences = [...row.beyondNoise.map((t) => el("li", { class: "real" }, t)), ...row.withinNoise.map((t) => el("li", { class: "noise" }, t))];
        return [
            el("tr", { class: "variant-name" }, el("td", { colspan: String(figures.length) }, label)),
            el("tr", { class: "variant" }, ...figures.map((cell, index) => el("td", { class: index > 0 ? "num" : "" }, ...withRange(cell)))),
            el("tr", { class: "verdict" }, el("td", { colspan: String(figures.length) }, row.cells[row.cells.length - 1],
                differences.length ? el("ul", { class: "differences" }, ...differences) : null)),
        ];
    });
    return section(data.title,
        rows.length ? table("experiment", data.columns.slice(1, -1), ...rows) : null,
        rows.length ? el("p", { class: "legend-note" }, el("span", { class: "real" }, `■ ${data.legend.beyond}`), " ", el("span", { class: "noise" }, `■ ${data.legend.within}`)) : null,
        ...data.notes.map((note) => el("p", { class: "experiment-note" }, note)));
}

let markdownOpen = false;

/** The reproducibility report, rendered, in a section that folds; Copy and Export act on its Markdown source. */
function markdown(report: Report): HTMLElement | null {
    if (typeof report.markdown !== "string") return null;
    const redact = el("input", { type: "checkbox", id: "redact" }) as HTMLInputElement;
    redact.checked = !!report.redacted;
    redact.addEventListener("change", () => vscode.postMessage({ type: "setRedacted", redacted: redact.checked }));
    const tools = el("div", { class: "tools" },
        button("Copy Markdown", () => vscode.postMessage({ type: "copyMarkdown" }), { id: "copy" }),
        button("Export…", () => vscode.postMessage({ type: "exportMarkdown" }), { id: "export" }),
        report.snapshotFile ? button("Snapshot for PyTorch's viewer…", () => vscode.postMessage({ type: "exportSnapshot" }),
            { id: "export-snapshot", class: "secondary", title: "Save the capture's snapshot (torch.cuda.memory._dump_snapshot's pickle) to open at pytorch.org/memory_viz" }) : null,
        el("label", { for: "redact" }, redact, " Redact paths and user names"));
    const rendered = el("div", { class: "markdown-rendered" });
    rendered.innerHTML = renderMarkdown(report.markdown); // markdown-it, raw HTML disabled (markdown.ts)
    for (const anchor of rendered.querySelectorAll("a")) anchor.addEventListener("click", (event: Event) => event.preventDefault());
    linkTextNodes(rendered, report);
    const details = el("details", { class: "repro" }, el("summary", {}, "Reproducibility report"), tools, rendered) as HTMLDetailsElement;
    details.open = markdownOpen;
    details.addEventListener("toggle", () => (markdownOpen = details.open));
    return el("section", {}, details);
}

/** file:line tokens inside rendered text (not inside code blocks) become links too. */
function linkTextNodes(root: HTMLElement, report: Report): void {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const texts: Text[] = [];
    while (walker.nextNode()) texts.push(walker.currentNode as Text);
    for (const text of texts) {
        if (text.parentElement?.closest("pre, a")) continue;
        const pieces = linked(text.data, report);
        if (pieces.length > 1 || typeof pieces[0] !== "string") text.replaceWith(...(pieces.filter(Boolean) as (Node | string)[]));
    }
}

// ---- states ----------------------------------------------------------------------------------

// What the extension says of this machine: whether a script can be run here, and whether a file is open.
let environment = { canRun: true, openFile: true };

function emptyState(): HTMLElement {
    // The primary button is one that can work here: without a runnable interpreter or an open file, the sample.
    const runnable = environment.canRun && environment.openFile;
    return el("div", { class: "empty-state" },
        el("h1", {}, "No capture loaded"),
        el("p", {}, "Diagnose a PyTorch script to record where its GPU memory goes, open a capture recorded elsewhere, or look at the sample recorded on an H200."),
        el("div", { class: "actions" },
            button("Diagnose the open file", command("diagnose"), { id: "empty-diagnose", class: runnable ? "" : "secondary" }),
            button("Open capture…", command("openCapture"), { id: "empty-open", class: "secondary" }),
            button("Open sample", command("openSample"), { id: "empty-sample", class: runnable ? "secondary" : "" })));
}

function unmappedBanner(report: Report): HTMLElement | null {
    if (!report.unmapped) return null;
    const files = report.unmapped.files ?? [];
    return el("div", { class: "banner", role: "status" },
        el("p", {}, el("b", {}, "No recorded frame matched a file in this workspace"),
            `: the capture names ${files.length ? files.join(", ") : "files"}${report.unmapped.recordedRoot ? ` (recorded under ${report.unmapped.recordedRoot})` : ""}. Figures go on your lines once the folder that holds them is chosen.`),
        button("Choose source folder…", command("chooseSourceFolder"), { id: "choose-source" }));
}

function render(report: Report | null): void {
    const main = document.getElementById("report")!;
    main.replaceChildren();
    if (!report) {
        zoom = undefined;
        main.append(emptyState());
        return;
    }
    const analysis = report.analysis;
    main.append(
        el("h1", {}, report.title ?? "VRAM Lens report"),
        el("p", { class: "capture code", title: report.capture ?? "" }, report.captureShown ?? report.capture ?? "", report.redacted ? " (redacted)" : ""),
        ...[unmappedBanner(report), comparisonSection(report), ranks(report), experiment(report.experimentView), cause(report), roles(report), timeline(report),
            advice(report), accounting(report.accounting), topLines(report), holders(report), notebookSection(report), breakdown(report), segmentMap(report),
            markdown(report)].filter((n): n is HTMLElement => n !== null),
    );
}

let shownCapture: string | undefined;
let shownReport: Report | null = null;
window.addEventListener("message", (event: MessageEvent) => {
    if (event.data?.type === "liveAt") return showLiveAt(event.data.payload as LiveAtView | null, shownReport);
    if (event.data?.type === "environment") {
        environment = { ...environment, ...(event.data.payload ?? {}) };
        render(shownReport);
        return;
    }
    if (event.data?.type === "comparison") {
        comparison = (event.data.payload as ComparisonView | null) ?? null;
        if (shownReport) render(shownReport);
        return;
    }
    if (event.data?.type !== "report") return;
    const report = event.data.payload as Report | null;
    if (report?.capture !== shownCapture) {
        zoom = undefined; // another capture: the zoom and the instant were for the old one
        showLiveAt(null, null);
    }
    shownReport = report;
    shownCapture = report?.capture;
    render(report);
});
vscode.postMessage({ type: "ready", width: window.innerWidth });

// The extension hears of no window resize; this view does, as its own width changing (beside or below the code, the
// code's width changes with it): say so once the resize pauses, so the code's figures are fitted again.
const RESIZE_PAUSE_MS = 150;
let reportedWidth = window.innerWidth;
let resizeTimer: ReturnType<typeof setTimeout> | undefined;
new ResizeObserver(() => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
        const width = window.innerWidth;
        if (width <= 0 || width === reportedWidth) return; // hidden, or only the height changed
        reportedWidth = width;
        vscode.postMessage({ type: "resized", width });
    }, RESIZE_PAUSE_MS);
}).observe(document.documentElement);
