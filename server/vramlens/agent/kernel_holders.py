"""CUDA tensors kept alive by the kernel itself, and the one command that lets each go.

IPython keeps references a user never wrote: every displayed result in ``Out[n]`` (and ``_n``),
the last three in ``_``, ``__`` and ``___``, and after a failed cell the exception with its
traceback in ``sys.last_traceback`` / ``sys.last_value`` — whose frames hold every local of
every function the failure passed through. Memory "leaks" from cell to cell this way. For each of
these roots we walk what it reaches (containers, object attributes, the locals of function frames,
the autograd graph of a tensor: the tensors it saved for backward) and count the storages found,
once each; then we say how much of that nothing else holds, i.e. what the command would free.
A graph is read as the census reads it (agent/census/autograd_graphs.py): saved tensors through
``SavedTensor.data``, never through ``_saved_*``, which unpacks them and so would run a saved-tensor
hook's unpack (a checkpoint's recomputation, an offload's copy back) inside the user's kernel.

Stdlib + torch only; bounded in objects visited and time; never raises into the kernel.
"""

from __future__ import annotations

import re
import sys
import time
import types

from .census.autograd_graphs import NodeReader

MAX_OBJECTS = 200_000  # objects visited per walk
BUDGET_S = 1.0  # for all walks together
MAX_SHARED_NAMES = 5
MAX_FRAMES = 8
_OUTPUT_NAME = re.compile(r"^_(\d+)$")
_IPYTHON_NAMES = {"_", "__", "___", "_i", "_ii", "_iii", "_oh", "_ih", "_dh", "In", "Out", "get_ipython", "exit", "quit",
                  "_exit_code", "__builtins__", "__builtin__", "__name__", "__doc__", "__package__", "__loader__",
                  "__spec__", "__session__", "__vsc_ipynb_file__"}
_SKIPPED_TYPES = (str, bytes, bytearray, int, float, complex, bool, type(None), types.ModuleType, type,
                  types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType, range)
FREE_TRACEBACK = "import sys; sys.last_type = sys.last_value = sys.last_traceback = None" + (
    "; sys.last_exc = None" if sys.version_info >= (3, 12) else "")


class Budget:
    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds
        self.exhausted = False

    def spent(self) -> bool:
        if not self.exhausted and time.monotonic() > self.deadline:
            self.exhausted = True
        return self.exhausted


class Reach:
    """What one walk found: storages (key -> bytes), how many tensors, the bytes met only through graphs."""

    def __init__(self):
        self.storages: dict[int, int] = {}
        self.tensors = 0
        self.graph_storages: set[int] = set()
        self.complete = True
        self.frames: dict[tuple, int] = {}  # (filename, line, function) -> bytes of its locals' tensors

    @property
    def bytes(self) -> int:
        return sum(self.storages.values())


def cuda_tensor_test(torch):
    """The default filter: a tensor on a CUDA device."""
    tensor_type = getattr(torch, "Tensor", None)
    if tensor_type is None:
        return lambda obj: False
    return lambda obj: isinstance(obj, tensor_type) and bool(getattr(obj, "is_cuda", False))


def _storage(tensor) -> tuple[int, int] | None:
    try:
        storage = tensor.untyped_storage()
        return int(storage.data_ptr()), int(storage.nbytes())
    except Exception:
        return None


def walk(root, is_tensor, budget: Budget, nodes: NodeReader, skip: set[int] | None = None) -> Reach:
    """Everything ``root`` keeps reachable, as storages. ``nodes``: how autograd nodes are read;
    ``skip``: ids not to enter (other roots' containers)."""
    reach = Reach()
    seen: set[int] = set(skip or ())
    stack: list[tuple[object, bool, tuple | None]] = [(root, False, None)]  # (object, reached through a graph, frame)
    visited = 0
    while stack:
        obj, via_graph, frame_key = stack.pop()
        if id(obj) in seen or isinstance(obj, _SKIPPED_TYPES):
            continue
        seen.add(id(obj))
        visited += 1
        if visited > MAX_OBJECTS or (visited % 512 == 0 and budget.spent()):
            reach.complete = False
            break
        try:
            children = _children(obj, is_tensor, reach, via_graph, frame_key, nodes)
        except Exception:  # an object whose attributes fail to read holds nothing we can name
            continue
        stack.extend(children)
    return reach


