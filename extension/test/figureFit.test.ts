import assert from "node:assert/strict";
import { test } from "node:test";
import { cellEditorWidth, cellLook, DEFAULT_LOOK, visibleColumns } from "../src/core/codeColumn";
import { displayColumns, fitFigure, shorterForms } from "../src/core/figureFit";

const STORING = "        self.val_outputs.append(logits.argmax(dim=-1) if self.fixed else logits)"; // 80 columns

test("the figure's shorter forms keep the growing mark and get shorter", () => {
    assert.deepEqual(shorterForms("keeps 2.63 GiB · 89% ↑"), ["keeps 2.63 GiB · 89% ↑", "keeps 2.63 GiB ↑", "89% ↑"]);
    assert.deepEqual(shorterForms("2.63 GiB · 89%"), ["2.63 GiB · 89%", "2.63 GiB", "89%"]);
    assert.deepEqual(shorterForms("1.46 GiB · 1.20 GiB kept by self.val_outputs"), ["1.46 GiB · 1.20 GiB kept by self.val_outputs", "1.46 GiB"]);
    assert.deepEqual(shorterForms("stale · changed since the capture"), ["stale · changed since the capture", "stale"]);
    assert.deepEqual(shorterForms("92%"), ["92%"]);
});

test("a figure that fits stays after the code, whole", () => {
    assert.deepEqual(fitFigure("x = f(y)", 4, "2.63 GiB · 89% ↑", 60), { text: "2.63 GiB · 89% ↑", place: "after" });
    assert.deepEqual(fitFigure(STORING, 4, "keeps 2.63 GiB · 89% ↑", undefined), { text: "keeps 2.63 GiB · 89% ↑", place: "after" }); // width unknown
});

test("a figure that would run past the visible edge is shortened, else drawn before the code", () => {
    const line = "        logits = self(tokens[:, :-1])  # forward"; // 47 columns
    assert.deepEqual(fitFigure(line, 4, "keeps 2.63 GiB · 89% ↑", 60), { text: "89% ↑", place: "after" });
    assert.deepEqual(fitFigure(line, 4, "keeps 2.63 GiB · 89% ↑", 70), { text: "keeps 2.63 GiB ↑", place: "after" });
    // The line itself runs past the edge: the whole figure at its indentation.
    assert.deepEqual(fitFigure(STORING, 4, "keeps 2.63 GiB · 89% ↑", 54), { text: "keeps 2.63 GiB · 89% ↑", place: "before" });
    // Too narrow even for that: the shortest form, before the code.
    assert.deepEqual(fitFigure(STORING, 4, "keeps 2.63 GiB · 89% ↑", 16), { text: "89% ↑", place: "before" });
});

test("tabs and wide characters take their columns on screen", () => {
    assert.equal(displayColumns("\tx", 4), 5);
    assert.equal(displayColumns("ab\tx", 4), 5);
    assert.equal(displayColumns("名前 = 1", 4), 8);
});

test("the columns an editor shows: its group's width less gutter, minimap and scroll bar", () => {
    // A 620 px code column beside the report (1600 px window): about 54 columns with the minimap, 66 without.
    const withMinimap = visibleColumns(620, DEFAULT_LOOK)!;
    const without = visibleColumns(620, { ...DEFAULT_LOOK, minimap: { ...DEFAULT_LOOK.minimap, enabled: false } })!;
    assert.ok(withMinimap >= 50 && withMinimap <= 58, `${withMinimap}`);
    assert.ok(without >= 60 && without <= 68, `${without}`);
    // The minimap stops growing at maxColumn: a wide editor loses 120 px + its gutter to it, no more.
    const wide = visibleColumns(2000, DEFAULT_LOOK)!;
    const wideWithout = visibleColumns(2000, { ...DEFAULT_LOOK, minimap: { ...DEFAULT_LOOK.minimap, enabled: false } })!;
    assert.equal(wideWithout - wide, Math.round(128 / 8.4));
    assert.equal(visibleColumns(undefined, DEFAULT_LOOK), undefined);
    assert.equal(visibleColumns(620, { ...DEFAULT_LOOK, wordWrap: true }), undefined); // wrapped: all in view
    assert.ok(visibleColumns(620, { ...DEFAULT_LOOK, fontSize: 20 })! < withMinimap);
});

test("a notebook cell's columns: its notebook's width less the cell's margins, in the cell editor's look", () => {
    // The margins VS Code gives a code cell without the compact view (28 + 32 + 16 px), the wider of its two layouts.
    assert.equal(cellEditorWidth(620), 620 - 76);
    assert.equal(cellEditorWidth(undefined), undefined);
    assert.equal(cellEditorWidth(0), undefined);
    assert.equal(visibleColumns(cellEditorWidth(undefined), cellLook(DEFAULT_LOOK, false)), undefined); // its notebook not found
    const look = cellLook(DEFAULT_LOOK, false);
    assert.equal(look.minimap.enabled, false);
    assert.equal(look.folding, true);
    assert.equal(look.glyphMargin, DEFAULT_LOOK.glyphMargin); // not fixed for cells: the editor setting's
    assert.equal(cellLook({ ...DEFAULT_LOOK, glyphMargin: false }, false).glyphMargin, false);
    // 544 px less glyph margin (19), folding (16) and scroll bar (14 + 2): 493 px of 8.4 px characters.
    assert.equal(visibleColumns(cellEditorWidth(620), look), 58);
    // Line numbers (notebook.lineNumbers "on"): at least 3 digits, 25 px more.
    assert.equal(visibleColumns(cellEditorWidth(620), cellLook(DEFAULT_LOOK, true)), 55);
    // A file editor in a group as wide shows fewer: its minimap, 5-digit line numbers and line decorations.
    assert.ok(visibleColumns(620, DEFAULT_LOOK)! < visibleColumns(cellEditorWidth(620), cellLook(DEFAULT_LOOK, true))!);
    // The compact view's narrower margins (8 + 36 + 16 px) leave at least as many columns as counted.
    assert.ok(visibleColumns(620 - 60, look)! >= visibleColumns(cellEditorWidth(620), look)!);
    // Wrapped cell text is all in view, as in a file.
    assert.equal(visibleColumns(cellEditorWidth(620), cellLook({ ...DEFAULT_LOOK, wordWrap: true }, false)), undefined);
});

test("a long cell line beside the report gets its figure before the code; the notebook alone, after it", () => {
    const line = 'big = torch.empty(3 * 2**30, dtype=torch.uint8, device="cuda")'; // 62 columns
    const figure = "3.00 GiB · 62%";
    const look = cellLook(DEFAULT_LOOK, false);
    assert.deepEqual(fitFigure(line, 4, figure, visibleColumns(cellEditorWidth(575), look)), { text: figure, place: "before" });
    assert.deepEqual(fitFigure(line, 4, figure, visibleColumns(cellEditorWidth(1150), look)), { text: figure, place: "after" });
});
