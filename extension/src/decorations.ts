// Draws the server's per-line figures in visible Python editors: a background shade and overview-ruler mark
// by share of the peak, and GitLens-style end-of-line text when the annotation style asks for it.
// Which line gets what comes from core/annotations.ts; the figures come from `vramlens/lineAnnotations`.
import * as vscode from "vscode";
import { LineAnnotation, planDecorations, SHADE_LEVELS } from "./core/annotations";
import { log } from "./logging";
import { ServerManager } from "./server";
import { serverSettings } from "./settings";

// Edits move annotations on the server: ask again once typing pauses.
const EDIT_PAUSE_MS = 300;

export class LineDecorations implements vscode.Disposable {
    private readonly shades: vscode.TextEditorDecorationType[];
    // Clear of the code (1.5em), in a colour that stays readable over the strongest shade in every theme kind.
    private readonly endOfLine = vscode.window.createTextEditorDecorationType({
        after: { color: new vscode.ThemeColor("vramlens.annotationForeground"), margin: "0 0 0 1.5em", fontWeight: "600" },
        rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    });
    private readonly churnEndOfLine = vscode.window.createTextEditorDecorationType({
        after: { color: new vscode.ThemeColor("vramlens.churnForeground"), margin: "0 0 0 1.5em" },
        rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    });
    private readonly staleEndOfLine = vscode.window.createTextEditorDecorationType({
        after: { color: new vscode.ThemeColor("vramlens.staleForeground"), margin: "0 0 0 1.5em", fontStyle: "italic" },
        rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    });
    private readonly subscriptions: vscode.Disposable[] = [];
    private editTimer: NodeJS.Timeout | undefined;

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
            }),
        );
    }

    /** Removes every drawn figure now, before the server confirms (Clear annotations). */
    clear(): void {
        for (const editor of vscode.window.visibleTextEditors) this.apply(editor, []);
    }

    refreshAll(): void {
        for (const editor of vscode.window.visibleTextEditors) {
            if (editor.document.languageId === "python") void this.refresh(editor);
        }
    }

    private async refresh(editor: vscode.TextEditor): Promise<void> {
        const uri = editor.document.uri.toString();
        try {
            const answer = await this.server.request<{ annotations?: LineAnnotation[] }>("vramlens/lineAnnotations", { uri });
            this.apply(editor, answer?.annotations ?? []);
        } catch (error) {
            log().warn(`Line annotations for ${uri}: ${String(error)}`);
        }
    }

    private apply(editor: vscode.TextEditor, annotations: LineAnnotation[]): void {
        const style = serverSettings(editor.document.uri).annotationStyle;
        const plan = planDecorations(annotations, style, editor.document.lineCount);
        const lineRange = (line: number) => editor.document.lineAt(line).range;
        plan.shades.forEach((lines, i) => editor.setDecorations(this.shades[i], lines.map(lineRange)));
        const endOfLine = (kind: "live" | "churn" | "stale"): vscode.DecorationOptions[] =>
            plan.endOfLine
                .filter((entry) => (entry.stale ? "stale" : entry.churn ? "churn" : "live") === kind)
                .map((entry) => {
                    const end = lineRange(entry.line).end;
                    // The figure is short; its words are its tooltip (the line's own hover has the details).
                    return { range: new vscode.Range(end, end), hoverMessage: entry.longText, renderOptions: { after: { contentText: entry.text } } };
                });
        editor.setDecorations(this.endOfLine, endOfLine("live"));
        editor.setDecorations(this.churnEndOfLine, endOfLine("churn"));
        editor.setDecorations(this.staleEndOfLine, endOfLine("stale"));
    }

    dispose(): void {
        clearTimeout(this.editTimer);
        for (const d of [...this.subscriptions, ...this.shades, this.endOfLine, this.churnEndOfLine, this.staleEndOfLine]) d.dispose();
    }
}
