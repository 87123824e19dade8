// `train.py:20` in the report's sentences, as pieces: plain text and the labels the server can open
// (the payload's `links`). Pure: unit-tested.

export interface LineLink {
    label: string;
    uri: string;
    line: number;
}

export type Piece = string | LineLink;

const TOKEN = /[\w.\-/]+\.py:\d+/g;

/** `text` split around every token that names a linked line; other tokens stay text (not on this machine). */
export function linkPieces(text: string, links: readonly LineLink[]): Piece[] {
    const byLabel = new Map(links.map((link) => [link.label, link]));
    const pieces: Piece[] = [];
    let last = 0;
    for (const match of text.matchAll(TOKEN)) {
        // A recorded path (`/srv/app/train.py:20`) is linked by its file name, as the server labels lines.
        const label = match[0].split("/").pop()!;
        const link = byLabel.get(label);
        if (!link) continue;
        if (match.index! > last) pieces.push(text.slice(last, match.index));
        pieces.push(link);
        last = match.index! + match[0].length;
    }
    if (last < text.length) pieces.push(text.slice(last));
    return pieces;
}
