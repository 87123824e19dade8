// Draws the server's per-line figures in visible Python editors: a background shade and overview-ruler mark
// by share of the peak, and GitLens-style end-of-line text when the annotation style asks for it.
// Which line gets what comes from core/annotations.ts; the figures come from `vramlens/lineAnnotations`;
// a figure that would run past what the editor shows is shortened or drawn before the code (core/figureFit.ts).
import * as vscode from "vscode";
import { LineAnnotation, planDecorations, SHADE_LEVELS } from "./core/annotations";
import { cellEditorWidth, cellLook, DEFAULT_LOOK, EditorLook, visibleColumns } from "./core/codeColumn";
import { FigurePlace, fitFigure } from "./core/figureFit";
import { columnWidths, editorAreaWidth } from "./core/placement";
import { editorLayout } from "./layout";
import { log } from "./logging";
import { ServerManager } from "./server";
import { serverSettings } from "./settings";

// Edits move annotations on the server: ask again once typing pauses.
const EDIT_PAUSE_MS = 300;
// Groups open, close and resize in steps: fit the figures again once the layout has settled.
const LAYOUT_PAUSE_MS = 200;

type FigureKind = "live" | "churn" | "stale";
const FIGURE_KINDS: FigureKind[] = ["live", "churn", "stale"];
const PLACES: FigurePlace[] = ["after", "before"];

// In a colour that stays readable over the strongest shade in every theme kind; a churn-only line quieter.
const FIGURE_LOOK: Record<FigureKind, vscode.ThemableDecorationAttachmentRenderOptions> = {
    live: { color: new vscode.ThemeColor("vramlens.annotationForeground"), fontWeight: "600" },
    churn: { color: new vscode.ThemeColor("vramlens.churnForeground") },
    stale: { color: new vscode.ThemeColor("vramlens.staleForeground"), fontStyle: "italic" },
};

export class LineDecorations implements vscode.Disposable {
    private readonly shades: vscode.TextEditorDecorationType[];
    // One type per kind and place; clear of the code by 1.5em on the side that faces it.
    private readonly figures = new Map<string, vscode.TextEditorDecorationType>(FIGURE_KINDS.flatMap((kind) => PLACES.map((place) => [
        `${kind} ${place}`,
        vscode.window.createTextEditorDecorationType({
            [place]: { ...FIGURE_LOOK[kind], margin: place === "after" ? "0 0 0 1.5em" : "0 1.5em 0 0" },
            rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
        }),
    ])));
    // The server's last answer per document: a new layout fits the same figures again without asking.
    private readonly latest = new Map<string, LineAnnotation[]>();
    // What each editor's figures were fitted to (its columns and tab size): a scroll or a resize that keeps
    // both draws nothing again.
    private readonly fittedTo = new WeakMap<vscode.TextEditor, string>();
    // The editor area's width, last seen with groups side by side: the layout gives no width for stacked
    // groups (the report below the code) or a lone one, which are as wide. Stale after a resize, until seen again.
    private areaWidth: number | undefined;
    private readonly subscriptions: vscode.Disposable[] = [];
    private editTimer: NodeJS.Timeout | undefined;
    private layoutTimer: NodeJS.Timeout | undefined;

