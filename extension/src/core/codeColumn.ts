// How many characters of a line an editor shows without scrolling sideways, estimated from its group's width
// and its settings as VS Code lays an editor out (gutter, text, minimap, scroll bar). The API gives no pixel
// width of an editor: the width comes from the editor layout (core/placement.ts's columnWidths). No vscode
// import: unit-tested.

/** The settings that decide where an editor's text area ends (`editor.*`, read for the document). */
export interface EditorLook {
    fontSize: number;
    letterSpacing: number;
    lineNumbers: boolean;
    lineCount: number;
    glyphMargin: boolean;
    folding: boolean;
    minimap: { enabled: boolean; maxColumn: number; scale: number };
    verticalScrollbarSize: number;
    /** wrapped text is always in view */
    wordWrap: boolean;
}

export const DEFAULT_LOOK: EditorLook = {
    fontSize: 14, letterSpacing: 0, lineNumbers: true, lineCount: 100, glyphMargin: true, folding: true,
    minimap: { enabled: true, maxColumn: 120, scale: 1 }, verticalScrollbarSize: 14, wordWrap: false,
};

// A monospace digit or letter is about 0.6 em wide (Droid Sans Mono, DejaVu Sans Mono, Menlo; Consolas is
// narrower, so it is underestimated, never over): a column more or less decides whether a figure is cut.
const CHAR_EM = 0.6;
const LINE_HEIGHT_EM = 1.36; // the glyph margin is one line high
const LINE_DECORATIONS_PX = 10; // beside the line numbers (and the folding arrows' 16 px when folding is on)
const FOLDING_PX = 16;
const MIN_LINE_NUMBER_DIGITS = 5;
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
    const digits = Math.max(MIN_LINE_NUMBER_DIGITS, String(Math.max(1, look.lineCount)).length);
    const gutter = (look.glyphMargin ? Math.round(look.fontSize * LINE_HEIGHT_EM) : 0)
        + (look.lineNumbers ? Math.round(digits * char) : 0)
        + LINE_DECORATIONS_PX + (look.folding ? FOLDING_PX : 0);
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
