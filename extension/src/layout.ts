// The editor area's layout as VS Code reports it (`vscode.getEditorLayout`): where groups sit and how wide.
import * as vscode from "vscode";
import type { EditorLayout } from "./core/placement";

export async function editorLayout(): Promise<EditorLayout | undefined> {
    try {
        return await vscode.commands.executeCommand<EditorLayout>("vscode.getEditorLayout");
    } catch {
        return undefined; // an editor without the command: widths unknown
    }
}
