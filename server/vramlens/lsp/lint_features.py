"""Lint findings as LSP diagnostics and quick fixes (same engine and edits as `vramlens lint --fix`)."""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from vramlens.lint import Finding, Fix, apply_fix, lint_source

SOURCE = "vramlens"
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


def _range(document: TextDocument, line: int, column: int, end_line: int, end_column: int) -> types.Range:
    """Engine positions (1-based lines, code-point columns) to the client's position encoding."""
    server_range = types.Range(
        start=types.Position(line=line - 1, character=column),
        end=types.Position(line=end_line - 1, character=end_column),
    )
    return document.position_codec.range_to_client_units(document.lines, server_range)


def to_diagnostic(document: TextDocument, finding: Finding) -> types.Diagnostic:
    return types.Diagnostic(
        range=_range(document, finding.line, finding.column, finding.end_line, finding.end_column),
        message=finding.message,
        severity=_SEVERITY[finding.severity],
        code=finding.code,
        source=SOURCE,
        data={"rule": finding.rule, "code": finding.code},
    )


def to_workspace_edit(document: TextDocument, fix: Fix) -> types.WorkspaceEdit:
    edits = [
        types.TextEdit(range=_range(document, e.line, e.column, e.end_line, e.end_column), new_text=e.new_text)
        for e in fix.edits
    ]
    return types.WorkspaceEdit(changes={document.uri: edits})


def lint_document(document: TextDocument) -> list[Finding]:
    return lint_source(document.source, document.path or document.uri)


def publish(server: LanguageServer, uri: str) -> None:
    document = server.workspace.get_text_document(uri)
    diagnostics = [to_diagnostic(document, finding) for finding in lint_document(document)]
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, version=document.version, diagnostics=diagnostics)
    )


def code_actions(document: TextDocument, requested: types.Range, diagnostics: list[types.Diagnostic]) -> list[types.CodeAction]:
    """One quick fix per safe fix of every vramlens finding the client asks about."""
    ours = [d for d in diagnostics if d.source == SOURCE]
    actions: list[types.CodeAction] = []
    text = document.source
    for finding in lint_document(document):
        diagnostic = next((d for d in ours if d.code == finding.code and _same_start(document, d, finding)), None)
        if diagnostic is None:
            continue
        for index, fix in enumerate(finding.fixes):
            if apply_fix(text, fix) is None:
                continue  # never offer an edit that leaves the file unparsable
            actions.append(
                types.CodeAction(
                    title=fix.title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    edit=to_workspace_edit(document, fix),
                    is_preferred=index == 0,
                )
            )
    return actions


def _same_start(document: TextDocument, diagnostic: types.Diagnostic, finding: Finding) -> bool:
    start = _range(document, finding.line, finding.column, finding.line, finding.column).start
    return diagnostic.range.start == start


def register(server: LanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    def code_action(ls: LanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        document = ls.workspace.get_text_document(params.text_document.uri)
        return code_actions(document, params.range, params.context.diagnostics)
