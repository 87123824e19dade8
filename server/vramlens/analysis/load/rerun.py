"""The command that repeats this run with one allocator setting changed, so an experiment measures
the same script, arguments and memory cap that produced the capture."""

from __future__ import annotations

import shlex

PLACEHOLDER_SCRIPT = "YOUR_SCRIPT.py"  # a raw snapshot records no command line


def recorded_argv(meta: dict) -> list[str]:
    argv = [str(arg) for arg in meta.get("argv") or []]
    if not argv:  # argv[0] is the script as given; without argv only its absolute path is known
        argv = [str(meta["script"])] if meta.get("script") else [PLACEHOLDER_SCRIPT]
    return argv


def torchrun_options(meta: dict) -> list[str] | None:
    """The torchrun options that launch the recorded rank's job again (from what torchrun told each rank),
    or None when the capture is not of a torchrun rank."""
    place = meta.get("distributed")
    if not isinstance(place, dict):
        return None
    per_node, world = place.get("local_world_size"), place.get("world_size")
    options = ["--nproc-per-node", str(per_node)] if isinstance(per_node, int) and per_node > 0 else []
    if options and isinstance(world, int) and world > per_node:
        options += ["--nnodes", str(world // per_node), "--node-rank", str(place.get("node_rank") or 0)]
        for key, flag in (("master_addr", "--master-addr"), ("master_port", "--master-port")):
            if place.get(key):
                options += [flag, str(place[key])]
    return options


def memory_limit_options(meta: dict) -> list[str]:
    requested = (meta.get("memory_limit") or {}).get("requested")
    return ["--memory-limit", str(requested)] if requested else []


def experiment_command(meta: dict, setting: str) -> str:
    """``vramlens run --try-alloc-conf SETTING [--memory-limit AS_GIVEN] argv...``; for a torchrun rank
    (where --try-alloc-conf is not available) the launch again with the setting in the environment."""
    torchrun = torchrun_options(meta)
    if torchrun is not None:
        return (f"PYTORCH_CUDA_ALLOC_CONF={shlex.quote(setting)} "
                + shlex.join(["vramlens", "run", *memory_limit_options(meta), "--torchrun", *torchrun, *recorded_argv(meta)]))
    return shlex.join(["vramlens", "run", "--try-alloc-conf", setting, *memory_limit_options(meta), *recorded_argv(meta)])
