"""Lint findings as LSP diagnostics and quick fixes (same engine and edits as `vramlens lint --fix`)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.workspace import TextDocument

from vramlens.lint import Finding, Fix, apply_fix, fix_source, lint_source
from vramlens.lint.engine.chunks import ChunkCache
from vramlens.lint.engine.suppression import suppression_edit
from vramlens.lint.project.index import project_index
from vramlens.lsp.code_action_kit import asks_for, client_range, to_workspace_edit
from vramlens.lsp.feature import Feature
from vramlens.lsp.notebook_lint import lint_cells, python_lines
from vramlens.lsp.server import VramLensServer

SOURCE = "vramlens"
SETTINGS_KEY = "lint"  # initializationOptions.lint and settings.vramlens.lint: {"select", "ignore", "preview", "docsUrl"}
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"  # ``source.fixAll.vramlens``
# The rules' page: a checkout's docs/lint.md, unless the client names another (``lint.docsUrl``, e.g. a web copy).
_LOCAL_DOCS = Path(__file__).resolve().parents[3] / "docs" / "lint.md"
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


def rule_href(code: str, docs: str | None) -> str | None:
    """The link to a code's row of the rules table (docs/lint.md#vl102), or None when no page is known."""
    if not docs:
        return None
    return f"{docs}#{code.lower()}"


def default_docs() -> str | None:
    return _LOCAL_DOCS.as_uri() if _LOCAL_DOCS.is_file() else None


def to_diagnostic(document: TextDocument, finding: Finding, lines: list[str] | None = None,
                  docs: str | None = None) -> types.Diagnostic:
    href = rule_href(finding.code, docs)
    return types.Diagnostic(
        range=client_range(document, finding.line, finding.column, finding.end_line, finding.end_column, lines),
        message=finding.message,
        severity=_SEVERITY[finding.severity],
        code=finding.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        data={"rule": finding.rule, "code": finding.code},
    )


class LintSettings:
    """Which checks the client wants, from initializationOptions and later configuration changes."""

    def __init__(self) -> None:
        self.select: list[str] | None = None
        self.ignore: list[str] | None = None
        self.preview = False
        self.docs = default_docs()

    def update(self, options: dict) -> None:
        lint = options.get(SETTINGS_KEY)  # the whole section arrives each time: no `lint` means the defaults
        lint = lint if isinstance(lint, dict) else {}
        self.select = [str(s) for s in lint.get("select") or []] or None
        self.ignore = [str(s) for s in lint.get("ignore") or []] or None
        self.preview = lint.get("preview") is True
        docs = lint.get("docsUrl")
        self.docs = docs if isinstance(docs, str) and docs.startswith(("https://", "http://", "file://")) else default_docs()


class DocumentLinter:
    """Lints documents with the client's settings. The editor asks for code actions on every cursor
    move and publishes again on save: the same text is linted once. Each open document (and notebook)
    keeps the engine's cache of its last lint, so after an edit only the changed parts are analysed again.
    A notebook's cell is linted with the notebook's other code cells before it and after it
    (``notebook_of(document)`` gives them)."""

    def __init__(self, notebook_of=None, root_of=None) -> None:
        self.settings = LintSettings()
        self._root_of = root_of  # document -> its workspace folder's path (the project's root) or None
        self._last: dict[str, tuple[tuple, list[Finding]]] = {}  # uri -> (what was linted, its findings)
        self._caches: dict[str, ChunkCache] = {}  # uri or notebook path -> the engine's cache of it
        self._notebook_of = notebook_of  # document -> (notebook path, [(cell uri, source)…]) or None
        self._notebooks: dict[str, tuple[tuple, dict[str, list[Finding]]]] = {}

    def findings(self, document: TextDocument) -> list[Finding]:
        select, ignore, preview = self.settings.select, self.settings.ignore, self.settings.preview
        notebook = self._notebook_of(document) if self._notebook_of else None
        root = self.root(document)
        if notebook is not None:
            return self._cell_findings(document.uri, *notebook, root=root)
        path = document.path or document.uri
        key = (document.source, select, ignore, preview, root, _read_files(root, path))
        cached = self._last.get(document.uri)
        if cached is not None and cached[0] == key:
            return cached[1]
        cache = self._caches.setdefault(document.uri, ChunkCache())
        findings = lint_source(document.source, path, select, ignore, preview, cache=cache, root=root)
        self._last[document.uri] = (key, findings)
        return findings

    def root(self, document: TextDocument) -> str | None:
        """The project's root for ``document``: what it imports from the workspace is read too."""
        return self._root_of(document) if self._root_of else None

    def is_cell(self, document: TextDocument) -> bool:
        return bool(self._notebook_of) and self._notebook_of(document) is not None

    def checked_text(self, document: TextDocument) -> str:
        """The text a fix is checked against: a cell's with its IPython lines blanked, as it was linted."""
        if self._notebook_of and self._notebook_of(document) is not None:
            return "\n".join(python_lines(document.source))
        return document.source

    def _cell_findings(self, uri: str, path: str, cells: list[tuple[str, str]], root: str | None = None) -> list[Finding]:
        settings = self.settings
        key = (tuple(cells), settings.select, settings.ignore, settings.preview, root, _read_files(root, path))
        cached = self._notebooks.get(path)
        if cached is None or cached[0] != key:
            cache = self._caches.setdefault(path, ChunkCache())
            found = lint_cells(cells, path, settings.select, settings.ignore, preview=settings.preview, cache=cache,
                               root=root)
            cached = self._notebooks[path] = (key, found)
        return cached[1].get(uri, [])

    def forget(self, uri: str) -> None:
        """A closed document's findings and cache go."""
        self._last.pop(uri, None)
        self._caches.pop(uri, None)


