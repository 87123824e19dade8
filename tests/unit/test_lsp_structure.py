"""The language server's shape: the composition root (lsp/app.py) is the only module that knows the
features, no module imports one above it (no import cycle), and a feature never imports another."""

from __future__ import annotations

import ast
from pathlib import Path

LSP = Path(__file__).resolve().parents[2] / "server" / "vramlens" / "lsp"
PACKAGE = "vramlens.lsp"


def imports_of(path: Path) -> set[str]:
    """The lsp/ modules a file imports, lazily or for type checking included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE + "."):
            found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[2] for alias in node.names if alias.name.startswith(PACKAGE + ".")}
    return found - {path.stem}


def graph() -> dict[str, set[str]]:
    modules = {path.stem: path for path in LSP.glob("*.py")}
    return {name: imports_of(path) & set(modules) for name, path in modules.items()}


def features() -> set[str]:
    """The modules that define a Feature of their own."""
    return {path.stem for path in LSP.glob("*.py") if path.stem != "feature"
            and any(isinstance(node, ast.ClassDef) and any(getattr(base, "id", None) == "Feature" for base in node.bases)
                    for node in ast.walk(ast.parse(path.read_text())))}


def test_no_module_of_the_server_is_in_an_import_cycle():
    arrows = graph()
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"import cycle: {' -> '.join(path[path.index(name):] + (name,))}"
        if name in done:
            return
        for target in sorted(arrows[name]):
            visit(target, path + (name,))
        done.add(name)

    for name in sorted(arrows):
        visit(name, ())


def test_only_the_composition_root_knows_the_features():
    arrows = graph()
    known = features()
    assert {"lint_features", "capture_features", "capture_commands", "compare", "diagnose"} <= known
    for name, targets in arrows.items():
        if name != "app":
            assert not targets & known, f"{name} imports the feature module(s) {sorted(targets & known)}"
    assert known <= arrows["app"]
    assert not any("app" in targets for name, targets in arrows.items() if name != "__main__")