    constructor(private readonly server: ServerManager) {
        this.shades = Array.from({ length: SHADE_LEVELS }, (_, i) => {
            const colour = new vscode.ThemeColor(`vramlens.lineShade${i + 1}`);
            return vscode.window.createTextEditorDecorationType({
                isWholeLine: true,
                backgroundColor: colour,
                overviewRulerColor: colour,
                overviewRulerLane: vscode.OverviewRulerLane.Right,
            });
        });
        const relayout = () => this.relayout();
        this.subscriptions.push(
            server.onAnnotationsChanged(() => this.refreshAll()),
            vscode.window.onDidChangeVisibleTextEditors(() => this.refreshAll()),
            vscode.workspace.onDidChangeTextDocument((event) => {
                if (event.document.languageId !== "python" || event.contentChanges.length === 0) return;
                clearTimeout(this.editTimer);
                this.editTimer = setTimeout(() => this.refreshAll(), EDIT_PAUSE_MS);
            }),
            vscode.workspace.onDidChangeConfiguration((event) => {
                if (event.affectsConfiguration("vramlens.annotationStyle")) this.refreshAll();
                else if (event.affectsConfiguration("editor") || event.affectsConfiguration("notebook.lineNumbers")) relayout();
            }),
            // What changes an editor's width: groups opening, closing or moving. VS Code tells an extension of no
            // window resize: the report view reports its own (ReportPanel.onDidResize, wired in extension.ts); without
            // it open, the next change of visible ranges (a scroll, a taller window) or of groups fits them again.
            vscode.window.tabGroups.onDidChangeTabGroups(relayout),
            vscode.window.onDidChangeTextEditorViewColumn(relayout),
            vscode.window.onDidChangeTextEditorOptions(relayout),
            vscode.window.onDidChangeTextEditorVisibleRanges(relayout),
        );
    }

    /** Fits the figures already drawn to the editors' widths again, once the layout has settled. */
    relayout(): void {
        clearTimeout(this.layoutTimer);
        this.layoutTimer = setTimeout(() => void this.redrawAll(), LAYOUT_PAUSE_MS);
    }

    /** Removes every drawn figure now, before the server confirms (Clear annotations). */
    clear(): void {
        this.latest.clear();
        for (const editor of vscode.window.visibleTextEditors) this.apply(editor, [], []);
    }

    refreshAll(): void {
        void this.layout().then((widths) => {
            for (const editor of vscode.window.visibleTextEditors) {
                if (editor.document.languageId === "python") void this.refresh(editor, widths);
            }
        });
    }

    /** Draws the figures already known again, fitted to the editors' widths now. */
    private async redrawAll(): Promise<void> {
        const widths = await this.layout();
        for (const editor of vscode.window.visibleTextEditors) {
            const annotations = this.latest.get(editor.document.uri.toString());
            if (annotations && this.fittedTo.get(editor) !== fitKey(editor, widths)) {
                this.apply(editor, annotations, widths);
            }
        }
    }

    /** The editor layout now, with the width of each group by view column (the area's width remembered). */
    private async layout(): Promise<(number | undefined)[]> {
        const layout = await editorLayout();
        this.areaWidth = editorAreaWidth(layout) ?? this.areaWidth;
        return columnWidths(layout, this.areaWidth);
    }

    private async refresh(editor: vscode.TextEditor, widths: (number | undefined)[]): Promise<void> {
        const uri = editor.document.uri.toString();
        try {
            const answer = await this.server.request<{ annotations?: LineAnnotation[] }>("vramlens/lineAnnotations", { uri });
            const annotations = answer?.annotations ?? [];
            this.latest.set(uri, annotations);
            this.apply(editor, annotations, widths);
        } catch (error) {
            log().warn(`Line annotations for ${uri}: ${String(error)}`);
        }
    }

    private apply(editor: vscode.TextEditor, annotations: LineAnnotation[], widths: (number | undefined)[]): void {
        const style = serverSettings(editor.document.uri).annotationStyle;
        const plan = planDecorations(annotations, style, editor.document.lineCount);
        const lineAt = (line: number) => editor.document.lineAt(line);
        plan.shades.forEach((lines, i) => editor.setDecorations(this.shades[i], lines.map((line) => lineAt(line).range)));
        const columns = columnsOf(editor, widths);
        const tabSize = tabSizeOf(editor);
        this.fittedTo.set(editor, fitKey(editor, widths));
        const drawn = new Map<string, vscode.DecorationOptions[]>([...this.figures.keys()].map((key) => [key, []]));
        for (const entry of plan.endOfLine) {
            const line = lineAt(entry.line);
            const figure = fitFigure(line.text, tabSize, entry.text, columns);
            const at = figure.place === "after" ? line.range.end : new vscode.Position(entry.line, line.firstNonWhitespaceCharacterIndex);
            const kind: FigureKind = entry.stale ? "stale" : entry.churn ? "churn" : "live";
            // The figure is short; its words are its tooltip (the line's own hover has the details).
            drawn.get(`${kind} ${figure.place}`)!.push({
                range: new vscode.Range(at, at), hoverMessage: entry.longText, renderOptions: { [figure.place]: { contentText: figure.text } },
            });
        }
        for (const [key, type] of this.figures) editor.setDecorations(type, drawn.get(key)!);
    }

