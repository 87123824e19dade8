// The reproducibility report's Markdown as HTML, with markdown-it (MIT, bundled: no CDN). Raw HTML in the
// source is disabled, so it comes out as text; links keep only file: and http(s): targets and never navigate
// the view (report.ts turns file:line links into "open the line"). Pure: unit-tested under node.
import MarkdownIt from "markdown-it";

const renderer = new MarkdownIt({ html: false, linkify: false, typographer: false });
// markdown-it already refuses javascript:, vbscript:, file: and data: (but images) as link targets.
const SAFE_LINK = /^(https?:|#)/i;
renderer.validateLink = (url: string) => SAFE_LINK.test(url.trim());

// A table column's alignment comes out as a `style` attribute, which the view's CSP (no inline styles)
// refuses with a console error per cell: it becomes a class that media/report.css aligns.
const ALIGN = /^text-align:(left|right|center)$/;
renderer.core.ruler.push("alignment_classes", (state) => {
    for (const token of state.tokens) {
        if (token.type !== "th_open" && token.type !== "td_open") continue;
        const style = token.attrGet("style");
        if (style === null) continue;
        token.attrs = (token.attrs ?? []).filter(([name]) => name !== "style");
        const align = ALIGN.exec(style.trim());
        if (align) token.attrJoin("class", `align-${align[1]}`);
    }
    return true;
});

export function renderMarkdown(source: string): string {
    return renderer.render(source);
}
