// How many characters of a line an editor shows without scrolling sideways, estimated from its group's width
// and its settings as VS Code lays an editor out (gutter, text, minimap, scroll bar). The API gives no pixel
// width of an editor: the width comes from the editor layout (core/placement.ts's columnWidths); a notebook
// cell's editor is its notebook's group less the cell's margins (cellEditorWidth). No vscode import: unit-tested.

/** The settings that decide where an editor's text area ends (`editor.*`, read for the document). */
export interface EditorLook {
    fontSize: number;
    letterSpacing: number;
    lineNumbers: boolean;
    lineCount: number;
    glyphMargin: boolean;
    folding: boolean;
    /** px beside the line numbers (`editor.lineDecorationsWidth`; a notebook cell has none) */
    lineDecorationsWidth: number;
    /** the line numbers take at least this many digits' width (`editor.lineNumbersMinChars`) */
    lineNumbersMinChars: number;
    minimap: { enabled: boolean; maxColumn: number; scale: number };
    verticalScrollbarSize: number;
    /** wrapped text is always in view */
    wordWrap: boolean;
}

export const DEFAULT_LOOK: EditorLook = {
    fontSize: 14, letterSpacing: 0, lineNumbers: true, lineCount: 100, glyphMargin: true, folding: true,
    lineDecorationsWidth: 10, lineNumbersMinChars: 5, minimap: { enabled: true, maxColumn: 120, scale: 1 }, verticalScrollbarSize: 14, wordWrap: false,
};

// A monospace digit or letter is about 0.6 em wide (Droid Sans Mono, DejaVu Sans Mono, Menlo; Consolas is
// narrower, so it is underestimated, never over): a column more or less decides whether a figure is cut.
const CHAR_EM = 0.6;
const LINE_HEIGHT_EM = 1.36; // the glyph margin is one line high
const FOLDING_PX = 16; // the folding arrows, beside the line decorations
const MINIMAP_GUTTER_PX = 8;

/** One character's width in CSS pixels. */
export function characterWidth(look: EditorLook): number {
    return look.fontSize * CHAR_EM + look.letterSpacing;
}

/**
 * The characters a `width`-pixel editor shows before its text runs under the minimap or off the edge; undefined
 * when the width is not known or the text wraps (everything is in view).
 */
export function visibleColumns(width: number | undefined, look: EditorLook): number | undefined {
    if (typeof width !== "number" || !(width > 0) || look.wordWrap) return undefined;
    const char = characterWidth(look);
    const digits = Math.max(look.lineNumbersMinChars, String(Math.max(1, look.lineCount)).length);
    const gutter = (look.glyphMargin ? Math.round(look.fontSize * LINE_HEIGHT_EM) : 0)
        + (look.lineNumbers ? Math.round(digits * char) : 0)
        + look.lineDecorationsWidth + (look.folding ? FOLDING_PX : 0);
    const remaining = width - gutter;
    const text = remaining - minimapWidth(remaining, look) - look.verticalScrollbarSize - 2;
    return Math.max(0, Math.floor(text / char));
}

/** The minimap's width as VS Code sizes it: a column of it per column of text, up to maxColumn (at a pixel ratio of 1). */
function minimapWidth(remaining: number, look: EditorLook): number {
    if (!look.minimap.enabled) return 0;
    const column = Math.max(0.5, look.minimap.scale);
    const widest = Math.floor(look.minimap.maxColumn * column);
    const proportional = Math.floor(((remaining - look.verticalScrollbarSize - 2) * column) / (characterWidth(look) + column));
    return Math.min(widest, Math.max(0, proportional)) + MINIMAP_GUTTER_PX;
}

// A notebook's code cell, as VS Code lays it out (computeCodeCellEditorWidth in
// src/vs/workbench/contrib/notebook/browser/notebookOptions.ts; the same in Code 1.139): the cell's editor is the
// notebook's width less the cell's left margin, the gutter of its run button and its right margin: 8 + 36 + 16 px in
// the compact view (the default), 28 + 32 + 16 px without it. The larger, so a figure is never taken to fit where it
// does not.
export const NOTEBOOK_CELL_CHROME_PX = 28 + 32 + 16;

/** A code cell's editor width in a notebook editor `notebookWidth` px wide (its group's width), when known. */
export function cellEditorWidth(notebookWidth: number | undefined): number | undefined {
    if (typeof notebookWidth !== "number" || !(notebookWidth > 0)) return undefined;
    return Math.max(0, notebookWidth - NOTEBOOK_CELL_CHROME_PX);
}

/**
 * A code cell editor's look, from the file editor's settings for its language: VS Code fixes some of them for cells
 * (BaseCellEditorOptions.fixedEditorOptions, src/vs/workbench/contrib/notebook/browser/viewModel/cellEditorOptions.ts;
 * the same in Code 1.139): no minimap, no line-decorations width, folding on, line numbers at least 3 digits
 * wide, a 14 px vertical scroll bar (a code cell hides it: counted all the same, erring towards fewer columns). The
 * glyph margin is the editor setting's (not fixed for cells). Line numbers follow `notebook.lineNumbers` (off by
 * default), not `editor.lineNumbers`: `lineNumbers` says whether this cell shows them.
 */
export function cellLook(editor: EditorLook, lineNumbers: boolean): EditorLook {
    return {
        ...editor,
        lineNumbers,
        minimap: { ...editor.minimap, enabled: false },
        lineDecorationsWidth: 0,
        folding: true,
        lineNumbersMinChars: 3,
        verticalScrollbarSize: 14,
    };
}
