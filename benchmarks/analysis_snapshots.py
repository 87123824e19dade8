"""Synthetic snapshots shaped like recorded ones, of any size, for the analysis' scale curve.

    python benchmarks/analysis_snapshots.py ENTRIES OUT.pickle [--depth shallow|deep] [--stacks python|all]

A training loop like the nanoGPT captures in tests/fixtures/realworld (nanogpt_*): a transformer's
forward through nested modules, the autograd engine's backward (no Python frame; C++ frames only with
``--stacks all``), AdamW's step, ``zero_grad``, an evaluation every 50 steps and a slow leak (a loss
kept with its graph each step), ending in an OOM. What a real ``_dump_snapshot`` holds and this
copies: one frame dict per distinct frame, shared by every stack it is in; a fresh frames list per
allocation, one shared by its free_requested / free_completed pair; frameless frees half the time;
a new ``compile_context`` string per entry; segment_alloc events from a caching allocator that reuses
freed blocks of the same size; the final segments with their live blocks.

``--depth shallow`` gives Python stacks of 15 frames (the nanoGPT fixtures': 9 to 19); ``deep`` wraps the
model in a trainer, accelerate-like wrappers and two more module levels: 30 frames (the Hugging Face
fixtures': 24 to 31). ``--stacks all`` interleaves the C++ frames torch records then (the allocator's,
the operator's dispatch, the interpreter's between Python frames, libc's): 58 and 103 frames (the
recorded working_set_stacks_all fixture: 42 to 68). The numbers mean nothing; the shape is what is timed.
"""

from __future__ import annotations

import argparse
import gc
import pickle
import random

MIB = 1 << 20
SITE = "/opt/conda/lib/python3.12/site-packages"
TORCH = f"{SITE}/torch"
AGENT = "/opt/vramlens/server/vramlens/agent"
ROOT = "/workspace/nanogpt"
SEGMENT = 64 * MIB
SMALL_SEGMENT = 2 * MIB


class Frames:
    """One dict per distinct frame, as torch shares them."""

    def __init__(self) -> None:
        self._known: dict = {}

    def __call__(self, filename: str, line: int, name: str) -> dict:
        key = (filename, line, name)
        frame = self._known.get(key)
        if frame is None:
            frame = self._known[key] = {"name": name, "filename": filename, "line": line}
        return frame


