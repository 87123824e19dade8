// From the server's `vramlens/lineAnnotations` answer to what the editor draws: which lines get which shade
// (and overview-ruler mark), and which end-of-line text. No vscode import: unit-tested.
import type { AnnotationStyle } from "./serverSettings";

/** One entry of `vramlens/lineAnnotations` (docs/lsp-protocol.md). */
export interface LineAnnotation {
    line: number; // 0-based in the document's current text
    text: string; // short: `2.63 GiB · 89% ↑`
    longText?: string; // the same in words, for a tooltip
    share: number; // 0..1 of the peak
    liveBytes: number;
    growing: boolean;
    stale: boolean;
    hover: string;
}

/** Shade levels 1..SHADE_LEVELS, each a theme colour `vramlens.lineShadeN` (package.json contributes.colors). */
export const SHADE_LEVELS = 5;

export interface DecorationPlan {
    /** shades[level - 1]: the lines drawn, with their overview-ruler mark, in `vramlens.lineShade<level>` */
    shades: number[][];
    /** end-of-line text (style endOfLine only); stale lines use the stale colour */
    endOfLine: { line: number; text: string; longText: string; stale: boolean; churn: boolean }[];
}

/** The level whose colour shades a line holding `share` of the peak: one level per fifth, any share > 0 shows. */
export function shadeLevel(share: number): number {
    if (!(share > 0)) return 0;
    return Math.min(SHADE_LEVELS, Math.ceil(Math.min(share, 1) * SHADE_LEVELS));
}

function isAnnotation(value: unknown): value is LineAnnotation {
    const a = value as LineAnnotation;
    return !!a && Number.isInteger(a.line) && a.line >= 0 && typeof a.text === "string" && typeof a.share === "number";
}

/** What to draw in a document of `lineCount` lines; lines outside it (the file shrank) are skipped. */
export function planDecorations(annotations: unknown, style: AnnotationStyle, lineCount: number): DecorationPlan {
    const plan: DecorationPlan = { shades: Array.from({ length: SHADE_LEVELS }, () => []), endOfLine: [] };
    if (style === "off" || !Array.isArray(annotations)) return plan;
    for (const annotation of annotations.filter(isAnnotation)) {
        if (annotation.line >= lineCount) continue;
        if (style === "endOfLine") {
            // A line that only churned (nothing of it live at the moment) is drawn quieter than one that holds memory.
            plan.endOfLine.push({ line: annotation.line, text: annotation.text, longText: annotation.longText ?? annotation.text,
                stale: !!annotation.stale, churn: !(annotation.liveBytes > 0) });
        }
        // A stale line's figure belongs to text that is gone: no shade, no mark.
        const level = annotation.stale ? 0 : shadeLevel(annotation.share);
        if (level > 0) plan.shades[level - 1].push(annotation.line);
    }
    return plan;
}
