"""Which recording setting breaks activation checkpointing, and why (run on a CUDA machine).

    python benchmarks/compat_checkpoint_mechanism.py [PROGRAM [ARGS…]]   # default: workloads/compat/hf_bert_gc.py
Runs the program in a fresh process per variant: no recording, stacks at allocations only
(context="alloc"), stacks at frees too (context="all"), context="all" with the checkpoint's early
stop turned off (torch.utils.checkpoint.set_checkpoint_early_stop(False)), and context="all" with
reentrant checkpointing. Prints one line per variant: exit code and the last line of stderr.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "workloads", "compat", "hf_bert_gc.py")
VARIANTS = {
    "bare": ("none", True, []),
    "context=alloc": ("alloc", True, []),
    "context=all": ("all", True, []),
    "context=all, early stop off": ("all", False, []),
    "context=all, reentrant": ("all", True, ["--reentrant"]),
}
WRAPPER = """
import runpy, sys, torch, torch.utils.checkpoint as cp
context, early_stop, program = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
if context != "none":
    torch.cuda.init()
    torch.cuda.memory._record_memory_history(enabled="all", context=context, stacks="python")
sys.argv = [program] + sys.argv[4:]
if early_stop:
    runpy.run_path(program, run_name="__main__")
else:
    with cp.set_checkpoint_early_stop(False):
        runpy.run_path(program, run_name="__main__")
"""


def main() -> int:
    program = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    given = sys.argv[2:]
    for name, (context, early_stop, extra) in VARIANTS.items():
        run = subprocess.run([sys.executable, "-c", WRAPPER, context, "1" if early_stop else "0", program,
                              "--steps", "3", *given, *extra], capture_output=True, text=True, timeout=300)
        last = (run.stderr.strip().splitlines() or [""])[-1][:160]
        print(f"{name:32} exit {run.returncode:3}  {last}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
