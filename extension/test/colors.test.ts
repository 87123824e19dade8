// The end-of-line figure must stay readable over the strongest line shade in light, dark and high-contrast
// themes: WCAG contrast of `vramlens.annotationForeground` over `vramlens.lineShade5` blended onto each theme
// kind's default editor background, from the colours package.json contributes.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
const colours = Object.fromEntries(manifest.contributes.colors.map((c: any) => [c.id, c.defaults]));
// Default editor backgrounds of Dark Modern, Light Modern and the high-contrast themes.
const BACKGROUNDS = { dark: "#1f1f1f", light: "#ffffff", highContrast: "#000000", highContrastLight: "#ffffff" } as const;

function rgba(hex: string): [number, number, number, number] {
    const h = hex.replace("#", "");
    const v = (i: number) => parseInt(h.slice(i, i + 2), 16);
    return [v(0), v(2), v(4), h.length === 8 ? v(6) / 255 : 1];
}

function over(top: string, bottom: string): [number, number, number] {
    const [r, g, b, a] = rgba(top);
    const [R, G, B] = rgba(bottom);
    return [r * a + R * (1 - a), g * a + G * (1 - a), b * a + B * (1 - a)];
}

function luminance([r, g, b]: [number, number, number]): number {
    const c = (v: number) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * c(r) + 0.7152 * c(g) + 0.0722 * c(b);
}

function contrast(a: [number, number, number], b: [number, number, number]): number {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
}

for (const [kind, background] of Object.entries(BACKGROUNDS)) {
    test(`figures over the strongest shade are readable in ${kind} themes`, () => {
        const key = kind as keyof typeof BACKGROUNDS;
        const shade = colours["vramlens.lineShade5"][key] ?? colours["vramlens.lineShade5"].highContrast;
        const fg = colours["vramlens.annotationForeground"][key] ?? colours["vramlens.annotationForeground"].highContrast;
        for (const level of [1, 5]) {
            const s = colours[`vramlens.lineShade${level}`][key] ?? colours[`vramlens.lineShade${level}`].highContrast ?? shade;
            const ratio = contrast(over(fg, over(s, background).map((v) => Math.round(v).toString(16).padStart(2, "0")).reduce((h, p) => h + p, "#")), over(s, background));
            assert.ok(ratio >= 4.5, `${kind}, shade ${level}: contrast ${ratio.toFixed(2)} < 4.5`);
        }
    });
}

for (const [kind, background] of Object.entries(BACKGROUNDS)) {
    test(`a churn-only line's quieter figure is still readable in ${kind} themes`, () => {
        const key = kind as keyof typeof BACKGROUNDS;
        const fg = colours["vramlens.churnForeground"][key] ?? colours["vramlens.churnForeground"].highContrast;
        const ratio = contrast(over(fg, background), over(background, background));
        assert.ok(ratio >= 4.5, `${kind}: contrast ${ratio.toFixed(2)} < 4.5`);
    });
}
