// Where the report view opens: beside the editor when the window is wide enough for both, else in a group
// below it; once the user moves it, where they put it. No vscode import: unit-tested.

export type Placement = "beside" | "below" | "active";

/** Beside the report, the code keeps at least this width (CSS px), or the report opens below it. */
export const MIN_CODE_WIDTH = 500;
/** Below this editor-area width, beside would squeeze the code under MIN_CODE_WIDTH (the two share it evenly). */
export const MIN_BESIDE_WIDTH = 2 * MIN_CODE_WIDTH;

/** `vscode.getEditorLayout`'s answer: orientation 0 = groups side by side, 1 = stacked; sizes in pixels. */
export interface EditorLayout {
    orientation?: number;
    groups?: GroupLayout[];
}

/** A group (no `groups`) or a row or column of them, turned a quarter from its parent's. */
export interface GroupLayout {
    size?: number;
    groups?: GroupLayout[];
}

/** The editor area's width in pixels, when the layout says it. */
export function editorAreaWidth(layout: EditorLayout | undefined): number | undefined {
    const groups = layout?.groups ?? [];
    if (!groups.length || groups.some((g) => typeof g.size !== "number")) return undefined;
    // Side by side the sizes are widths; stacked (and a lone group is reported stacked), each is a height.
    return layout?.orientation === 0 ? groups.reduce((sum, g) => sum + (g.size as number), 0) : undefined;
}

/**
 * Each editor group's width in pixels, by view column (groups in the order they appear), when the layout says
 * it: a size is a width only in a row of groups side by side; a group stacked in a column has that column's.
 * Groups stacked at the top (a lone group too) are as wide as the editor area: `areaWidth`, when known.
 */
export function columnWidths(layout: EditorLayout | undefined, areaWidth?: number): (number | undefined)[] {
    const widths: (number | undefined)[] = [];
    const walk = (nodes: GroupLayout[], sideBySide: boolean, inherited: number | undefined) => {
        for (const node of nodes) {
            const width = sideBySide ? node.size : inherited;
            if (Array.isArray(node.groups) && node.groups.length) walk(node.groups, !sideBySide, width);
            else widths.push(typeof width === "number" ? width : undefined);
        }
    };
    walk(layout?.groups ?? [], layout?.orientation === 0, areaWidth);
    return widths;
}

/** The remembered placement, else one chosen by width (beside when the width is not known). */
export function choosePlacement(remembered: unknown, layout: EditorLayout | undefined): Placement {
    if (remembered === "beside" || remembered === "below" || remembered === "active") return remembered;
    const width = editorAreaWidth(layout);
    return width === undefined || width >= MIN_BESIDE_WIDTH ? "beside" : "below";
}

/** Beside the report the code has this width (CSS px, its group's, else the view's own: they share evenly): too narrow? */
export function tooNarrowBeside(codeWidth: number | undefined): boolean {
    return typeof codeWidth === "number" && codeWidth < MIN_CODE_WIDTH;
}

/** Where the user has put the view: in a group with code, or in a group of its own beside or below. */
export function placementOf(reportColumn: number | undefined, codeColumns: number[], layout: EditorLayout | undefined): Placement | undefined {
    if (reportColumn === undefined) return undefined;
    if (codeColumns.includes(reportColumn)) return "active";
    return layout?.orientation === 1 ? "below" : "beside";
}
