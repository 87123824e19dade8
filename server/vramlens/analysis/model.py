"""The typed results of an analysis. Bytes are ints; None means "not known", never 0."""

from __future__ import annotations

from dataclasses import dataclass, field

# Pseudo-lines for bytes that no user line can honestly be blamed for.
NO_FRAME_FUNCTION = "<no Python frame: autograd engine / C++>"
LIBRARY_ONLY_FUNCTION = "<library code only: no frame under the source root>"
BEFORE_TRACE_FUNCTION = "<allocated before the recorded history>"


@dataclass
class TimelinePoint:
    index: int  # position in the trace
    time_us: int | None
    allocated: int  # the highest value in the bucket this point stands for
    reserved: int


@dataclass
class Timeline:
    entries: int
    points: list[TimelinePoint]
    start_allocated: int
    start_reserved: int
    end_allocated: int
    end_reserved: int
    peak_allocated: int
    peak_reserved: int
    peak_index: int | None
    peak_time_us: int | None
    oom_index: int | None = None
    oom_time_us: int | None = None
    allocated_at_oom: int | None = None
    reserved_at_oom: int | None = None


@dataclass
class OomEvent:
    request: int | None
    device_free: int | None
    device_limit: int | None
    count: int
    index: int | None = None  # trace position of the (latest) OOM, when the trace holds it
    site: RequestSite | None = None  # where the failing request was made, when it can be told


@dataclass
class RequestSite:
    """The user line behind the failing request (see analysis/attribution/request_site.py)."""

    path: str
    line: int | None
    source: str | None
    autograd: bool  # made by the autograd engine (no Python frame) during work started at this line


@dataclass
class LineStat:
    path: str | None  # as recorded in the snapshot
    line: int | None
    function: str
    live_bytes: int  # at the OOM, or at the peak when there was none
    share: float  # of the live total at that moment
    allocated_bytes: int  # over the recorded history
    count: int
    growing: bool
    growth_bytes: int = 0  # how much the line's floor rose across the run
    live_blocks: int = 0
    size_histogram: list[tuple[int, int]] = field(default_factory=list)  # (block size, count), most common first
    call_path: list[str] = field(default_factory=list)  # user line first, then inward
    local_path: str | None = None  # where the file is on this machine
    source: str | None = None  # the line's text when the file exists here

    @property
    def is_user_line(self) -> bool:
        return self.path is not None

    @property
    def label(self) -> str:
        """``train.py:42`` for a user line, the pseudo-line's name otherwise."""
        if self.path is None:
            return self.function
        return f"{self.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{self.line}"


@dataclass
class Accounting:
    moment: str  # "oom" | "peak" | "end"
    allocated: int
    reserved: int
    cached: int  # reserved - allocated
    largest_free_block: int | None
    largest_free_pool: str | None  # the pool the request would be served from: "large" | "small"
    free_block_fits_request: bool | None
    driver_used: int | None = None
    process_used: int | None = None
    non_pytorch: int | None = None  # driver-visible use outside PyTorch's reserved memory
    context_and_libraries: int | None = None  # this process, outside reserved
    other_processes: int | None = None
    other_process_usage: list[tuple[int, int]] = field(default_factory=list)  # (pid, bytes), largest first
    unattributed: int | None = None  # used on the device but owned by no listed process (driver reservations)
    device_total: int | None = None
    driver_total: int | None = None  # the device's size as the driver reports it, paired with driver_used
    limit: int | None = None  # the allocator's ceiling: device total or a fraction cap
    limit_is_cap: bool = False
    request: int | None = None
    device_free: int | None = None
    nvml_phase: str | None = None


@dataclass
class Diagnosis:
    cause: str  # working_set | retained_references | fragmentation | outside_allocator | cached_not_leak | no_problem
    confidence: float
    evidence: list[str]

    @property
    def confidence_label(self) -> str:
        return "high" if self.confidence >= 0.75 else "medium" if self.confidence >= 0.5 else "low"


@dataclass
class Recommendation:
    action: str  # one sentence: what to do
    reason: str  # one sentence: why it fits this run
    experiment: bool = False  # True when it must be measured, not assumed


@dataclass
class Analysis:
    outcome: str  # "oom" | "completed"
    status: str  # capture.json status; "snapshot" for a raw pickle
    diagnosis: Diagnosis
    accounting: Accounting
    timeline: Timeline
    oom: OomEvent | None
    lines: list[LineStat]
    recommendations: list[Recommendation]
    environment: dict
    allocator_settings: dict
    source_root: str | None
    local_root: str | None
    notes: list[str] = field(default_factory=list)
    outcome_text: str = ""  # for people: "out of memory (request 96.00 MiB)", "no OOM; ended by --timeout after 12 s"

    @property
    def user_root(self) -> str | None:
        """The recorded source root, else (a raw pickle) the folder holding every user line's file."""
        if self.source_root:
            return self.source_root
        folders = {line.path.replace("\\", "/").rsplit("/", 1)[0] for line in self.lines if line.path and "/" in line.path}
        if not folders:
            return None
        parts = [folder.split("/") for folder in folders]
        common = []
        for pieces in zip(*parts):
            if len(set(pieces)) != 1:
                break
            common.append(pieces[0])
        root = "/".join(common)
        return root if root.count("/") >= 1 else None  # never "/" itself