def _children(obj, is_tensor, reach: Reach, via_graph: bool, frame_key, nodes: NodeReader):
    if is_tensor(obj):
        storage = _storage(obj)
        if storage is not None:
            key, nbytes = storage
            if key not in reach.storages:
                reach.storages[key] = nbytes
                if via_graph:
                    reach.graph_storages.add(key)
                if frame_key is not None:
                    reach.frames[frame_key] = reach.frames.get(frame_key, 0) + nbytes
            reach.tensors += 1
        grad_fn = getattr(obj, "grad_fn", None)
        return [(grad_fn, True, frame_key)] if grad_fn is not None else []
    if isinstance(obj, types.TracebackType):
        return [(obj.tb_frame, via_graph, None), (obj.tb_next, via_graph, None)]
    if isinstance(obj, types.FrameType):
        if obj.f_locals is obj.f_globals:
            return []  # a cell's own frame: its "locals" are the user's namespace, held anyway
        code = obj.f_code
        key = (code.co_filename, obj.f_lineno, code.co_name)
        return [(value, via_graph, key) for value in obj.f_locals.values()]
    if isinstance(obj, BaseException):
        children = [obj.__traceback__, obj.__context__, obj.__cause__, *obj.args]
        children += list(getattr(obj, "__dict__", {}).values())
        return [(child, via_graph, frame_key) for child in children]
    if isinstance(obj, dict):
        return [(value, via_graph, frame_key) for value in obj.values()]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [(item, via_graph, frame_key) for item in obj]
    if nodes.is_node(obj):  # its inputs and what it saved for backward (never the leaf it accumulates into)
        return [(child, True, frame_key) for child in (*nodes.next_nodes(obj), *nodes.kept(obj))]
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        return [(value, via_graph, frame_key) for value in attributes.values()]
    return []


def _from_cell_code(tb, cell_names: set[str]):
    """The traceback from the first frame of cell code inward: the frames before it are IPython's own,
    whose locals reach the whole shell."""
    start = tb
    while start is not None and start.tb_frame.f_code.co_filename not in cell_names:
        start = start.tb_next
    return start


def kernel_roots(shell, cell_names: set[str] = frozenset()) -> list[tuple[str, str, str, object]]:
    """(name, kind, free command, object) for every reference the kernel keeps on its own."""
    roots = []
    user_ns = getattr(shell, "user_ns", {}) or {}
    outputs = user_ns.get("Out")
    if not isinstance(outputs, dict):
        history = getattr(shell, "history_manager", None)
        outputs = getattr(history, "output_hist", None) or {}
    for number, value in list(outputs.items()):
        roots.append((f"Out[{number}]", "output", f"%xdel _{number}", value))
    displayhook = getattr(shell, "displayhook", None)
    for name in ("_", "__", "___"):
        value = getattr(displayhook, name, None)
        if value is None or isinstance(value, str):
            continue
        number = next((n for n, output in outputs.items() if output is value), None)
        if number is not None:
            continue  # the same object as Out[n], named there
        roots.append((name, "last_output", "%reset -f out", value))
    tb = getattr(sys, "last_traceback", None)
    error = getattr(sys, "last_value", None)
    if tb is not None or error is not None:
        # The exception's own traceback is the same chain: walked from the cell's frame, not from IPython's.
        kept = (_from_cell_code(tb, cell_names), error.args if isinstance(error, BaseException) else error,
                getattr(error, "__context__", None), getattr(error, "__cause__", None))
        roots.append(("sys.last_traceback", "traceback", FREE_TRACEBACK, kept))
    return roots


def _shell_internals(shell) -> set[int]:
    """Objects a walk never enters: the shell and its namespaces (reached from IPython's frames or
    objects that point back at it), which would make every root seem to hold everything."""
    inside = [shell, getattr(shell, "user_ns", None), getattr(shell, "user_global_ns", None),
              getattr(shell, "displayhook", None), getattr(shell, "history_manager", None),
              getattr(shell, "user_ns_hidden", None), getattr(shell, "kernel", None)]
    return {id(obj) for obj in inside if obj is not None}