    dispose(): void {
        clearTimeout(this.editTimer);
        clearTimeout(this.layoutTimer);
        for (const d of [...this.subscriptions, ...this.shades, ...this.figures.values()]) d.dispose();
    }
}

function tabSizeOf(editor: vscode.TextEditor): number {
    return typeof editor.options.tabSize === "number" ? editor.options.tabSize : 4;
}

function fitKey(editor: vscode.TextEditor, widths: (number | undefined)[]): string {
    return `${columnsOf(editor, widths)} ${tabSizeOf(editor)}`;
}

/** The columns the editor shows (`widths`: each group's by view column), undefined when not known. */
function columnsOf(editor: vscode.TextEditor, widths: (number | undefined)[]): number | undefined {
    if (editor.document.uri.scheme !== "vscode-notebook-cell") {
        return visibleColumns(editor.viewColumn === undefined ? undefined : widths[editor.viewColumn - 1], editorLook(editor));
    }
    // A cell's editor sits in the notebook editor that shows its notebook, in that editor's group.
    const uri = editor.document.uri.toString();
    const notebook = vscode.window.visibleNotebookEditors.find((shown) => shown.notebook.getCells().some((cell) => cell.document.uri.toString() === uri));
    const column = notebook?.viewColumn;
    const notebookWidth = column === undefined ? undefined : widths[column - 1];
    const numbers = vscode.workspace.getConfiguration("notebook", notebook?.notebook.uri).get<string>("lineNumbers", "off") === "on"
        // a cell can show its numbers on its own (Show Cell Line Numbers): as the cell's editor reports them
        || (editor.options.lineNumbers !== undefined && editor.options.lineNumbers !== vscode.TextEditorLineNumbersStyle.Off);
    return visibleColumns(cellEditorWidth(notebookWidth), cellLook(editorLook(editor), numbers));
}

/** The document's `editor.*` settings that decide how wide its text area is. */
function editorLook(editor: vscode.TextEditor): EditorLook {
    const settings = vscode.workspace.getConfiguration("editor", editor.document);
    const number = (key: string, fallback: number) => {
        const value = settings.get<unknown>(key);
        return typeof value === "number" && Number.isFinite(value) ? value : fallback;
    };
    const lineNumbers = editor.options.lineNumbers;
    return {
        fontSize: number("fontSize", DEFAULT_LOOK.fontSize),
        letterSpacing: number("letterSpacing", DEFAULT_LOOK.letterSpacing),
        lineNumbers: lineNumbers === undefined ? DEFAULT_LOOK.lineNumbers : lineNumbers !== vscode.TextEditorLineNumbersStyle.Off,
        lineCount: editor.document.lineCount,
        glyphMargin: settings.get<boolean>("glyphMargin", DEFAULT_LOOK.glyphMargin),
        folding: settings.get<boolean>("folding", DEFAULT_LOOK.folding),
        lineDecorationsWidth: number("lineDecorationsWidth", DEFAULT_LOOK.lineDecorationsWidth), // "1ch" and the like: as by default
        lineNumbersMinChars: number("lineNumbersMinChars", DEFAULT_LOOK.lineNumbersMinChars),
        minimap: {
            enabled: settings.get<boolean>("minimap.enabled", DEFAULT_LOOK.minimap.enabled),
            maxColumn: number("minimap.maxColumn", DEFAULT_LOOK.minimap.maxColumn),
            scale: number("minimap.scale", DEFAULT_LOOK.minimap.scale),
        },
        verticalScrollbarSize: number("scrollbar.verticalScrollbarSize", DEFAULT_LOOK.verticalScrollbarSize),
        // "wordWrapColumn" may wrap past the visible edge: as if not wrapped.
        wordWrap: ["on", "bounded"].includes(settings.get<string>("wordWrap", "off")),
    };
}
