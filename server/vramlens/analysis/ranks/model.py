"""Typed results of comparing the ranks of one torchrun launch. Bytes are ints; None = not known."""

from __future__ import annotations

from dataclasses import dataclass, field

from vramlens.analysis.model import Analysis

# How a rank ended, as far as the comparison is concerned.
OWN_OOM = "oom"  # it ran out of memory itself
OWN_ERROR = "error"  # it failed with an exception (or exit code) of its own
COLLECTIVE = "collective_error"  # a collective failed under it (NCCL error, watchdog, peer gone)
STOPPED = "stopped"  # ended from outside: torchrun's SIGTERM, vramlens' --timeout, Ctrl-C
COMPLETED = "completed"
OWN_FAILURES = (OWN_OOM, OWN_ERROR)


@dataclass
class RankSummary:
    """One rank's capture in a distributed job, in the figures the ranks are compared by."""

    rank: int
    local_rank: int | None
    node_rank: int | None
    hostname: str | None
    device_index: int | None
    pid: int | None
    capture: str  # the capture folder
    status: str  # capture.json status
    exit_code: int | None
    ending: str  # OWN_OOM | OWN_ERROR | COLLECTIVE | STOPPED | COMPLETED
    ending_text: str = ""  # one sentence for people
    exception: str | None = None  # "DistBackendError: NCCL error …", when it raised one
    failed_at: float | None = None  # epoch seconds of its failure (the OOM, the exception, the stop)
    collateral: bool = False  # ended because another rank failed first, not of its own
    peak_allocated: int | None = None
    peak_reserved: int | None = None
    peak_driver_visible: int | None = None
    driver_visible_scope: str | None = None  # "process" (NVML by PID) | "device" (whole device)
    outside_pytorch: int | None = None  # this process's device memory outside PyTorch's reserved (context, NCCL, …)
    outside_pytorch_moment: str | None = None  # "exit" | "oom" | "peak" | "end"
    analysis: Analysis | None = None
    problem: str | None = None  # why the capture could not be analyzed
    meta: dict = field(default_factory=dict, repr=False)  # its capture.json, for whoever shows the rank


@dataclass
class Imbalance:
    """The spread of one metric across ranks: the largest and the smallest, and which ranks they are."""

    metric: str  # peak_allocated | peak_reserved | peak_driver_visible | outside_pytorch
    max_rank: int
    max_bytes: int
    min_rank: int
    min_bytes: int

    @property
    def ratio(self) -> float | None:
        return self.max_bytes / self.min_bytes if self.min_bytes > 0 else None


@dataclass
class LineSpread:
    """One source line's live bytes on every rank (at each rank's OOM, else its peak)."""

    path: str | None  # relative to the source root when under it; None for a pseudo-line
    line: int | None
    function: str
    local_path: str | None
    live_by_rank: dict[int, int]
    allocated_by_rank: dict[int, int]

    @property
    def spread(self) -> int:
        return max(self.live_by_rank.values()) - min(self.live_by_rank.values())

    @property
    def high_rank(self) -> int:
        return max(self.live_by_rank, key=lambda rank: (self.live_by_rank[rank], -rank))

    @property
    def low_rank(self) -> int:
        return min(self.live_by_rank, key=lambda rank: (self.live_by_rank[rank], rank))


@dataclass
class RankComparison:
    """The ranks of one distributed job side by side: which failed first, and how uneven they are."""

    ranks: list[RankSummary]  # by rank
    world_size: int | None
    failing_rank: int | None  # the rank that failed first of its own (else the first to fail at all)
    imbalance: dict[str, Imbalance]
    lines: list[LineSpread]  # largest spread first
    missing_ranks: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def index_of(self, rank: int) -> int | None:
        return next((index for index, summary in enumerate(self.ranks) if summary.rank == rank), None)

    @property
    def failing_index(self) -> int | None:
        """Where the failing rank is in ``ranks`` (None when no rank failed)."""
        return None if self.failing_rank is None else self.index_of(self.failing_rank)

    @property
    def default_index(self) -> int:
        """The rank an editor shows first: the failing one, else the one that used most memory."""
        if self.failing_index is not None:
            return self.failing_index
        usable = [index for index, summary in enumerate(self.ranks) if summary.analysis is not None]
        return max(usable, key=lambda index: self.ranks[index].peak_reserved or 0) if usable else 0

    def spread_at(self, path: str, line: int) -> LineSpread | None:
        """The spread of a line of a local file (e.g. for a hover), matched by local path or path suffix."""
        wanted = path.replace("\\", "/")
        for spread in self.lines:
            if spread.line != line or spread.path is None:
                continue
            if spread.local_path == path or wanted.endswith("/" + spread.path.lstrip("/")) or wanted == spread.path:
                return spread
        return None
