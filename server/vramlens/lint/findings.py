"""The findings model: the codes a rule declares, what it reports and the exact text edits that fix it.

Positions follow the JSON schema documented in docs/lint.md: lines are 1-based,
columns are 0-based character offsets within the line (not bytes).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Code:
    """A finding code as the rule that reports it declares it. catalog.py collects every rule's codes (and adds
    the measured precision); ``--list-checks`` prints ``summary`` and docs/lint.md's rules table is generated
    from ``finds`` and ``fix`` (``python -m vramlens.lint.docs``), ``why`` and ``example`` below it."""

    code: str
    rule: str  # the rule's slug, as --select takes it
    severity: str  # "error" | "warning" | "info"
    summary: str  # one line
    finds: str = ""  # what it finds, in Markdown
    fix: str = "—"  # its default fix, in Markdown
    why: str = ""  # why it costs memory or time, in Markdown
    example: str = ""  # a short snippet it reports


@dataclass(frozen=True)
class Edit:
    """Replace the text between two positions with ``new_text`` (an insertion when they are equal)."""

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str


@dataclass(frozen=True)
class Fix:
    """One safe change; all its edits are applied together or not at all."""

    title: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    rule: str
    severity: str  # "error" | "warning" | "info"
    message: str
    fixes: tuple[Fix, ...] = field(default=())
    cell: int | None = None  # in a notebook: the cell (1-based, over all its cells); ``line`` counts within it

    def to_dict(self) -> dict:
        """The JSON form documented in docs/lint.md (fixes and edits become lists of objects; ``cell`` only
        for a notebook's findings)."""
        found = asdict(self, dict_factory=dict)
        if found["cell"] is None:
            del found["cell"]
        return found

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code)
