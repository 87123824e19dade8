// The reproducibility report's Markdown as HTML, with markdown-it (MIT, bundled: no CDN). Raw HTML in the
// source is disabled, so it comes out as text; links keep only file: and http(s): targets and never navigate
// the view (report.ts turns file:line links into "open the line"). Pure: unit-tested under node.
import MarkdownIt from "markdown-it";

const renderer = new MarkdownIt({ html: false, linkify: false, typographer: false });
// markdown-it already refuses javascript:, vbscript:, file: and data: (but images) as link targets.
const SAFE_LINK = /^(https?:|#)/i;
renderer.validateLink = (url: string) => SAFE_LINK.test(url.trim());

export function renderMarkdown(source: string): string {
    return renderer.render(source);
}