class Stacks:
    """The stacks of one program, innermost frame first, Python-only or with C++ frames."""

    def __init__(self, depth: str, stacks: str) -> None:
        self.f = Frames()
        self.cpp = stacks == "all"
        self.deep = depth == "deep"
        f = self.f
        self.agent = [f(f"{AGENT}/script_runner.py", 26, "execute_as_main"), f(f"{AGENT}/session.py", 166, "run_script"),
                      f(f"{AGENT}/session.py", 346, "main"), f(f"{AGENT}/launch.py", 36, "<module>")]
        self.call = [f(f"{TORCH}/nn/modules/module.py", 1790, "_call_impl"),
                     f(f"{TORCH}/nn/modules/module.py", 1779, "_wrapped_call_impl")]

    # -- Python stacks, innermost first ---------------------------------------------------------
    def _outer(self, line: int, forward: bool = True) -> list:
        """From the model call out to the interpreter: the script's line, and in a deep program the
        trainer's loop and (for the forward) the wrappers around the model."""
        f = self.f
        script = [f(f"{ROOT}/train.py", line, "<module>")]
        if not self.deep:
            return script + self.agent
        trainer = f"{SITE}/transformers/trainer.py"
        wrappers = [f(f"{SITE}/accelerate/utils/operations.py", 819, "forward"),
                    f(f"{SITE}/accelerate/utils/operations.py", 807, "__call__"),
                    f(f"{TORCH}/amp/autocast_mode.py", 44, "decorate_autocast"), *self.call,
                    f(trainer, 3801, "compute_loss")] if forward else []
        return (wrappers + [f(trainer, 3736 if forward else 3790, "training_step"),
                            f(trainer, 2554, "_inner_training_loop"), f(trainer, 2245, "train")] + script + self.agent)

    def model_op(self, layer_line: int, op: tuple, script_line: int) -> list:
        """An operator inside a transformer block's sub-module, called from the script's line."""
        f = self.f
        block = [f(f"{ROOT}/model.py", layer_line, "forward"), *self.call,
                 f(f"{ROOT}/model.py", 105 if layer_line < 100 else 106, "forward"), *self.call]
        if self.deep:  # a decoder inside a model inside a wrapper: two more module levels
            block += [f(f"{ROOT}/model.py", 181, "forward"), *self.call, f(f"{ROOT}/model.py", 240, "forward"), *self.call]
        model = [f(f"{ROOT}/model.py", 181, "forward"), *self.call]
        return self._native([f(*op), *block, *model, *self._outer(script_line)], op[2])

    def script_op(self, op: tuple, script_line: int, forward: bool = False) -> list:
        """An operator called by the script itself (the loss, zero_grad, a kept value)."""
        return self._native([self.f(*op), *self._outer(script_line, forward)], op[2])

    def optimizer(self, line: int) -> list:
        f = self.f
        via = [f(f"{TORCH}/optim/adamw.py", 480, "_single_tensor_adamw"), f(f"{TORCH}/optim/adamw.py", 229, "step"),
               f(f"{TORCH}/optim/optimizer.py", 79, "_use_grad"), f(f"{TORCH}/optim/optimizer.py", 516, "wrapper")]
        return self._native([*via, *self._outer(line, forward=False)], "_foreach_add")

    def backward(self, node: str) -> list:
        """The autograd engine's thread: no Python frame; with C++ stacks, the engine's own frames."""
        if not self.cpp:
            return []
        f = self.f
        return self._allocator() + [
            f("??", 0, f"at::native::{node.lower()}_backward_cuda(at::Tensor const&, at::Tensor const&)"),
            f("RegisterCUDA_0.cpp", 0, f"at::(anonymous namespace)::wrapper_CUDA_{node.lower()}_backward(at::Tensor const&)"),
            f("??", 0, f"at::_ops::{node.lower()}_backward::call(at::Tensor const&, at::Tensor const&)"),
            f("VariableType_0.cpp", 0, f"torch::autograd::VariableType::(anonymous namespace)::{node.lower()}_backward"),
            f("Functions.cpp", 0, f"torch::autograd::generated::{node}Backward0::apply(std::vector<at::Tensor>&&)"),
            f("??", 0, "torch::autograd::Node::operator()(std::vector<at::Tensor>&&)"),
            f("engine.cpp", 0, "torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*)"),
            f("engine.cpp", 0, "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&)"),
            f("engine.cpp", 0, "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
            f("engine.cpp", 0, "torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)"),
            f("python_engine.cpp", 0, "torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)"),
            f("??", 0, "execute_native_thread_routine"), f("??", 0, "start_thread"), f("??", 0, "clone"),
        ]

    # -- C++ frames (--stacks all) --------------------------------------------------------------
    def _allocator(self) -> list:
        f = self.f
        return [f("??", 0, "torch::unwind::unwind()"), f("??", 0, "torch::CapturedTraceback::gather(bool, bool, bool)"),
                f("memory_snapshot.cpp", 0, "torch::cuda::(anonymous namespace)::gather_with_cpp()"),
                f("CUDACachingAllocator.cpp", 0, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, CUstream_st*)"),
                f("", 0, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)"),
                f("", 0, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)"),
                f("??", 0, "at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)"),
                f("??", 0, "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)")]

    def _native(self, python: list, op: str) -> list:
        if not self.cpp:
            return python
        f = self.f
        frames = self._allocator() + [
            f("RegisterCUDA_0.cpp", 0, f"at::(anonymous namespace)::create_out(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::TensorOptions const&) [{op}]"),
            f("RegisterCUDA_0.cpp", 0, f"at::(anonymous namespace)::wrapper_CUDA_{op}(at::Tensor const&)"),
            f("??", 0, f"at::_ops::{op}::redispatch(c10::DispatchKeySet, at::Tensor const&)"),
            f("VariableType_1.cpp", 0, f"torch::autograd::VariableType::(anonymous namespace)::{op}(c10::DispatchKeySet, at::Tensor const&)"),
            f("??", 0, f"at::_ops::{op}::call(at::Tensor const&)"),
            f("python_nn_functions.cpp", 0, f"torch::autograd::THPVariable_{op}(_object*, _object*, _object*)"),
            f("??", 0, "PyCMethod_New"), f("??", 0, "_PyObject_MakeTpCall"),
        ]
        tail = python[-len(self.agent):]
        for frame in python[:-len(self.agent)]:  # the interpreter's frames between Python ones
            frames += [frame, f("??", 0, "_PyEval_EvalFrameDefault"), f("??", 0, "PyMethod_New")]
        frames += [f("??", 0, "PyEval_EvalCode"), f("??", 0, "Py_RunMain"), f("??", 0, "Py_BytesMain"),
                   f("??", 0, "__libc_start_main"), f("??", 0, "_start")]
        return frames + tail


class Allocator:
    """A caching allocator in miniature: freed blocks are reused by size, new memory comes in segments."""

    def __init__(self, trace: list) -> None:
        self.trace = trace
        self.free: dict[int, list[int]] = {}
        self.segments: list[list] = []  # [address, size, used]
        self.next_segment = 0x7F0000000000

    def address(self, size: int, frames: list, now: int) -> int:
        reusable = self.free.get(size)
        if reusable:
            return reusable.pop()
        pool_size = SMALL_SEGMENT if size <= MIB else max(SEGMENT, size)
        for segment in reversed(self.segments[-4:]):
            if segment[1] == pool_size and segment[2] + size <= segment[1]:
                segment[2] += size
                return segment[0] + segment[2] - size
        self.segments.append([self.next_segment, pool_size, size])
        self.trace.append({"action": "segment_alloc", "addr": self.next_segment, "size": pool_size, "stream": 0,
                           "time_us": now, "compile_context": "N/A", "user_metadata": "", "frames": list(frames)})
        self.next_segment += pool_size + (1 << 30)
        return self.next_segment - pool_size - (1 << 30)

    def release(self, address: int, size: int) -> None:
        self.free.setdefault(size, []).append(address)


def make_snapshot(entries: int, depth: str = "shallow", stacks: str = "python", seed: int = 0) -> dict:
    rng = random.Random(seed)
    s = Stacks(depth, stacks)
    t = TORCH
    ops = [(f"{t}/nn/modules/normalization.py", 217, "layer_norm"), (f"{t}/nn/modules/linear.py", 125, "linear"),
           (f"{t}/nn/functional.py", 5890, "scaled_dot_product_attention"), (f"{t}/nn/modules/linear.py", 125, "linear"),
           (f"{t}/nn/modules/dropout.py", 70, "dropout"), (f"{t}/nn/modules/normalization.py", 217, "layer_norm"),
           (f"{t}/nn/modules/linear.py", 125, "linear"), (f"{t}/nn/modules/activation.py", 734, "gelu"),
           (f"{t}/nn/modules/linear.py", 125, "linear")]
    layer_lines = [30, 60, 75, 82, 84, 31, 100, 101, 102]
    forward = [s.model_op(line, op, 300) for line, op in zip(layer_lines, ops)]
    evaluation = [s.model_op(line, op, 264) for line, op in zip(layer_lines, ops)]
    loss = s.script_op((f"{t}/nn/functional.py", 3494, "cross_entropy"), 301)
    zero_grad = s.script_op((f"{t}/optim/optimizer.py", 975, "zero_grad"), 312)
    kept = s.script_op((f"{t}/_tensor.py", 41, "wrapped"), 307)
    step = s.optimizer(310)
    nodes = ["Gelu", "Mm", "LayerNorm", "ScaledDotProductEfficientAttention", "Addmm", "NativeDropout"]
    grads = [s.backward(node) for node in nodes]
    free_sites = [zero_grad, loss, *forward[:3]]
    sizes = [4 * MIB, 12 * MIB, 4 * MIB, 4 * MIB, 4 * MIB, 4 * MIB, 16 * MIB, 16 * MIB, 4 * MIB]
    layers = 6
    params = [(3 * MIB, 4 * MIB) for _ in range(layers * 4)]

    trace: list[dict] = []
    heap = Allocator(trace)
    now = [1_796_123_429_000_000]
    live: dict[int, tuple[int, list]] = {}  # address -> (size, frames) of blocks not freed

    def alloc(size: int, stack: list) -> int:
        now[0] += rng.randint(3, 40)
        frames = list(stack)  # a fresh list per allocation, its frame dicts shared
        address = heap.address(size, frames, now[0])
        trace.append({"action": "alloc", "addr": address, "size": size, "stream": 0, "time_us": now[0],
                      "compile_context": "N/A", "user_metadata": "", "frames": frames})
        live[address] = (size, frames)
        return address

    def free(address: int) -> None:
        size, _ = live.pop(address)
        now[0] += rng.randint(3, 40)
        site = [] if rng.random() < 0.55 else list(rng.choice(free_sites))  # one list for the pair, as torch has
        for action in ("free_requested", "free_completed"):
            trace.append({"action": action, "addr": address, "size": size, "stream": 0, "time_us": now[0],
                          "compile_context": "N/A", "user_metadata": "", "frames": site})
        heap.release(address, size)

    weights = [alloc(size, s.script_op((f"{t}/nn/modules/module.py", 1343, "to"), 120)) for size, _ in params]
    optimizer_state: list[int] = []
    gradients: list[int] = []
    iteration = 0
    limit = entries - 1
    while len(trace) < limit:
        iteration += 1
        if iteration % 50 == 0:  # estimate_loss under no_grad: activations freed as they go
            for _ in range(3):
                for _ in range(layers):
                    for size, stack in zip(sizes, evaluation):
                        free(alloc(size, stack))
        activations = []
        for _ in range(layers):
            for number, (size, stack) in enumerate(zip(sizes, forward)):
                address = alloc(size, stack)
                if number in (4, 7) and rng.random() < 0.5:
                    free(address)  # a temporary the forward frees itself
                else:
                    activations.append(address)
        activations.append(alloc(2 * MIB, loss))
        if iteration % 2:
            alloc(512, kept)  # the slow leak: one loss kept with its graph every other step
        for position in range(layers * len(sizes)):  # backward: gradients made, activations freed
            if activations and position % 3 != 2:
                free(activations.pop())
            if position % 4 == 0:
                address = alloc(rng.choice(sizes), grads[position % len(grads)])
                if len(gradients) < len(params):
                    gradients.append(address)
                else:
                    free(address)
        while activations:
            free(activations.pop())
        for size, _ in params:
            if len(optimizer_state) < 2 * len(params):
                optimizer_state += [alloc(size, step), alloc(size, step)]
            free(alloc(size, step))
        while gradients:
            free(gradients.pop())
        if len(trace) > entries * 4:
            break
    del trace[limit:]
    trace.append({"action": "oom", "addr": 5 * MIB, "size": 6 * 1024 * MIB, "stream": 0, "time_us": now[0] + 10,
                  "compile_context": "N/A", "user_metadata": "", "device_free": 5 * MIB, "frames": list(forward[6])})
    # The allocator's state at the end: what the trace's last entries left live, block by block.
    live = {}
    for entry in trace:
        if entry["action"] == "alloc":
            live[entry["addr"]] = (entry["size"], entry["frames"])
        elif entry["action"] == "free_requested":
            live.pop(entry["addr"], None)
    segments = []
    for address, size, _ in heap.segments:
        blocks = [{"address": a, "size": b, "requested_size": b, "state": "active_allocated", "frames": list(frames)}
                  for a, (b, frames) in sorted(live.items()) if address <= a < address + size]
        used = sum(block["size"] for block in blocks)
        if used < size:
            blocks.append({"address": address + size - (size - used), "size": size - used, "requested_size": 0,
                           "state": "inactive", "frames": []})
        segments.append({"device": 0, "address": address, "total_size": size, "allocated_size": used,
                         "active_size": used, "requested_size": used, "stream": 0,
                         "segment_type": "small" if size == SMALL_SEGMENT else "large", "segment_pool_id": (0, 0),
                         "is_expandable": False, "frames": [], "blocks": blocks})
    return {"segments": segments, "device_traces": [trace],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "expandable_segments": False},
            "external_annotations": []}


def write_snapshot(path: str, entries: int, depth: str = "shallow", stacks: str = "python", seed: int = 0) -> None:
    """Build and pickle one snapshot (protocol 4, as torch's _dump_snapshot writes on Python 3.8+)."""
    gc.disable()  # millions of acyclic dicts: the collector would only rescan them
    try:
        snapshot = make_snapshot(entries, depth, stacks, seed)
        with open(path, "wb") as out:
            pickle.dump(snapshot, out, protocol=4)
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("entries", type=int)
    parser.add_argument("out")
    parser.add_argument("--depth", choices=("shallow", "deep"), default="shallow")
    parser.add_argument("--stacks", choices=("python", "all"), default="python")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    write_snapshot(args.out, args.entries, args.depth, args.stacks, args.seed)


if __name__ == "__main__":
    main()
