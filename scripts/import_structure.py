#!/usr/bin/env python3
"""The import structure of server/vramlens, measured against docs/architecture.md.

Files are grouped into rooms (the top-level packages and modules of ``vramlens``); every
``import`` between two files is an arrow. For the whole package and for each package inside it
the report gives: files, arrows between its parts, import cycles (strongly connected parts,
lazy imports included and flagged), and

- at the top: the arrows that break the dependency table of docs/architecture.md;
- inside a package: the upward arrows, where docs/architecture.md declares the package's floors
  (a part on a lower floor importing a part on a higher one), and the derived floor count (the
  longest chain of imports between its parts) everywhere.

Only the standard library is used, so this runs from any Python >= 3.10 without installing
anything:  python3 scripts/import_structure.py [--json] [--root DIR] [--doc FILE]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "vramlens"
ROOT_ROOM = PACKAGE  # the package's own __init__.py; __main__.py is a room of its own


# ---------------------------------------------------------------- reading the code


@dataclass(frozen=True)
class Arrow:
    """One import statement from one file of vramlens to another."""

    source: str  # dotted module names
    target: str
    line: int
    lazy: bool  # inside a function: runs only when the function is called


def module_names(root: Path) -> dict[str, Path]:
    """Every module under ``root`` (the vramlens package folder) by its dotted name."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _absolute(node: ast.ImportFrom, importer: str, modules: dict[str, Path]) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package(importer, modules):
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest module of vramlens that ``name`` names (``a.b.func`` → ``a.b``)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