def user_variables(shell) -> dict[str, object]:
    """The user's own names: what the kernel would keep no matter what."""
    user_ns = getattr(shell, "user_ns", {}) or {}
    hidden = getattr(shell, "user_ns_hidden", {}) or {}
    return {name: value for name, value in list(user_ns.items())
            if name not in _IPYTHON_NAMES and not _OUTPUT_NAME.match(name) and not name.startswith("_i")
            and not (name in hidden and hidden[name] is value)}


def describe(value) -> str:
    """A few words for people: ``Tensor (4096, 4096) float32 with grad_fn``, ``list of 3``."""
    try:
        kind = type(value).__name__
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            shape = tuple(int(size) for size in value.shape)
            graph = " with grad_fn" if getattr(value, "grad_fn", None) is not None else ""
            return f"{kind} {shape} {str(value.dtype).replace('torch.', '')}{graph}"
        if isinstance(value, (list, tuple, dict, set)):
            return f"{kind} of {len(value)}"
        return kind
    except Exception:
        return "object"


def kernel_holders(shell, torch, cell_names: set[str] = frozenset(), is_tensor=None, budget_s: float = BUDGET_S) -> dict:
    """The kernel's own holders of device memory, largest first, each with what it alone keeps.
    ``cell_names``: the file names cell code ran under (where a kept traceback's frames begin)."""
    is_tensor = is_tensor or cuda_tensor_test(torch)
    started = time.monotonic()
    budget = Budget(budget_s)
    nodes = NodeReader(torch)
    try:
        roots = kernel_roots(shell, cell_names)
        skip = _shell_internals(shell)
    except Exception as error:
        return {"holders": [], "complete": False, "note": f"IPython's references could not be read ({type(error).__name__}).",
                "duration_s": 0.0}
    found = []
    for name, kind, free, value in roots:
        reach = walk(value, is_tensor, budget, nodes, skip)
        if reach.storages:
            found.append((name, kind, free, value, reach))
    complete = all(reach.complete for *_, reach in found)
    user = {}
    if found:
        for variable, value in user_variables(shell).items():
            user[variable] = walk(value, is_tensor, budget, nodes, skip)
            complete = complete and user[variable].complete
    holders = []
    for name, kind, free, value, reach in found:
        held_elsewhere: set[int] = set()
        shared_with = []
        others = [(other, other_reach) for other, _k, _f, _v, other_reach in found if other != name]
        for variable, other_reach in [*user.items(), *others]:
            common = reach.storages.keys() & other_reach.storages.keys()
            if common:
                held_elsewhere |= common
                shared_with.append(variable)
        exclusive = sum(size for key, size in reach.storages.items() if key not in held_elsewhere)
        holder = {
            "root": name,
            "kind": kind,
            "free": free,
            "what": "the last exception and its traceback" if kind == "traceback" else describe(value),
            "tensors": reach.tensors,
            "storages": len(reach.storages),
            "bytes": reach.bytes,
            "exclusive_bytes": exclusive if complete else None,
            "graph_bytes": sum(reach.storages[key] for key in reach.graph_storages),
            "shared_with": shared_with[:MAX_SHARED_NAMES],  # user variables first, then other kernel roots
            "frames": [{"filename": f, "line": line, "name": fn, "bytes": size}
                       for (f, line, fn), size in sorted(reach.frames.items(), key=lambda item: -item[1])[:MAX_FRAMES]],
        }
        holders.append(holder)
    holders.sort(key=lambda h: (-(h["exclusive_bytes"] if h["exclusive_bytes"] is not None else h["bytes"]), h["root"]))
    note = None if complete else "The walk was cut short by its time budget: what each holder alone keeps is not known."
    return {"holders": holders, "complete": complete, "note": note, "duration_s": round(time.monotonic() - started, 3)}


def extra_roots(shell) -> dict[str, object]:
    """IPython's output history by name (``Out[3]``, ``_``), for the tensor census: a holder found through
    one is named by it. The kept traceback is not among them: the census finds ``sys.last_traceback`` itself."""
    try:
        return {name: value for name, kind, _free, value in kernel_roots(shell) if kind != "traceback"}
    except Exception:
        return {}
