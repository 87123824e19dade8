"""Module summaries kept on disk between runs (lint/project/store.py).

A new process (here: the in-process indexes dropped) reads back what an earlier one summarised instead of reading
the modules again, and gets the same findings; an entry is not used once the module, a file it was computed from,
or a folder whose listing resolved one of its imports changed; an entry that is not a summary is never built.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

from vramlens.cli import main
from vramlens.lint import lint_file
from vramlens.lint.project import index as project_index_module
from vramlens.lint.project import store as store_module
from vramlens.lint.project.index import project_index

ACCUMULATES = """\
import torch
from .losses import batch_loss

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0
for x, y in loader:
    out = model(x)
    loss = torch.nn.functional.mse_loss(out, y)
    loss.backward()
    optimizer.step()
    total += batch_loss(out, y)
"""
# What ``batch_loss`` returns is what ``mse`` of another module returns.
THROUGH_CORE = """\
from .core import mse


def batch_loss(out, y):
    return mse(out, y)
"""
CORE_GRAPH = """\
import torch


def mse(out, y):
    return torch.nn.functional.mse_loss(out, y)
"""
CORE_NUMBER = CORE_GRAPH.replace("mse_loss(out, y)", "mse_loss(out, y).item()")
KEPT = (12, "VL101")  # the running total keeps each step's graph: only when ``mse`` returns one


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def findings(root: Path) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint_file(root / "pkg" / "train.py", preview=True, root=root) if f.code != "VL000"]


def new_process(monkeypatch) -> list[str]:
    """Forget every in-process index, as a new ``vramlens lint`` starts; the modules read from now on."""
    project_index_module._INDEXES.clear()
    read: list[str] = []
    original = project_index_module.read_source

    def recording(path):
        read.append(os.path.basename(path))
        return original(path)

    monkeypatch.setattr(project_index_module, "read_source", recording)
    return read


def project(tmp_path: Path, core: str | None = CORE_GRAPH) -> Path:
    files = {"pkg/__init__.py": "", "pkg/losses.py": THROUGH_CORE, "pkg/train.py": ACCUMULATES}
    if core is not None:
        files["pkg/core.py"] = core
    return write(tmp_path / "project", files)


def test_a_new_process_reads_the_summaries_back_instead_of_the_modules(tmp_path, monkeypatch):
    monkeypatch.setenv("VRAMLENS_CACHE_DIR", str(tmp_path / "cache"))
    root = project(tmp_path)
    read = new_process(monkeypatch)
    first = findings(root)
    assert KEPT in first
    assert {"core.py", "losses.py"} <= set(read)
    read = new_process(monkeypatch)
    assert findings(root) == first
    assert read == []
    assert project_index(root).store.hits > 0


def test_an_entry_is_not_used_once_a_file_it_came_from_changed(tmp_path, monkeypatch):
    monkeypatch.setenv("VRAMLENS_CACHE_DIR", str(tmp_path / "cache"))
    root = project(tmp_path)
    new_process(monkeypatch)
    assert KEPT in findings(root)
    (root / "pkg" / "core.py").write_text(CORE_NUMBER + "\n")  # a new size: a new stamp
    read = new_process(monkeypatch)
    assert KEPT not in findings(root)
    assert "core.py" in read


def test_an_entry_is_not_used_once_a_module_it_imports_appeared(tmp_path, monkeypatch):
    # losses.py is unchanged, but ``from .core import mse`` now names a file: its summary must be made again.
    monkeypatch.setenv("VRAMLENS_CACHE_DIR", str(tmp_path / "cache"))
    root = project(tmp_path, core=None)
    new_process(monkeypatch)
    assert KEPT in findings(root)  # what an unknown ``mse`` returns from tensors may carry their graph
    write(root, {"pkg/core.py": CORE_NUMBER})
    read = new_process(monkeypatch)
    assert KEPT not in findings(root)
    assert "losses.py" in read


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (str(self.marker),))


def test_an_entry_that_is_not_a_summary_is_never_built(tmp_path, monkeypatch):
    monkeypatch.setenv("VRAMLENS_CACHE_DIR", str(tmp_path / "cache"))
    root = project(tmp_path)
    new_process(monkeypatch)
    expected = findings(root)
    entries = sorted((tmp_path / "cache").rglob("*.pickle"))
    assert entries
    marker = tmp_path / "ran"
    for entry in entries:
        entry.write_bytes(pickle.dumps(_Payload(marker)))
    (entries[0]).write_bytes(b"\x80\x05 not a pickle at all")
    read = new_process(monkeypatch)
    assert findings(root) == expected
    assert not marker.exists()
    assert {"core.py", "losses.py"} <= set(read)  # every entry was a miss


def test_another_engine_never_reads_the_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("VRAMLENS_CACHE_DIR", str(tmp_path / "cache"))
    root = project(tmp_path)
    new_process(monkeypatch)
    findings(root)
    monkeypatch.setattr(store_module, "_ENGINE", "another engine")
    read = new_process(monkeypatch)
    findings(root)
    assert {"core.py", "losses.py"} <= set(read)


def test_no_cache_neither_reads_nor_writes(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    monkeypatch.setenv("VRAMLENS_CACHE_DIR", str(cache))
    root = project(tmp_path)
    new_process(monkeypatch)
    assert main(["lint", "--preview", "--no-cache", str(root / "pkg" / "train.py")]) == 1
    assert "VL101" in capsys.readouterr().out
    assert not list(cache.rglob("*.pickle"))
    assert os.environ["VRAMLENS_CACHE_DIR"] == str(cache)  # the setting of the caller is left as it was
    monkeypatch.setenv("VRAMLENS_CACHE_DIR", "off")
    new_process(monkeypatch)
    findings(root)
    assert not cache.exists() or not list(cache.rglob("*.pickle"))