class _ImportVisitor(ast.NodeVisitor):
    def __init__(self, importer: str, modules: dict[str, Path]):
        self.importer, self.modules = importer, modules
        self.arrows: list[Arrow] = []
        self.depth = 0  # how many function bodies enclose the current node

    def _add(self, target: str | None, node: ast.stmt) -> None:
        if target and target != self.importer:
            self.arrows.append(Arrow(self.importer, target, node.lineno, self.depth > 0))

    def visit_FunctionDef(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] == PACKAGE:
                self._add(_known(alias.name, self.modules), node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _absolute(node, self.importer, self.modules)
        if base.split(".")[0] != PACKAGE:
            return
        for alias in node.names:
            # ``from pkg import sub`` imports the module pkg.sub when there is one.
            self._add(_known(f"{base}.{alias.name}", self.modules), node)


def read_arrows(modules: dict[str, Path]) -> list[Arrow]:
    arrows = []
    for name, path in modules.items():
        visitor = _ImportVisitor(name, modules)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        arrows.extend(visitor.arrows)
    return arrows


# ---------------------------------------------------------------- reading the doc


@dataclass
class Rules:
    """What docs/architecture.md declares: who may import whom, and the floors inside packages."""

    may_import: dict[str, set[str]]  # room → rooms or dotted modules (``agent.runner_link``)
    floors: dict[str, list[list[str]]]  # package (``analysis``) → its parts, bottom floor first
    open_to_all: set[str] = field(default_factory=set)  # rooms every room may import...
    closed: set[str] = field(default_factory=set)  # ...except these, which import no other room


_CODE = re.compile(r"`([^`]+)`")


def _table(lines: list[str], header_words: tuple[str, ...]) -> tuple[list[str], list[list[str]]]:
    """The header cells (lower case) and body rows of the first Markdown table whose header
    holds all ``header_words``."""
    split = lambda line: [c.strip() for c in line.strip().strip("|").split("|")]  # noqa: E731
    for start, line in enumerate(lines):
        header = [c.lower() for c in split(line)]
        if line.lstrip().startswith("|") and all(any(w in c for c in header) for w in header_words):
            rows = []
            for body in lines[start + 2 :]:
                if not body.lstrip().startswith("|"):
                    break
                rows.append(split(body))
            return header, rows
    raise ValueError(f"no table with columns {header_words} in the architecture doc")


def read_rules(doc: Path) -> Rules:
    """The dependency table (columns ``room`` and ``may import``) and the floor table (columns
    ``package`` and ``floors``) of docs/architecture.md. Only names in backticks count; a room
    whose ``may import`` cell says "imported by every room" is open to all but the rooms whose
    cell says "no other room"; a floor named ``*`` holds every part the other floors do not name."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    may_import: dict[str, set[str]] = {}
    open_to_all: set[str] = set()
    closed: set[str] = set()
    header, rows = _table(lines, ("room", "may import"))
    room_col, allowed_col = header.index("room"), header.index("may import")
    for row in rows:
        allowed = {_room_name(n) for n in _CODE.findall(row[allowed_col])}
        for room in (_room_name(n) for n in _CODE.findall(row[room_col])):
            may_import[room] = allowed
            if "no other room" in row[allowed_col].lower():
                closed.add(room)
            elif "imported by every room" in row[allowed_col].lower():
                open_to_all.add(room)
    floors: dict[str, list[list[str]]] = {}
    header, rows = _table(lines, ("package", "floors"))
    for row in rows:
        package = _room_name(_CODE.findall(row[0])[0])
        floors[package] = [
            [n.strip("/") for n in _CODE.findall(floor)] for floor in row[1].split("→")
        ]
    return Rules(may_import, floors, open_to_all, closed)


def _room_name(text: str) -> str:
    """``server/vramlens/agent/`` or ``agent/`` or ``units.py`` → ``agent`` / ``units``."""
    text = text.strip().removeprefix("server/").removeprefix(f"{PACKAGE}/").rstrip("/")
    return text.removesuffix(".py").replace("/", ".")


# ---------------------------------------------------------------- measuring


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT_ROOM


def part_of(module: str, package: str) -> str | None:
    """The direct part of ``package`` (a sub-package or module) that holds ``module``;
    ``__init__`` for the package's own __init__.py; None outside the package."""
    if module == package:
        return "__init__"
    if not module.startswith(package + "."):
        return None
    return module[len(package) + 1 :].split(".")[0]


def strongly_connected(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the groups of nodes that reach each other (size ≥ 2)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    return sorted(groups)


def derived_floors(nodes: set[str], edges: dict[str, set[str]]) -> int:
    """How many floors the parts stand on when each part sits one floor above the highest part
    it imports (a cycle's members share one floor)."""
    group_of = {n: n for n in nodes}
    for group in strongly_connected(nodes, edges):
        for member in group:
            group_of[member] = group[0]
    below: dict[str, set[str]] = defaultdict(set)
    for a, targets in edges.items():
        for b in targets:
            if group_of[a] != group_of[b]:
                below[group_of[a]].add(group_of[b])
    floor: dict[str, int] = {}

    def floor_of(node: str) -> int:  # the condensed graph is acyclic
        if node not in floor:
            floor[node] = 0
            floor[node] = 1 + max((floor_of(b) for b in below[node]), default=-1)
        return floor[node]

    return 1 + max((floor_of(g) for g in set(group_of.values())), default=-1)


@dataclass
class Cycle:
    parts: list[str]
    files: int
    arrows: list[str]  # "a.b:12 -> a.c" inside the cycle
    lazy_arrows: list[str]
    held_by_lazy: bool  # without its lazy imports the cycle would not exist


def cycles_of(
    parts: set[str], arrows: list[tuple[str, str, Arrow]], files_of: dict[str, set[str]]
) -> list[Cycle]:
    edges: dict[str, set[str]] = defaultdict(set)
    eager: dict[str, set[str]] = defaultdict(set)
    for a, b, arrow in arrows:
        edges[a].add(b)
        if not arrow.lazy:
            eager[a].add(b)
    eager_groups = [set(g) for g in strongly_connected(parts, eager)]
    found = []
    for group in strongly_connected(parts, edges):
        inside = [x for a, b, x in arrows if a in group and b in group]
        found.append(
            Cycle(
                parts=group,
                files=sum(len(files_of[p]) for p in group),
                arrows=sorted(f"{x.source}:{x.line} -> {x.target}" for x in inside),
                lazy_arrows=sorted(f"{x.source}:{x.line} -> {x.target}" for x in inside if x.lazy),
                held_by_lazy=set(group) not in eager_groups,
            )
        )
    return found


@dataclass
class Level:
    """One package seen from inside: its direct parts and the arrows between them."""

    package: str
    files: int
    parts: int
    arrows: int  # distinct (file, file) pairs between two different parts
    lazy_arrows: int
    derived_floors: int
    cycles: list[Cycle]
    declared_floors: list[list[str]] | None
    upward: list[str]  # arrows from a lower declared floor to a higher one
    unplaced: list[str]  # parts the declaration does not name
    absent: list[str]  # parts the declaration names that do not exist


@dataclass
class Room:
    room: str
    files: int
    arrows_out: dict[str, int]  # target room → distinct (file, file) pairs
    breaking: list[str]  # "source -> target (line n)" against the dependency table


@dataclass
class Report:
    files: int
    arrows: int  # distinct (file, file) pairs, whole package
    rooms: list[Room]
    breaking: list[dict]  # {"source", "target", "line", "lazy"}
    breaking_pairs: int
    room_cycles: list[Cycle]
    levels: list[Level]
    undeclared_rooms: list[str]


def _pairs(arrows: list[Arrow]) -> dict[tuple[str, str], Arrow]:
    """One arrow per (file, file) pair: the first eager one, else the first lazy one."""
    chosen: dict[tuple[str, str], Arrow] = {}
    for arrow in sorted(arrows, key=lambda x: (x.lazy, x.line)):
        chosen.setdefault((arrow.source, arrow.target), arrow)
    return chosen


def allowed(source_room: str, target: str, rules: Rules) -> bool:
    target_room = room_of(target)
    if target_room == source_room:
        return True
    if target_room in rules.open_to_all and source_room not in rules.closed:
        return True
    names = rules.may_import.get(source_room, set())
    dotted = target.split(".")[1:]
    return any(".".join(dotted[:n]) in names for n in range(1, len(dotted) + 1))


def measure(root: Path, rules: Rules) -> Report:
    modules = module_names(root)
    pairs = _pairs(read_arrows(modules))
    rooms = sorted({room_of(m) for m in modules})

    breaking = [
        x for (s, t), x in sorted(pairs.items()) if not allowed(room_of(s), t, rules)
    ]
    room_rows = []
    for room in rooms:
        out: dict[str, int] = defaultdict(int)
        for s, t in pairs:
            if room_of(s) == room and room_of(t) != room:
                out[room_of(t)] += 1
        room_rows.append(
            Room(
                room=room,
                files=sum(room_of(m) == room for m in modules),
                arrows_out=dict(sorted(out.items())),
                breaking=[f"{x.source} -> {x.target}" for x in breaking if room_of(x.source) == room],
            )
        )
    room_files = {r: {m for m in modules if room_of(m) == r} for r in rooms}
    between_rooms = [
        (room_of(s), room_of(t), x) for (s, t), x in pairs.items() if room_of(s) != room_of(t)
    ]
    packages = sorted(m for m in modules if is_package(m, modules) and m != PACKAGE)
    return Report(
        files=len(modules),
        arrows=len(pairs),
        rooms=room_rows,
        breaking=[
            {"source": x.source, "target": x.target, "line": x.line, "lazy": x.lazy}
            for x in breaking
        ],
        breaking_pairs=len({(room_of(x.source), room_of(x.target)) for x in breaking}),
        room_cycles=cycles_of(set(rooms), between_rooms, room_files),
        levels=[_level(p, modules, pairs, rules) for p in packages],
        undeclared_rooms=[r for r in rooms if r not in rules.may_import],
    )


def _level(
    package: str, modules: dict[str, Path], pairs: dict[tuple[str, str], Arrow], rules: Rules
) -> Level:
    files_of: dict[str, set[str]] = defaultdict(set)
    for m in modules:
        part = part_of(m, package)
        if part is not None:
            files_of[part].add(m)
    parts = set(files_of)
    inside = [
        (part_of(s, package), part_of(t, package), x)
        for (s, t), x in pairs.items()
        if part_of(s, package) is not None and part_of(t, package) is not None
        and part_of(s, package) != part_of(t, package)
    ]
    edges: dict[str, set[str]] = defaultdict(set)
    for a, b, _ in inside:
        edges[a].add(b)

    key = package.removeprefix(PACKAGE + ".")
    declared = rules.floors.get(key)
    upward: list[str] = []
    unplaced: list[str] = []
    absent: list[str] = []
    if declared is not None:
        floor = {name: i for i, names in enumerate(declared) for name in names if name != "*"}
        absent = sorted(name for name in floor if name not in parts)
        rest = [i for i, names in enumerate(declared) if "*" in names]
        for p in parts - set(floor) - {"__init__"}:
            if rest:
                floor[p] = rest[0]
            else:
                unplaced.append(p)
        unplaced.sort()
        upward = sorted(
            f"{x.source}:{x.line} -> {x.target}" + (" (lazy)" if x.lazy else "")
            for a, b, x in inside
            if a in floor and b in floor and floor[a] < floor[b]
        )
    return Level(
        package=key,
        files=sum(len(f) for f in files_of.values()),
        parts=len(parts),
        arrows=len(inside),
        lazy_arrows=sum(x.lazy for _, _, x in inside),
        derived_floors=derived_floors(parts, edges),
        cycles=cycles_of(parts, inside, files_of),
        declared_floors=declared,
        upward=upward,
        unplaced=unplaced,
        absent=absent,
    )


# ---------------------------------------------------------------- printing


def print_report(report: Report, out=sys.stdout) -> None:
    w = lambda text="": print(text, file=out)  # noqa: E731
    w(f"vramlens: {report.files} files, {report.arrows} import arrows (file pairs)")
    w(f"rooms: {len(report.rooms)}; arrows breaking the dependency table: {len(report.breaking)} "
      f"(in {report.breaking_pairs} room pairs); cycles between rooms: {len(report.room_cycles)}")
    if report.undeclared_rooms:
        w(f"rooms the dependency table does not list: {', '.join(report.undeclared_rooms)}")
    w()
    for room in report.rooms:
        targets = ", ".join(f"{t} {n}" for t, n in room.arrows_out.items()) or "-"
        w(f"  {room.room:<14} {room.files:>3} files   imports: {targets}")
        for line in room.breaking:
            w(f"      breaks the table: {line}")
    for cycle in report.room_cycles:
        _print_cycle(w, "rooms", cycle)
    w()
    w("inside packages (parts = direct sub-packages and modules):")
    for level in report.levels:
        declared = "declared" if level.declared_floors is not None else "no declared floors"
        w(f"  {level.package:<24} {level.files:>3} files {level.parts:>3} parts "
          f"{level.arrows:>4} arrows ({level.lazy_arrows} lazy)  {level.derived_floors:>2} derived floors  "
          f"cycles {len(level.cycles)}  upward {len(level.upward)} ({declared})")
        for line in level.upward:
            w(f"      upward: {line}")
        if level.unplaced:
            w(f"      not on a declared floor: {', '.join(level.unplaced)}")
        if level.absent:
            w(f"      declared but absent: {', '.join(level.absent)}")
        for cycle in level.cycles:
            _print_cycle(w, level.package, cycle)


def _print_cycle(w, where: str, cycle: Cycle) -> None:
    held = ", held together by a lazy import" if cycle.held_by_lazy else ""
    w(f"      cycle in {where}: {len(cycle.parts)} parts, {cycle.files} files{held}: "
      f"{' <-> '.join(cycle.parts)}")
    for line in cycle.lazy_arrows:
        w(f"        lazy: {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO / "server" / PACKAGE,
                        help="the vramlens package folder (default: server/vramlens)")
    parser.add_argument("--doc", type=Path, default=REPO / "docs" / "architecture.md",
                        help="the doc holding the dependency and floor tables")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    report = measure(args.root, read_rules(args.doc))
    if args.json:
        print(json.dumps(asdict(report), indent=1))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
