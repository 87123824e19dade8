// Where the report view opens: beside the editor when the window is wide enough for both, else in a group
// below it; once the user moves it, where they put it. No vscode import: unit-tested.

export type Placement = "beside" | "below" | "active";

/** Below this editor-area width, beside would squeeze the code into half of it. */
export const MIN_BESIDE_WIDTH = 1000;

/** `vscode.getEditorLayout`'s answer: orientation 0 = groups side by side, 1 = stacked; sizes in pixels. */
export interface EditorLayout {
    orientation?: number;
    groups?: { size?: number; groups?: unknown[] }[];
}

/** The editor area's width in pixels, when the layout says it. */
export function editorAreaWidth(layout: EditorLayout | undefined): number | undefined {
    const groups = layout?.groups ?? [];
    if (!groups.length || groups.some((g) => typeof g.size !== "number")) return undefined;
    // Side by side the sizes are widths; stacked (and a lone group is reported stacked), each is a height.
    return layout?.orientation === 0 ? groups.reduce((sum, g) => sum + (g.size as number), 0) : undefined;
}

/** The remembered placement, else one chosen by width (beside when the width is not known). */
export function choosePlacement(remembered: unknown, layout: EditorLayout | undefined): Placement {
    if (remembered === "beside" || remembered === "below" || remembered === "active") return remembered;
    const width = editorAreaWidth(layout);
    return width === undefined || width >= MIN_BESIDE_WIDTH ? "beside" : "below";
}

/** A view opened beside the code at this width (CSS px) squeezes both: it should go below. */
export function tooNarrowBeside(viewWidth: number | undefined): boolean {
    return typeof viewWidth === "number" && viewWidth < MIN_BESIDE_WIDTH / 2;
}

/** Where the user has put the view: in a group with code, or in a group of its own beside or below. */
export function placementOf(reportColumn: number | undefined, codeColumns: number[], layout: EditorLayout | undefined): Placement | undefined {
    if (reportColumn === undefined) return undefined;
    if (codeColumns.includes(reportColumn)) return "active";
    return layout?.orientation === 1 ? "below" : "beside";
}
