"""The typed results of an analysis. Bytes are ints; None means "not known", never 0."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

# Pseudo-lines for bytes that no user line can honestly be blamed for.
NO_FRAME_FUNCTION = "<no Python frame: autograd engine / C++>"
LIBRARY_ONLY_FUNCTION = "<library code only: no frame under the source root>"
BEFORE_TRACE_FUNCTION = "<allocated before the recorded history>"
VSCODE_CELL = "vscode-notebook-cell:"  # a cell URI used as a file name (VS Code's debugger compiles cells so)

@dataclass
class TimelinePoint:
    """One point of the memory timeline: the highest allocated and reserved bytes of its bucket of the trace."""

    index: int  # position in the trace
    time_us: int | None
    allocated: int  # the highest value in the bucket this point stands for
    reserved: int

@dataclass
class Timeline:
    """Allocated and reserved bytes over the trace, a bounded number of points, relative to its start."""

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
    """The out-of-memory error: what was asked for, what the device had free, where it was asked."""

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

@dataclass(frozen=True)
class CellRef:
    """The notebook cell a recorded line belongs to (a capture recorded in a Jupyter kernel)."""

    label: str  # "train.ipynb cell 4", or "train.ipynb In [7]" when the cell's place is not known
    index: int | None  # 0-based among all the notebook's cells
    execution_count: int | None
    notebook: str | None  # the notebook file here, when there is one

@dataclass
class LineStat:
    """One line of code and the allocations made under it: live bytes, blocks and sizes at the moment that matters."""

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
    cell: CellRef | None = None  # a line of a notebook cell (path is then the name its code ran under)
    # What is live at the moment, from the blocks themselves: block sizes (largest first) and the call
    # path of the stack that holds most of those bytes (``call_path`` is the line's first allocation's).
    live_sizes: list[tuple[int, int]] = field(default_factory=list)
    live_call_path: list[str] = field(default_factory=list)

    @property
    def is_user_line(self) -> bool:
        return self.path is not None

    @property
    def label(self) -> str:
        """``train.py:42`` (a notebook's: ``train.ipynb cell 4 line 7``) for a user line, the pseudo-line's name otherwise."""
        if self.path is None:
            return self.function
        if self.cell is not None:
            return f"{self.cell.label} line {self.line}"
        return f"{self.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{self.line}"

@dataclass
class Accounting:
    """Every byte at the moment that matters, from allocated to what lies outside PyTorch."""

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
    split_segments: int | None = None  # segments of the request's pool holding live and free blocks at once
    split_free: int | None = None  # free bytes stranded inside them

@dataclass
class ConfirmPlan:
    """The experiment that separates the two most likely causes (`vramlens run --confirm`)."""

    question: str  # "fragmentation or working set?"
    variants: list[dict]  # experiment variants: {"kind": "alloc_conf", "setting": ...} | {"kind": "arg", "arg": ..., "value": ...}
    command: str  # the CLI command that runs it
    expectation: str  # what each outcome would mean, in one sentence

@dataclass
class Diagnosis:
    """The cause of the OOM (or of the peak), how sure the analysis is, and the evidence it read."""

    cause: str  # working_set | retained_references | fragmentation | outside_allocator | cached_not_leak | no_problem
    confidence: float
    evidence: list[str]
    alternative: str | None = None  # the runner-up cause when it is close
    confirm: ConfirmPlan | None = None  # how to decide between cause and alternative by measurement
    measured: str | None = None  # "confirmed by measurement: …" / "revised by measurement: …"

    @property
    def confidence_label(self) -> str:
        return "high" if self.confidence >= 0.75 else "medium" if self.confidence >= 0.5 else "low"

@dataclass
class Action:
    """Something an editor can offer as a button beside a recommendation (docs/lsp-protocol.md).

    kinds: "confirm" (run the confirming experiment; arguments: {}), "compare" (controlled experiments;
    arguments: {"preset": "expandable_segments" | "max_split_size" | "memory_limit" | "arg_values",
    "setting"?: str, "arg"?: str, "values"?: [str]}), "open_line" (arguments: {"path": recorded path,
    "line": 1-based}), "open_settings" (arguments: {"query": str}).
    """

    kind: str
    title: str  # short, for a button: "Try expandable_segments"
    arguments: dict = field(default_factory=dict)

@dataclass
class Recommendation:
    """One thing to try, why it fits this run, and what an editor can run for it."""

    action: str  # one sentence: what to do
    reason: str  # one sentence: why it fits this run
    experiment: bool = False  # True when it must be measured, not assumed
    actions: list[Action] = field(default_factory=list)  # what an editor can run for it
    command: str | None = None  # the CLI command that does the same, for the terminal
    remedy: str | None = None  # the library remedy it is (analysis/recommendations/remedies.py), if one
    measured_edit: str | None = None  # the line as a confirming run executed it, when this is that measured fix

@dataclass
class Step:
    """One iteration of the loop that drives the work (a training step, an evaluation batch, a decoding step)."""

    number: int  # 1-based
    start_index: int  # trace positions, end exclusive
    end_index: int
    start_time_us: int | None
    end_time_us: int | None
    floor_allocated: int  # live bytes at the step's start: the floor between steps
    peak_allocated: int  # highest live bytes inside the step
    complete: bool  # False for the step the run ended (or failed) in
    kind: str = "step"  # "train" | "eval" | "decode" | "step"

@dataclass
class StepModel:
    """The run seen as iterations, from the trace alone (see analysis/steps/)."""

    steps: list[Step]
    driver: str | None  # the loop's frame, e.g. "transformers/trainer.py:2580 _inner_training_loop"
    boundary: str | None  # what starts a step, in words
    growth_per_step: int | None = None  # bytes the floor rises per completed step (least squares), None: too few steps
    survivors: int = 0  # bytes live at the moment that were allocated in earlier (completed) steps
    survivor_steps: int = 0  # how many different earlier steps those bytes come from
    survivors_by_line: dict = field(default_factory=dict)  # line key -> bytes from the second step on, still live
    old_survivors: int = 0  # of those, bytes older than the step before the moment's: accumulation
    cache_survivors: int = 0  # of those, bytes allocated inside cache code (a KV cache growing as designed)
    survivor_blocks: dict = field(default_factory=dict)  # address -> bytes of those blocks (joined to the census' roles)
    survivor_sites: dict = field(default_factory=dict)  # (file, line, function) that allocated them -> bytes
    setup_survivors: int = 0  # bytes from the second step on made by building a model or loading a checkpoint
    notes: list[str] = field(default_factory=list)

    @property
    def completed(self) -> int:
        return sum(1 for step in self.steps if step.complete)

@dataclass
class RoleShare:
    """Bytes of one role at the moment (issue: what the memory is). Roles add up to allocated."""

    role: str  # parameters | gradients | optimizer_state | kv_cache | inputs | held_by_python | activations | other
    bytes: int
    label: str  # for people: "optimizer state (AdamW: exp_avg, exp_avg_sq)"
    detail: str | None = None

@dataclass
class Holder:
    """A named root that keeps tensors alive: a module global, an attribute, a frame, a traceback."""

    root: str  # "__main__.all_logits", "Classifier.val_outputs", "traceback of train.py:40"
    kind: str  # list | dict | tuple | attribute | frame | traceback | object
    bytes: int
    tensors: int
    length: int | None = None
    created_at: tuple[str, int] | None = None  # (recorded path, line) of the container's creation, when known
    appended_at: tuple[str, int] | None = None  # (recorded path, line) that adds to it, when the trace shows it
    chain: list[str] = field(default_factory=list)
    with_graph: int | None = None  # of its tensors listed by the census, how many carry an autograd graph (None: unknown)
    copy_of: str | None = None  # "GPT2LMHeadModel": its tensors have the shapes of that model's parameters (a second copy)
    named: bool = True  # False: nothing names it (no chain from a named root, no name): only its type is known
    graph_bytes: int = 0  # bytes no Python object names, made at the line that made its graph-carrying tensors:
    # what their autograd graphs keep alive (saved activations)
    survivor_bytes: int | None = None  # of its bytes, those allocated in earlier steps: its growth (None: no step model)
    working_set: bool = False  # the step's own tensors (nothing from earlier steps), beside a holder that grew
    stored_at: tuple[str, int] | None = None  # (recorded path, line) of the statement of the user's code storing into it
    item_numel: int | None = None  # the most elements of one of its tensors, when the census listed every one (1: scalars)
    kept_lines: dict = field(default_factory=dict, repr=False)  # line key -> bytes it keeps that the line allocated:
    # its own tensors and what its graphs saved (a running sum's graph keeps what the model's forward made)

    @property
    def container_words(self) -> str:
        """What kind of thing holds the tensors, as people say it: `a list of 23`, `a local variable`."""
        if self.kind == "extra_roots":  # a Jupyter kernel's own references: its output history (Out[3], _3)
            return "the kernel's output history"
        noun = _HOLDER_NOUNS.get(self.kind, self.kind)
        if self.length is not None and self.kind in _SIZED_KINDS:
            return f"a {noun} of {self.length}"
        return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"

@dataclass
class StoringLine:
    """The statement of the user's code that keeps memory alive by storing into a holder
    (analysis/attribution/storing.py): the line to change. The allocation line is the second hop."""

    holder: str  # the holder as the census names it ("model.val_outputs"), else the container as written
    target: str  # the container as the statement writes it: "self.val_outputs", "all_logits"
    kind: str  # append | extend | update | augmented | item | concat | setattr
    path: str  # as recorded
    line: int
    bytes: int  # what the holder keeps at the moment (its tensors and what their graphs keep)
    growth_bytes: int  # of which allocated in earlier steps (0: not measured)
    allocated_at: tuple[str, int] | None = None  # the line that allocated what it keeps
    source: str | None = None
    local_path: str | None = None
    cell: CellRef | None = None
    found_by: str = "holder"  # "holder": the census named the holder; "growth": the growth's allocation line's data flow
    others: list[int] = field(default_factory=list)  # further lines storing into the same holder
    kept_from: dict = field(default_factory=dict)  # (recorded path, line) that allocated what it keeps -> bytes

    @property
    def label(self) -> str:
        if self.cell is not None:
            return f"{self.cell.label} line {self.line}"
        return f"{self.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{self.line}"

_SIZED_KINDS = ("list", "dict", "tuple", "set", "deque")
_HOLDER_NOUNS = {"locals": "local variable", "frame": "local variable", "attribute": "attribute", "traceback": "traceback",
                 "cache": "cache", "object": "object"}

@dataclass
class FrameNode:
    """A branch of the drill-down below a user line: live bytes by library frame."""

    label: str  # "GPT2Attention.forward", "cross_entropy"
    path: str | None  # recorded file
    line: int | None
    bytes: int
    children: list["FrameNode"] = field(default_factory=list)
    local_path: str | None = None

@dataclass
class PhaseMark:
    """A mark the user put into the recorded history (torch 2.14's ``annotate``): a phase on the timeline."""

    index: int  # trace position
    time_us: int | None
    text: str

# A capture recorded in a Jupyter kernel (read by load/notebook.py)

@dataclass(frozen=True)
class CellRun:
    """One execution of one cell, as the kernel logged it."""

    code_name: str | None
    execution_count: int | None
    index: int | None  # 0-based among the notebook's cells (markdown included), when known
    cell_id: str | None
    source: str
    outcome: str  # ok | error | oom | interrupted | running
    allocated_before: int | None
    allocated_after: int | None

    @property
    def lines(self) -> list[str]:
        return self.source.splitlines()


@dataclass(frozen=True)
class KernelHolder:
    """Device memory the kernel itself keeps alive (``Out[3]``, ``_``, ``sys.last_traceback``)."""

    root: str
    kind: str  # output | last_output | traceback
    free: str  # the command that lets it go
    what: str
    bytes: int
    exclusive_bytes: int | None  # what nothing else holds: what the command frees; None when not known
    graph_bytes: int  # reached through autograd graphs (tensors saved for backward)
    tensors: int
    shared_with: list[str] = field(default_factory=list)
    frames: list[tuple[str, int, str, int]] = field(default_factory=list)  # (recorded file, line, function, bytes)


@dataclass
class NotebookFacts:
    """A notebook run's cells as the capture recorded them, with what its kernel keeps."""

    path: str | None  # the notebook as recorded
    local_path: str | None  # the notebook file here, when there is one
    kernel: str | None
    runs: list[CellRun]  # in execution order
    holders: list[KernelHolder]  # when the capture was written (after an OOM: what the failure left behind)
    holders_note: str | None = None
    holders_at_oom: list[KernelHolder] | None = None  # at the failing allocation itself, when recorded
    executions_dropped: int = 0
    _by_name: dict[str, CellRun] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return os.path.basename(self.path) if self.path else "the kernel"

    def run_of(self, code_name: str) -> CellRun | None:
        """The latest execution that ran under this name (a cell run again keeps its name)."""
        return self._by_name.get(code_name)

    def is_cell(self, code_name: str) -> bool:
        return code_name in self._by_name or code_name.startswith(VSCODE_CELL)

    def ref(self, code_name: str) -> CellRef | None:
        run = self._by_name.get(code_name)
        if run is None:
            if code_name.startswith(VSCODE_CELL):  # VS Code's own name for a cell its kernel ran: no place
                name = os.path.basename(code_name[len(VSCODE_CELL):].split("#", 1)[0]) or self.name
                return CellRef(label=f"{name} (a cell)", index=None, execution_count=None, notebook=None)
            return None
        if run.index is not None:
            label = f"{self.name} cell {run.index + 1}"
        else:
            label = f"{self.name} In [{run.execution_count}]" if run.execution_count is not None else f"{self.name} cell"
        return CellRef(label=label, index=run.index, execution_count=run.execution_count, notebook=self.local_path)

    def place(self, code_name: str, line: int | None) -> str | None:
        ref = self.ref(code_name)
        return None if ref is None else f"{ref.label} line {line}"

    def source_line(self, code_name: str, line: int | None) -> str | None:
        run = self._by_name.get(code_name)
        if run is None or not line or not 0 < line <= len(run.lines):
            return None
        return run.lines[line - 1].strip()


@dataclass
class LineHistory:
    """What the editor draws over time per user line, from one pass over the trace."""

    tops: list  # per requested index: (label, live bytes) of the user line holding most then, or None
    at_steps: dict = field(default_factory=dict)  # (path, line) -> live bytes at the end of each step
    peaks: dict = field(default_factory=dict)  # (path, line) -> the most it held live at once


@dataclass
class Analysis:
    """The whole result of analysing one capture: what the text, the JSON and the editor show."""

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
    outcome_text: str = ""
    steps: StepModel | None = None  # None when the trace shows no recurring loop
    roles: list[RoleShare] = field(default_factory=list)  # empty without a census
    holders: list[Holder] = field(default_factory=list)
    census_moment: str | None = None  # when the census behind roles and holders was taken: oom | peak | end | on_demand
    breakdown: list[FrameNode] = field(default_factory=list)  # per top user line: its library frames
    mode: str | None = None  # "training" | "inference" | None (not enough evidence)  # for people: "out of memory (request 96.00 MiB)", "no OOM; ended by --timeout after 12 s"
    notebook: NotebookFacts | None = None  # recorded in a Jupyter kernel: its cells, and what the kernel itself keeps
    phase_marks: list[PhaseMark] = field(default_factory=list)  # the user's annotations (torch 2.14), in trace order
    storing: list[StoringLine] = field(default_factory=list)  # the lines that keep the memory, the grown one first
    storing_note: str | None = None  # why no storing line is named, when memory is kept and none could be found
    history: LineHistory | None = None  # per timeline point the top user line, per step each line's bytes (when asked)

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
