// The server's sentences quote code between single backticks (`outputs.append(out)`), as its Markdown does
// (analysis/rendering/markdown_safe.py's sentence): here they are split into text and code pieces, so the
// view draws the code as code instead of showing the backticks. Pure: unit-tested; report.ts puts each piece
// in as text (textContent), never as HTML.

export interface Span {
    code: boolean;
    text: string;
}

// A well-formed span: one backtick, at least one character that is not a backtick, one backtick.
const CODE_SPAN = /`([^`]+)`/g;

export function codeSpans(text: string): Span[] {
    const spans: Span[] = [];
    let last = 0;
    for (const match of text.matchAll(CODE_SPAN)) {
        if (match.index! > last) spans.push({ code: false, text: text.slice(last, match.index) });
        spans.push({ code: true, text: match[1] });
        last = match.index! + match[0].length;
    }
    if (last < text.length || !spans.length) spans.push({ code: false, text: text.slice(last) });
    return spans;
}