def _read_files(root: str | None, path: str) -> tuple:
    """The files of the project the last lint of ``path`` read, as they are now: part of a cached result's key,
    so that saving one of them lints the document again."""
    return project_index(root).dependency_stamps(path) if root else ()


def code_actions(document: TextDocument, diagnostics: list[types.Diagnostic], linter: DocumentLinter,
                 only: list[str] | None = None) -> list[types.CodeAction]:
    """One quick fix per safe fix of every vramlens finding the client asks about, one to silence it on its line
    (``# vramlens: ignore[CODE]``), and, when the client asks for ``source.fixAll``, every default fix at once."""
    actions: list[types.CodeAction] = []
    if asks_for(only, types.CodeActionKind.QuickFix.value):
        actions += _quick_fixes(document, diagnostics, linter)
    if only is not None and asks_for(only, FIX_ALL_KIND):
        action = fix_all(document, linter)
        if action is not None:
            actions.append(action)
    return actions


def _quick_fixes(document: TextDocument, diagnostics: list[types.Diagnostic], linter: DocumentLinter) -> list[types.CodeAction]:
    ours = [d for d in diagnostics if d.source == SOURCE]
    if not ours:
        return []
    actions: list[types.CodeAction] = []
    text = linter.checked_text(document)
    lines = document.lines
    silenced: set[tuple[int, str]] = set()
    for finding in linter.findings(document):
        if not any(d.code == finding.code for d in ours):
            continue
        diagnostic = next((d for d in ours if d.code == finding.code and _same_start(document, d, finding, lines)), None)
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
        if finding.code != "VL000" and (finding.line, finding.code) not in silenced:
            silenced.add((finding.line, finding.code))
            line_text = lines[finding.line - 1].rstrip("\r\n") if finding.line <= len(lines) else ""
            edit = suppression_edit(line_text, finding.line, finding.code)
            actions.append(
                types.CodeAction(
                    title=f"Ignore {finding.code} on this line",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    edit=to_workspace_edit(document, Fix("ignore", (edit,))),
                )
            )
    return actions


def fix_all(document: TextDocument, linter: DocumentLinter) -> types.CodeAction | None:
    """Every default fix of the document, as `vramlens lint --fix` applies them (a notebook cell: none, its
    fixes depend on the other cells)."""
    if linter.is_cell(document):
        return None
    settings = linter.settings
    text = document.source
    result = fix_source(text, document.path or document.uri, settings.select, settings.ignore, settings.preview,
                        root=linter.root(document))
    if not result.applied or result.text == text:
        return None
    lines = document.lines
    end = types.Position(line=len(lines), character=0)
    edit = types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=result.text)
    return types.CodeAction(
        title=f"Apply every VRAM Lens fix ({result.applied})",
        kind=FIX_ALL_KIND,
        edit=types.WorkspaceEdit(changes={document.uri: [edit]}),
    )


def _same_start(document: TextDocument, diagnostic: types.Diagnostic, finding: Finding, lines: list[str]) -> bool:
    start = client_range(document, finding.line, finding.column, finding.line, finding.column, lines).start
    return diagnostic.range.start == start


class LintFeature(Feature):
    """Lint's findings as diagnostics, their fixes as code actions."""

    code_action_kinds = (types.CodeActionKind.QuickFix.value, FIX_ALL_KIND)

    def __init__(self) -> None:
        self.linter: DocumentLinter | None = None

    def register(self, server: VramLensServer) -> None:
        self.linter = DocumentLinter(server.notebook_of, lambda document: server.folder_of(document.uri)[1])

    def settings_changed(self, options: dict) -> None:
        self.linter.settings.update(options)

    def closed(self, uri: str) -> None:
        self.linter.forget(uri)

    def diagnostics(self, document: TextDocument) -> list[types.Diagnostic]:
        lines = document.lines
        docs = self.linter.settings.docs
        return [to_diagnostic(document, finding, lines, docs) for finding in self.linter.findings(document)]

    def code_actions(self, document: TextDocument, params: types.CodeActionParams) -> list[types.CodeAction]:
        return code_actions(document, params.context.diagnostics, self.linter, params.context.only)
