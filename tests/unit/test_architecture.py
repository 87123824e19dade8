"""The imports of server/vramlens keep to the dependency table of docs/architecture.md.

The checker is scripts/import_structure.py, run as the command a person runs; the first tests hold the
real package to the doc, the others make sure the checker sees what it claims to see, on small packages
written here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKER = REPO / "scripts" / "import_structure.py"

# Imports that break the table and are still to be moved, each a (file, imported module) pair; the list
# may only shrink (the second test below says which are gone). Its 18 pairs went when experiments/ moved
# above runner/ and analysis/ and the editor's plain runs were allowed runner/. Nothing may be added here.
KNOWN_BREAKS: set[tuple[str, str]] = set()


def check(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, str(CHECKER), "--json", *args],
        capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(done.stdout)


def breaks(report: dict) -> set[tuple[str, str]]:
    return {(b["source"], b["target"]) for b in report["breaking"]}


@pytest.fixture(scope="module")
def package() -> dict:
    """The checker's report on server/vramlens against docs/architecture.md."""
    return check()


def test_no_import_breaks_the_dependency_table(package):
    new = sorted(breaks(package) - KNOWN_BREAKS)
    assert not new, (
        "these imports break the dependency table of docs/architecture.md "
        "(python3 scripts/import_structure.py says more):\n" + "\n".join(f"{s} -> {t}" for s, t in new)
    )


def test_the_known_breaks_are_still_there(package):
    gone = sorted(KNOWN_BREAKS - breaks(package))
    assert not gone, "no longer break the table; remove them from KNOWN_BREAKS:\n" + "\n".join(
        f"{s} -> {t}" for s, t in gone
    )


def test_every_room_is_in_the_table(package):
    assert package["undeclared_rooms"] == []


def test_no_cycle_and_no_upward_import_inside_any_package(package):
    """Inside a package, parts import only parts on their own floor or lower (the floor table of
    docs/architecture.md), and no set of parts imports itself round (lazy imports included)."""
    crooked = {level["package"]: (level["cycles"], level["upward"], level["unplaced"]) for level in package["levels"]
               if level["cycles"] or level["upward"] or level["unplaced"]}
    assert not crooked, crooked


def test_the_layered_packages_declare_their_floors(package):
    declared = {level["package"] for level in package["levels"] if level["declared_floors"]}
    assert {"analysis", "lint", "lsp"} <= declared


# ------------------------------------------------------------ the checker on small packages

DOC = """\
| floor | room | may import |
|---|---|---|
| 0 | `base.py` | imported by every room |
| 1 | `low/` | stdlib |
| 2 | `high/` | `low`, `other.link` |
| 2 | `other/` | stdlib |
| 2 | `sealed/` | no other room |

| package | floors, bottom first |
|---|---|
| `high/` | `model` → `*` → `top` |
"""


def write_package(tmp_path: Path, files: dict[str, str]) -> tuple[str, str]:
    root = tmp_path / "vramlens"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    doc = tmp_path / "architecture.md"
    doc.write_text(DOC)
    return "--root", str(root), "--doc", str(doc)


PACKAGE = {
    "base.py": "",
    "low/__init__.py": "",
    "low/a.py": "from vramlens import base\n",
    "other/__init__.py": "",
    "other/link.py": "",
    "other/deep.py": "",
    "high/__init__.py": "",
    "high/model.py": "",
    "high/work.py": "from vramlens.low import a\nfrom vramlens.other import link\nfrom . import model\n",
    "high/top.py": "from .work import x\n",
    "sealed/__init__.py": "",
}


def test_a_clean_package_breaks_nothing(tmp_path):
    report = check(*write_package(tmp_path, PACKAGE))
    assert report["breaking"] == []
    assert report["room_cycles"] == []
    high = next(level for level in report["levels"] if level["package"] == "high")
    assert high["upward"] == [] and high["cycles"] == []
    assert high["derived_floors"] == 3


def test_an_import_outside_the_table_is_reported(tmp_path):
    files = {**PACKAGE, "high/work.py": PACKAGE["high/work.py"] + "from vramlens.other import deep\n",
             "low/b.py": "import vramlens.high.model\n", "sealed/a.py": "from vramlens import base\n"}
    report = check(*write_package(tmp_path, files))
    assert breaks(report) == {
        ("vramlens.high.work", "vramlens.other.deep"),
        ("vramlens.low.b", "vramlens.high.model"),
        ("vramlens.sealed.a", "vramlens.base"),  # even a room open to all is closed to a sealed one
    }


def test_an_in_function_import_still_counts_and_a_cycle_it_closes_is_flagged(tmp_path):
    files = {**PACKAGE, "low/a.py": "def later():\n    from vramlens.high import work\n"}
    report = check(*write_package(tmp_path, files))
    assert report["breaking"] == [
        {"source": "vramlens.low.a", "target": "vramlens.high.work", "line": 2, "lazy": True}
    ]
    (cycle,) = report["room_cycles"]
    assert cycle["parts"] == ["high", "low"] and cycle["held_by_lazy"]


def test_an_import_to_a_higher_floor_is_an_upward_arrow(tmp_path):
    files = {**PACKAGE, "high/model.py": "from vramlens.high.top import y\n"}
    high = next(
        level for level in check(*write_package(tmp_path, files))["levels"] if level["package"] == "high"
    )
    assert high["upward"] == ["vramlens.high.model:1 -> vramlens.high.top"]
    (cycle,) = high["cycles"]  # model → top → work → model
    assert cycle["parts"] == ["model", "top", "work"] and not cycle["held_by_lazy"]
