// Where a line's figure can be read: after the code when it fits in the columns the editor shows, else in a
// shorter form after it, else before the code (at its indentation), so that it never sits past the visible
// edge or under the minimap. No vscode import: unit-tested.

export type FigurePlace = "after" | "before";

export interface FittedFigure {
    text: string;
    place: FigurePlace;
}

/** The columns a figure's margin takes (1.5em of a font whose characters are 0.6em wide), rounded up. */
export const FIGURE_GAP_COLUMNS = 3;
// A column or two of slack: fonts and the minimap's exact width vary a little.
const SLACK_COLUMNS = 2;
const SEPARATOR = " · ";
const GROWING_MARK = "↑";

// East Asian wide characters take two columns (CJK, Hangul, full-width forms).
const WIDE = /[\u1100-\u115f\u2e80-\u303e\u3041-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/u;

/** How many columns `text` takes on screen: tabs to the next tab stop, wide characters two. */
export function displayColumns(text: string, tabSize: number): number {
    let columns = 0;
    for (const char of text) {
        if (char === "\t") columns += tabSize - (columns % tabSize);
        else columns += WIDE.test(char) ? 2 : 1;
    }
    return columns;
}

/**
 * The figure and its shorter forms, longest first: `keeps 2.63 GiB · 89% ↑`, then its first part
 * (`keeps 2.63 GiB ↑`), then the share alone (`89% ↑`); the growing mark stays on each.
 */
export function shorterForms(text: string): string[] {
    const growing = text.endsWith(` ${GROWING_MARK}`);
    const body = growing ? text.slice(0, -GROWING_MARK.length - 1) : text;
    const mark = (form: string) => (growing ? `${form} ${GROWING_MARK}` : form);
    const parts = body.split(SEPARATOR);
    const share = parts.find((part) => /^\d+(\.\d+)?%$/.test(part));
    const forms = [text, mark(parts[0]), ...(share ? [mark(share)] : [])];
    return forms.filter((form, i) => forms.findIndex((other) => other === form) === i && (i === 0 || form.length < text.length));
}

/** Where the figure of a line of `lineText` goes in an editor that shows `columns` columns (undefined: all). */
export function fitFigure(lineText: string, tabSize: number, text: string, columns: number | undefined): FittedFigure {
    if (columns === undefined) return { text, place: "after" };
    const room = columns - SLACK_COLUMNS;
    const end = displayColumns(lineText, tabSize);
    const forms = shorterForms(text);
    const after = forms.find((form) => end + FIGURE_GAP_COLUMNS + form.length <= room);
    if (after !== undefined) return { text: after, place: "after" };
    // Before the code: at the indentation, pushing the line's text right by the figure's width.
    const indent = displayColumns(lineText.slice(0, lineText.length - lineText.trimStart().length), tabSize);
    const before = forms.find((form) => indent + form.length + FIGURE_GAP_COLUMNS <= room) ?? forms[forms.length - 1];
    return { text: before, place: "before" };
}
