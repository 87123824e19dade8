"""`vramlens run --torchrun`: every rank of a torchrun launch runs under the agent.

torchrun is started in the user's interpreter as ``python -m torch.distributed.run [its options]
AGENT --per-rank [agent options] -- SCRIPT [ARGS]``: the agent's path is torchrun's training
script and the user's script is the agent's argument. torchrun then starts each rank as
``python -u AGENT …`` with its usual environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, …),
with the very interpreter that runs torchrun — the one that has torch — so nothing has to name
it twice (with ``--no-python`` it would have to). Each rank writes ``OUT/rank-<RANK>``; on a
multi-node launch every node's vramlens writes the ranks of its node, and ``vramlens analyze``
merges the folders wherever they are.

There is no pipe from the ranks back to vramlens (torchrun closes inherited descriptors), so the
NVML samples taken here are periodic; the agent's own samples cover the OOM and the exit.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from vramlens.agent.capture_writer import FORMAT_NAME, META_FILE
from vramlens.capture.errors import CaptureError
from vramlens.runner.launch import (
    AGENT_SCRIPT, NoCaptureWritten, RunOptions, RunResult, Watched, agent_arguments, captures_of_run, check_started,
    finish_capture, prepare_run, read_json, start_and_watch,
)

RANK_PREFIX = "rank-"
# torchrun options that take no value; every other option takes one (as `--opt VALUE` or `--opt=VALUE`).
_FLAGS = {"--standalone", "--virtual-local-rank", "--virtual_local_rank"}
# Options that make torchrun run something other than a Python script: the agent cannot wrap those.
_REFUSED = {"--no-python", "--no_python", "-m", "--module", "--run-path", "--run_path"}


def split_torchrun_command(command: list[str]) -> tuple[list[str], Path, list[str]]:
    """(torchrun options, SCRIPT, ARGS) from ``[torchrun options] [--] SCRIPT [ARGS]``."""
    index, options_end = 0, None
    while index < len(command):
        token = command[index]
        if token == "--":
            options_end, index = index, index + 1
            break
        if not token.startswith("-") or token == "-":
            break
        name = token.split("=", 1)[0]
        if name in _REFUSED:
            raise ValueError(f"torchrun's {name} is not supported: vramlens runs each rank's Python script itself")
        index += 1 if ("=" in token or name in _FLAGS) else 2
    if index >= len(command):
        raise ValueError("give the script after the torchrun options, e.g. "
                         "`vramlens run --torchrun --nproc-per-node 2 train.py --bs 64`")
    options = command[:index if options_end is None else options_end]
    return options, Path(command[index]), command[index + 1:]


def single_node_options(processes_per_node: int) -> list[str]:
    """torchrun's options for one machine (the editor's "processes per node" setting)."""
    if processes_per_node < 1:
        raise ValueError(f"processes per node must be at least 1, not {processes_per_node}")
    return ["--standalone", "--nproc-per-node", str(processes_per_node)]


def check_ranks_target(folder: Path) -> None:
    """The run folder may hold other ranks' captures (another node's, an earlier run's), nothing else."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise CaptureError(f"{folder} is a file; choose a folder for the ranks' captures with -o.")
    for entry in folder.iterdir():
        if entry.name.startswith("."):
            continue
        if not (entry.is_dir() and entry.name.startswith(RANK_PREFIX)
                and read_json(entry / META_FILE).get("format") == FORMAT_NAME):
            raise CaptureError(f"{folder} already holds {entry.name}, which is not a rank's capture; "
                               "choose another folder with -o.")


def run_torchrun(options: RunOptions, torchrun_options: list[str]) -> RunResult:
    script, capture_dir, run_id = prepare_run(options, check_ranks_target)
    with tempfile.TemporaryDirectory(prefix="vramlens-torchrun-") as scratch:
        status_file = Path(scratch) / "status.json"
        command = [options.python, "-m", "torch.distributed.run", *torchrun_options, str(AGENT_SCRIPT), "--per-rank",
                   *agent_arguments(options, script, capture_dir, status_file, run_id)]
        return _supervise(options, command, capture_dir, status_file, run_id)


def _supervise(options: RunOptions, command: list[str], capture_dir: Path, status_file: Path, run_id: str) -> RunResult:
    watched = start_and_watch(options, command, link_to_agent=False)
    ranks = captures_of_run(sorted(capture_dir.glob(RANK_PREFIX + "*")) if capture_dir.is_dir() else [], run_id)
    if not ranks:
        for rank_status in sorted(status_file.parent.glob(status_file.name + ".*")):
            check_started(read_json(rank_status), "A rank could not start its script.")
        raise NoCaptureWritten(_nothing_written(watched), watched.exit_code)
    statuses = []
    for rank_dir, meta in ranks:
        rank_exit = watched.exit_code if watched.ending else meta.get("exit_code")
        status = finish_capture(rank_dir, meta, watched.sampler, meta.get("pid"), watched.ending, rank_exit, options)
        statuses.append(f"{rank_dir.name} {status}")
    return RunResult(exit_code=watched.exit_code, capture_dir=capture_dir, status=", ".join(statuses))


def _nothing_written(watched: Watched) -> str:
    if watched.ending:
        return f"torchrun was ended ({watched.ending}) before any rank wrote a capture; nothing was recorded."
    return (f"torchrun exited with code {watched.exit_code} before any rank wrote a capture (see its message above: "
            "its options, or torch in this interpreter); nothing was recorded.")
