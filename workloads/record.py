"""Record the whole real-workload corpus on one GPU machine in one call, with its measured ground truth.

    bash workloads/record.sh OUT              # on the GPU machine, from the repository root
    bash workloads/record.sh OUT --dry-run    # here: the same orchestration on the stand-in torch

Phases (the log says when each starts and what every run measured):
  1. copy the workloads and VRAM Lens to neutral folders (/workspace/<folder>, /opt/vramlens), so the
     captures' paths name nothing of this repository or machine; prepare data and checkpoints;
  2. in parallel lanes (several processes on the GPU at once, each under its own cap): calibrate each
     case's cap from uncapped runs, then its confirming runs (`vramlens experiment`);
  3. alone: the workloads that use another library's allocator (JAX, CuPy), calibration and confirming runs;
  4. alone, one at a time (so NVML sees no other process): the recorded capture of every workload;
  5. the ground truth of each (ground_truth.py), then OUT: at most 8 files — log.txt, summary.json and
     captures-N.tar (each ≤ 15 MiB, members <workload>.tar.xz). `python workloads/unpack.py OUT`
     turns them into tests/fixtures/realworld/.
Every run has a timeout; a failing workload never stops the others; past the budget, tasks that
have not started are skipped (and logged) so that the captures and the packing always happen.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# Run as a script (here or from the neutral copy on a GPU machine), this folder is first on the path;
# imported, the evaluation harness (benchmarks/harness) has loaded these two under the same names.
import ground_truth  # noqa: E402
from manifest import WORKLOADS, Workload  # noqa: E402

MIB = 2**20
GIB = 2**30
PRIMARY_MAX_ENTRIES = 60_000
CALIBRATION_MAX_ENTRIES = 2_000
CONFIRMING_MAX_ENTRIES = 20_000
ARCHIVE_LIMIT = 15 * MIB  # what comes back from the GPU machine: 8 files, 16 MiB each, 64 MiB together
TOTAL_LIMIT = 56 * MIB  # all archives together, leaving room for log.txt and summary.json
MAX_ARCHIVES = 6
FRAGMENTATION_LADDER = (0.6, 0.4, 0.25, 0.12)
FRAGMENTATION_RETRY = 0.04
LOG_TAIL_LINES = 400
EXPANDABLE = "expandable_segments:True"


@dataclass
class Measured:
    """What one run's capture.json says (rank 0's for a torchrun launch)."""

    status: str | None
    oom: bool
    peak_allocated: int | None
    peak_reserved: int | None
    total_memory: int | None
    duration_s: float
    capture: str

    @classmethod
    def of(cls, capture_dir: Path, duration_s: float) -> "Measured":
        meta = ground_truth.primary_capture_meta(capture_dir)
        stats = meta.get("stats") or {}
        return cls(meta.get("status", "no capture"), bool(meta.get("oom")) or meta.get("status") == "oom",
                   stats.get("peak_allocated"), stats.get("peak_reserved"),
                   (meta.get("environment") or {}).get("total_memory"), duration_s, str(capture_dir))

    def to_run_json(self) -> dict:
        return {"status": self.status, "oom": self.oom, "peak_allocated": self.peak_allocated,
                "peak_reserved": self.peak_reserved, "duration_s": self.duration_s, "capture": self.capture}

    def text(self) -> str:
        return (f"{'OOM' if self.oom else self.status}, peak allocated {_size(self.peak_allocated)}, "
                f"reserved {_size(self.peak_reserved)}, {self.duration_s:.1f} s")


@dataclass
class Plan:
    """What calibration decided for one case (its counter-cases use the same)."""

    cap: int | None = None
    overrides: dict = field(default_factory=dict)  # argument → value set by calibration
    notes: list = field(default_factory=list)
    runs: list = field(default_factory=list)  # [label, Measured-as-dict]
    skip_confirming: bool = False


def _size(value: int | None) -> str:
    return "?" if value is None else f"{value / GIB:.2f} GiB"


def set_arg(args: list[str], flag: str, value) -> list[str]:
    """args with flag set to value: replaced where given (--flag V or --flag=V), else appended."""
    out, index, replaced = [], 0, False
    while index < len(args):
        arg = args[index]
        if arg == flag and index + 1 < len(args):
            out += [flag, str(value)]
            index += 2
            replaced = True
            continue
        if arg.startswith(flag + "="):
            out.append(f"{flag}={value}")
            replaced = True
        else:
            out.append(arg)
        index += 1
    if not replaced:
        out += [f"{flag}={value}"] if any(a.startswith("--") and "=" in a for a in args) else [flag, str(value)]
    return out


def with_overrides(args, overrides) -> list[str]:
    args = list(args)
    for flag, value in (overrides.items() if isinstance(overrides, dict) else overrides):
        args = set_arg(args, flag, value)
    return args


class Driver:
    def __init__(self, options: argparse.Namespace):
        self.options = options
        self.out = Path(options.out).resolve()
        self.started = time.monotonic()
        self.lanes = threading.Semaphore(options.lanes)
        self.lock = threading.Lock()
        self.active: set[subprocess.Popen] = set()
        self.waiting = 0  # processes of non-optional workloads waiting for a lane
        self.plans: dict[str, Plan] = {}
        self.skipped: list[str] = []
        self.results: dict[str, dict] = {}
        self.phases: dict[str, float] = {}
        self.stopping = False
        self.out.mkdir(parents=True, exist_ok=True)
        self.log_file = open(self.out / "log.txt", "a", encoding="utf-8")
        self.workloads = select_workloads(options.only, options.round, options.skip_optional)
        if options.root:
            self.root = self._writable(Path(options.root))
        else:  # a folder that says nothing of this repository, and is not where it lies
            neutral = [Path("/workspace"), Path("/home/user/project"), Path(tempfile.gettempdir()) / "workspace"]
            self.root = self._writable(*[path for path in neutral if not _contains(path, REPO)])
        self.tool = self._writable(Path(options.tool_dir), self.root / ".vramlens-tool")
        self.runs = self.root / ".runs"
        self.known = {}
        if options.known_plans:
            summary = _read_json(Path(options.known_plans))
            self.known = {name: (entry or {}).get("calibration") for name, entry in (summary.get("workloads") or {}).items()}

    # -- logging and time -------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def log(self, text: str) -> None:
        line = f"[{self.elapsed():6.1f}s] {text}"
        with self.lock:
            print(line, flush=True)
            self.log_file.write(line + "\n")
            self.log_file.flush()

    def time_left(self) -> float:
        return self.options.budget_s - self.elapsed()

    # -- places ---------------------------------------------------------------------
    def _writable(self, *candidates: Path) -> Path:
        for candidate in candidates:
            try:
                candidate.mkdir(parents=True, exist_ok=True)
                probe = candidate / ".write-probe"
                probe.write_text("")
                probe.unlink()
                return candidate
            except OSError:
                continue
        raise SystemExit(f"record: none of {', '.join(map(str, candidates))} is writable; give --root and --tool-dir.")

    def folder(self, workload: Workload) -> Path:
        return self.root / workload.folder

    def run_dir(self, workload: Workload) -> Path:
        return self.runs / workload.name

    def setup(self) -> None:
        families = {}
        for workload in self.workloads:
            families.setdefault(workload.folder, workload.family)
        for folder, family in families.items():
            target = self.root / folder
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(HERE / family, target, ignore=shutil.ignore_patterns("__pycache__", "data", "out", "checkpoints"))
        if self.options.dry_run:
            self._stand_in_scripts()
        tool_server = self.tool / "server"
        if tool_server.exists():
            shutil.rmtree(tool_server)
        shutil.copytree(REPO / "server" / "vramlens", tool_server / "vramlens", ignore=shutil.ignore_patterns("__pycache__"))
        if self.runs.exists():
            shutil.rmtree(self.runs)
        self.runs.mkdir(parents=True)
        self.log(f"workloads copied under {self.root}, VRAM Lens under {tool_server}; {len(self.workloads)} workloads")

    def _stand_in_scripts(self) -> None:
        """Dry run: every script is replaced by the stand-in, told how its workload behaves."""
        stand_in = (HERE / "dryrun" / "standin_workload.py").read_text()
        cases: dict[Path, list] = {}
        for workload in self.workloads:
            script = self.folder(workload) / workload.script
            script.write_text(stand_in)
            cases.setdefault(script, [])
            if workload.cap_from is None:  # a counter-case behaves as its case with the fix or a smaller size
                cases[script].append({"args": list(workload.args), "spec": stand_in_spec(workload)})
        for script, choices in cases.items():
            # Cases sharing a script: the stand-in takes the one whose arguments its command line matches best.
            script.with_suffix(".standin.json").write_text(json.dumps({"choices": choices}))

    def environment(self, extra: dict | None = None) -> dict:
        env = dict(os.environ)
        paths = [str(self.tool / "server")]
        if self.options.dry_run:
            paths.insert(0, str(REPO / "tests" / "agent_double" / "ranks"))
        env["PYTHONPATH"] = os.pathsep.join(paths)  # the neutral copy only: nothing of the repository
        # Allocator settings are what the confirming runs vary: none may come in from outside.
        for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "XLA_PYTHON_CLIENT_PREALLOCATE",
                     "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR", "CUPY_GPU_MEMORY_LIMIT"):
            env.pop(name, None)
        # Nothing can be downloaded on the GPU machine: never let a library try.
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1",
                   OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "4"), TOKENIZERS_PARALLELISM="false")
        env.update(extra or {})
        return env

    # -- processes -------------------------------------------------------------------
    def run_process(self, command: list[str], cwd: Path, log_path: Path, timeout_s: float,
                    extra_env: dict | None = None, shared: bool = True, room: tuple | None = None) -> tuple[int, float]:
        """One process, its output to log_path; in a lane when shared. Returns its exit code (124: timed
        out) and how long it ran (waiting for a lane not counted).

        room: (workload, runs) — start only if that many runs of it still leave the captures their time
        (checked when the lane is free, not when the task was queued); -2 when skipped for time."""
        if self.stopping:
            return -1, 0.0
        with self._lane(shared, optional=room is not None and room[0].optional):
            if room is not None and not self.room_for(room[1], room[0]):
                self.skipped.append(f"{room[0].name}: {log_path.name}")
                self.log(f"  skip {room[0].name} {log_path.name}: {self.time_left():.0f} s left, kept for the captures")
                return -2, 0.0
            env = self.environment(extra_env)
            if self.options.dry_run:
                env["PYTHONPATH"] = os.pathsep.join([str(REPO / "tests" / "agent_double"), env["PYTHONPATH"]])
                if command[3:4] == ["run"] and "--torchrun" in command:
                    # torchrun itself needs the real torch; ranks get the stand-in through ranks/sitecustomize.
                    env["PYTHONPATH"] = env["PYTHONPATH"].split(os.pathsep, 1)[1]
            log_path.parent.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            with open(log_path, "w", encoding="utf-8") as output:
                process = subprocess.Popen(command, cwd=cwd, env=env, stdout=output, stderr=subprocess.STDOUT,
                                           start_new_session=True)
                with self.lock:
                    self.active.add(process)
                try:
                    return process.wait(timeout=timeout_s), time.monotonic() - started
                except subprocess.TimeoutExpired:
                    _end_group(process)
                    return 124, time.monotonic() - started
                finally:
                    with self.lock:
                        self.active.discard(process)

    @contextlib.contextmanager
    def _lane(self, shared: bool, optional: bool):
        """A lane of the shared phase (none needed when alone); optional work yields to any other waiting."""
        if not shared:
            yield
            return
        if not optional:
            with self.lock:
                self.waiting += 1
        try:
            while True:
                self.lanes.acquire()
                if not optional or self.waiting == 0:
                    break
                self.lanes.release()
                time.sleep(0.2)
        finally:
            if not optional:
                with self.lock:
                    self.waiting -= 1
        try:
            yield
        finally:
            self.lanes.release()

    def vramlens(self) -> list[str]:
        return [self.options.python, "-m", "vramlens"]

    def run_capture(self, workload: Workload, args: list[str], folder: Path, cap: int | None, max_entries: int,
                    shared: bool, extra_env: dict | None = None, timeout_s: float | None = None,
                    room: bool = True) -> Measured:
        timeout = timeout_s or workload.timeout_s
        command = self.vramlens() + ["run", "-o", str(folder), "--python", self.options.python,
                                     "--max-entries", str(max_entries), "--timeout", str(timeout)]
        if cap is not None:
            command += ["--memory-limit", f"{cap // MIB}MiB"]
        command += self.launch(workload, args)
        if folder.exists():
            shutil.rmtree(folder)
        _, seconds = self.run_process(command, self.folder(workload), folder.with_name(folder.name + ".log"),
                                      timeout + 60, extra_env, shared, room=(workload, 1) if room else None)
        return Measured.of(folder, seconds)

    def launch(self, workload: Workload, args: list[str]) -> list[str]:
        if workload.launcher == "torchrun":
            return ["--torchrun", "--standalone", "--nproc-per-node", "1", workload.script, *args]
        return [workload.script, *args]

    # -- calibration -----------------------------------------------------------------
    def calibrate(self, workload: Workload, shared: bool) -> Plan:
        calibration, plan = workload.calibration, Plan()
        base = list(workload.args)
        where = self.run_dir(workload) / "calibration"
        if calibration.kind == "outside":
            return self._calibrate_outside(workload, plan, where)
        if calibration.kind == "fragmentation":
            return self._calibrate_fragmentation(workload, plan, base, where, shared)
        if calibration.kind == "headroom":
            return self._calibrate_headroom(workload, plan, base, where, shared)
        configs = [("baseline", base)] + [(_label(fit), with_overrides(base, fit)) for fit in calibration.fits]
        measured = self._in_parallel(workload, [(label, args, None) for label, args in configs], where, shared)
        plan.runs = [[label, vars(m)] for label, m in measured]
        (fail_label, fail), fits = measured[0], [m for _, m in measured[1:]]
        for label, m in measured:
            self.log(f"  calibrate {workload.name} [{label}] uncapped: {m.text()}")
        if fail.oom or fail.status != "completed" or any(f.status != "completed" for f in fits):
            plan.notes.append("an uncapped calibration run did not complete, so no cap could be set")
            plan.skip_confirming = True
            return plan
        fits_reserved = max(f.peak_reserved or 0 for f in fits)
        fits_allocated = int(max(f.peak_allocated or 0 for f in fits) * 1.1)
        needed = fail.peak_allocated or 0
        if needed > fits_reserved:
            plan.cap = (needed + fits_reserved) // 2
            plan.notes.append(f"cap halfway between the fitting runs' peak reserved ({_size(fits_reserved)}) and "
                              f"the baseline's peak allocated ({_size(needed)})")
        elif needed > fits_allocated:
            # The fits' caches overlap the baseline's live peak: under a cap the allocator releases its
            # cache before it gives up, so their live peak (with a margin) is what must fit.
            plan.cap = (needed + fits_allocated) // 2
            plan.notes.append(f"the fitting runs reserved up to {_size(fits_reserved)}, above the baseline's peak allocated "
                              f"({_size(needed)}): cap halfway between their peak allocated + 10 % ({_size(fits_allocated)}) and it")
        else:
            plan.notes.append(f"the baseline's peak allocated ({_size(needed)}) is not above the fitting runs' "
                              f"({_size(fits_allocated)} with a margin): no cap separates them")
            plan.skip_confirming = True
        plan.cap = plan.cap and plan.cap // MIB * MIB
        return plan

    def _calibrate_fragmentation(self, workload: Workload, plan: Plan, args: list[str], where: Path, shared: bool) -> Plan:
        (_, first), = self._in_parallel(workload, [("baseline", args, None)], where, shared)
        plan.runs.append(["baseline", vars(first)])
        self.log(f"  calibrate {workload.name} [baseline] uncapped: {first.text()}")
        if first.status != "completed" or not first.peak_allocated or not first.peak_reserved:
            plan.notes.append("the uncapped run did not complete: no cap")
            plan.skip_confirming = True
            return plan
        packed, reserved = first.peak_allocated, first.peak_reserved
        gap = max(reserved - packed, packed // 50)
        for fractions in (FRAGMENTATION_LADDER, (FRAGMENTATION_RETRY,)):
            caps = [(packed + int(f * gap)) // MIB * MIB for f in fractions]
            runs = self._in_parallel(workload, [(f"cap {c // MIB}MiB", args, c) for c in caps], where, shared)
            for (label, m), cap in zip(runs, caps):
                plan.runs.append([label, vars(m)])
                self.log(f"  calibrate {workload.name} [{label}]: {m.text()}")
            failing = [cap for (_, m), cap in zip(runs, caps) if m.oom]
            if failing:
                plan.cap = max(failing)
                plan.notes.append(f"packed peak {_size(packed)}, reserved peak {_size(reserved)}: the highest cap of "
                                  f"{', '.join(f'{c // MIB}MiB' for c in caps)} that ran out of memory")
                return plan
        plan.cap = min(caps)
        plan.notes.append(f"no cap between the packed peak {_size(packed)} and the reserved peak {_size(reserved)} "
                          "ran out of memory, down to the lowest tried: recorded there, expecting no OOM")
        plan.skip_confirming = True
        return plan

    def _calibrate_headroom(self, workload: Workload, plan: Plan, args: list[str], where: Path, shared: bool) -> Plan:
        """A completed run that should end at ``target`` of its cap: the cap is its uncapped peak allocated / target."""
        (_, first), = self._in_parallel(workload, [("baseline", args, None)], where, shared)
        plan.runs.append(["baseline", vars(first)])
        self.log(f"  calibrate {workload.name} [baseline] uncapped: {first.text()}")
        if first.status != "completed" or not first.peak_allocated:
            plan.notes.append("the uncapped run did not complete: no cap")
            plan.skip_confirming = True
            return plan
        target = workload.calibration.target
        plan.cap = (int(first.peak_allocated / target) + MIB - 1) // MIB * MIB
        plan.notes.append(f"cap {_size(plan.cap)}: the uncapped peak allocated ({_size(first.peak_allocated)}) is "
                          f"{target:.0%} of it")
        return plan

    def _calibrate_outside(self, workload: Workload, plan: Plan, where: Path) -> Plan:
        calibration = workload.calibration
        probe_args = with_overrides(with_overrides(workload.args, calibration.probe), {"--batch-size": calibration.probe_batch})
        m = self.run_capture(workload, probe_args, where / "probe", None, CALIBRATION_MAX_ENTRIES, shared=False)
        plan.runs.append(["probe", vars(m)])
        self.log(f"  calibrate {workload.name} [probe, other library released, batch {calibration.probe_batch}]: {m.text()}")
        if m.status != "completed" or not m.peak_reserved or not m.total_memory:
            plan.notes.append("the probe run did not complete: the default sizes are used")
            return plan
        batch = int(calibration.probe_batch * calibration.target * m.total_memory / m.peak_reserved) // 1024 * 1024
        plan.overrides["--batch-size"] = max(batch, 1024)
        if "--cupy-gib" in workload.sized_by:
            plan.overrides["--cupy-gib"] = round(0.65 * m.total_memory / GIB, 1)
        plan.notes.append(f"the probe needed {_size(m.peak_reserved)} at batch {calibration.probe_batch}: batch "
                          f"{plan.overrides['--batch-size']} for {calibration.target:.0%} of the device "
                          f"({_size(m.total_memory)})" + (f", CuPy data {plan.overrides['--cupy-gib']} GiB"
                                                          if "--cupy-gib" in plan.overrides else ""))
        return plan

    def _in_parallel(self, workload: Workload, configs: list, where: Path, shared: bool) -> list:
        def one(config):
            label, args, cap = config
            slug = "".join(c if c.isalnum() else "-" for c in label).strip("-")
            # An "uncapped" calibration run still gets a generous cap, so that one run whose cache balloons
            # cannot take the device from the runs beside it.
            cap = cap if cap is not None or not shared else self.options.calibration_cap
            return label, self.run_capture(workload, args, where / slug, cap, CALIBRATION_MAX_ENTRIES, shared)
        if not shared:
            return [one(config) for config in configs]
        with concurrent.futures.ThreadPoolExecutor(len(configs)) as pool:
            return list(pool.map(one, configs))

    # -- confirming runs ---------------------------------------------------------------
    def variant_specs(self, workload: Workload, args: list[str]) -> list[tuple[str, str]]:
        return variant_specs_of(workload, args)

    def confirm(self, workload: Workload, plan: Plan, shared: bool) -> None:
        args = with_overrides(workload.args, plan.overrides)
        where = self.run_dir(workload) / "experiment"
        specs = self.variant_specs(workload, args)
        if workload.launcher == "torchrun":
            return self._confirm_by_runs(workload, plan, args, specs, where, shared)
        command = self.vramlens() + ["experiment", "--repeats", "1", "--timeout", str(workload.timeout_s),
                                     "--max-entries", str(CONFIRMING_MAX_ENTRIES), "-o", str(where), "--json",
                                     "--python", self.options.python]
        if plan.cap is not None:
            command += ["--memory-limit", f"{plan.cap // MIB}MiB"]
        for kind, spec in specs:
            command += ["--variant", spec] if kind == "allocator" else [f"--arg-values={spec}"]
        command += [workload.script, *args]
        budget = (len(specs) + 1) * (workload.timeout_s + 30)
        code, seconds = self.run_process(command, self.folder(workload), self.run_dir(workload) / "experiment.log", budget,
                                shared=shared, room=(workload, len(specs) + 1))
        data = _read_json(where / "experiment.json")
        outcomes = ", ".join(f"{v['label']}: {ground_truth.outcome_of(v['runs'])}" for v in data.get("variants", []))
        self.log(f"  confirm {workload.name} (exit {code}, {seconds:.0f} s): {outcomes or 'no experiment.json'}")

    def _confirm_by_runs(self, workload: Workload, plan: Plan, args: list[str], specs: list, where: Path, shared: bool) -> None:
        """torchrun launches: `vramlens experiment` does not start torchrun, so each variant is one `vramlens run`."""
        variants = [("baseline", {"kind": "baseline"}, args, None)]
        for kind, spec in specs:
            if kind == "allocator":
                variants.append((f"PYTORCH_CUDA_ALLOC_CONF={spec}", {"kind": "allocator", "alloc_conf": spec}, args,
                                 {"PYTORCH_CUDA_ALLOC_CONF": spec, "PYTORCH_ALLOC_CONF": spec}))
            else:
                flag, value = spec.split("=", 1)
                variants.append((f"{flag} {value}", {"kind": "argument", "argument": flag, "value": value},
                                 set_arg(args, flag, value), None))
        rows = []
        for label, keys, variant_args, env in variants:
            slug = "".join(c if c.isalnum() else "-" for c in label).strip("-").lower()
            m = self.run_capture(workload, variant_args, where / slug / "run-1", plan.cap, CONFIRMING_MAX_ENTRIES,
                                 shared, extra_env=env)
            rows.append(dict({"label": label, "alloc_conf": None, "argument": None, "value": None}, **keys,
                             runs=[m.to_run_json()], ooms=int(m.oom)))
        data = {"schema": "workloads-confirming-runs", "schema_version": 1,
                "note": "made by workloads/record.py as one `vramlens run --torchrun` per variant "
                        "(vramlens experiment does not launch torchrun); fields as in vramlens experiment's variants",
                "script": workload.script, "args": args, "repeats": 1,
                "memory_limit": None if plan.cap is None else f"{plan.cap // MIB}MiB", "variants": rows}
        where.mkdir(parents=True, exist_ok=True)
        (where / "experiment.json").write_text(json.dumps(data, indent=2))
        self.log(f"  confirm {workload.name}: " + ", ".join(f"{r['label']}: {ground_truth.outcome_of(r['runs'])}" for r in rows))

    # -- phases ------------------------------------------------------------------------
    def prepare(self, workload: Workload, shared: bool) -> None:
        for step in workload.prep:
            if self.options.dry_run:
                self.log(f"  prepare {workload.name}: {' '.join(step)} (not needed by the stand-in)")
                continue
            code, _ = self.run_process([self.options.python, *step], self.folder(workload),
                                       self.run_dir(workload) / "prep.log", 180, shared=shared)
            self.log(f"  prepare {workload.name}: {' '.join(step)} → exit {code}")

    def known_plan(self, workload: Workload) -> Plan | None:
        """The calibration an earlier call of this driver made (--known-plans SUMMARY.json)."""
        known = self.known.get(workload.name)
        if not isinstance(known, dict) or not known.get("cap"):
            return None
        return Plan(cap=known["cap"], overrides=dict(known.get("overrides") or {}),
                    notes=list(known.get("notes") or []) + ["calibrated by an earlier call"], runs=list(known.get("runs") or []))

    def case_chain(self, workload: Workload, shared: bool) -> None:
        try:
            if not self._has_time(workload, "calibration"):
                return
            self.prepare(workload, shared)
            plan = self.known_plan(workload) or self.calibrate(workload, shared)
            self.plans[workload.name] = plan
            self.log(f"calibrated {workload.name}: cap {_cap_text(plan.cap)}; {'; '.join(plan.notes)}")
            if plan.skip_confirming:
                self.log(f"  confirm {workload.name}: skipped ({plan.notes[-1]})")
            elif self._has_time(workload, "confirming runs", runs=len(self.variant_specs(workload, workload.args)) + 1):
                self.confirm(workload, plan, shared)
        except Exception as error:  # one workload failing never stops the others
            self.log(f"!! {workload.name}: {type(error).__name__}: {error}")

    def _has_time(self, workload: Workload, what: str, runs: int = 1) -> bool:
        if self.room_for(runs, workload) and not self.stopping:
            return True
        self.skipped.append(f"{workload.name}: {what}")
        self.log(f"  skip {workload.name} {what}: {self.time_left():.0f} s left, kept for the captures")
        return False

    def estimate(self, workload: Workload) -> float:
        """Seconds one run of this workload takes: from its (or its case's) confirming runs when they are
        done (the script's time, plus start-up), else its calibration runs, else a guess."""
        case = workload.cap_from or workload.name
        confirming = _read_json(self.runs / case / "experiment" / "experiment.json").get("variants", [])
        seen = sorted(run["duration_s"] + 4 for variant in confirming for run in variant["runs"] if run.get("duration_s"))
        plan = self.plans.get(case)
        if not seen and plan:
            seen = sorted(m["duration_s"] for _, m in plan.runs if m.get("duration_s"))
        if seen:
            return seen[len(seen) // 2] * 1.2 + 2
        return self.options.run_guess_s * (2 if workload.timeout_s > 150 else 1)

    def reserve_for_captures(self) -> float:
        """What the recorded captures still to come need (they run one at a time, after everything else)."""
        return sum(self.estimate(w) for w in self.workloads
                   if w.name not in self.results and w.name not in (self.options.no_capture or ())) + 20

    def room_for(self, runs: int, workload: Workload) -> bool:
        return self.time_left() - self.reserve_for_captures() >= runs * self.estimate(workload)

    def cases(self, alone: bool) -> list[Workload]:
        return [w for w in self.workloads if w.calibration is not None and w.alone == alone]

    def phase_shared(self) -> None:
        cases = sorted(self.cases(alone=False), key=lambda w: -w.timeout_s)
        with concurrent.futures.ThreadPoolExecutor(max(1, len(cases))) as pool:
            list(pool.map(lambda w: self.case_chain(w, shared=True), cases))

    def phase_alone(self) -> None:
        for workload in self.cases(alone=True):
            self.case_chain(workload, shared=False)

    def phase_captures(self) -> None:
        ordered = [w for w in self.workloads if not w.optional] + [w for w in self.workloads if w.optional]
        for workload in ordered:
            if workload.name in (self.options.no_capture or ()):
                self.log(f"  skip {workload.name} capture: recorded by an earlier call")
                continue
            if self.stopping or self.time_left() < -self.options.overrun_s:
                self.skipped.append(f"{workload.name}: capture")
                self.log(f"  skip {workload.name} capture: out of time")
                continue
            case = workload.cap_from or workload.name
            needs_calibration = workload.calibration is not None or workload.cap_from is not None
            if needs_calibration and case not in self.plans:
                self.skipped.append(f"{workload.name}: capture (not calibrated)")
                self.log(f"  skip {workload.name} capture: {case} was not calibrated, so no cap or size is known")
                continue
            plan = self.plans.get(case, Plan())
            args = with_overrides(workload.args, plan.overrides)
            folder = self.run_dir(workload) / "capture"
            try:
                m = self.run_capture(workload, args, folder, plan.cap, self.options.max_entries, shared=False, room=False)
            except Exception as error:
                self.log(f"!! {workload.name} capture: {type(error).__name__}: {error}")
                continue
            if folder.with_name("capture.log").exists():
                shutil.move(str(folder.with_name("capture.log")), str(self.run_dir(workload) / "run.log"))
            self.results[workload.name] = {"args": args, "cap": plan.cap, "measured": vars(m)}
            self.log(f"captured {workload.name} (cap {_cap_text(plan.cap)}): {m.text()}")

    # -- ground truth and packing ---------------------------------------------------------
    def judge_all(self) -> None:
        for workload in self.workloads:
            if workload.name not in self.results:
                continue
            try:
                self._judge(workload)
            except Exception as error:
                self.log(f"!! ground truth of {workload.name}: {type(error).__name__}: {error}")

    def _judge(self, workload: Workload) -> None:
        run_dir, result = self.run_dir(workload), self.results[workload.name]
        case = workload.cap_from or workload.name
        plan = self.plans.get(case, Plan())
        experiment = _read_json(run_dir / "experiment" / "experiment.json") if workload.calibration else {}
        meta = ground_truth.primary_capture_meta(run_dir / "capture")
        log_text = (run_dir / "run.log").read_text(errors="replace") if (run_dir / "run.log").exists() else ""
        inputs = ground_truth.inputs_of(workload)
        verdict = ground_truth.judge(inputs, meta, log_text, experiment.get("variants", []), result["args"])
        cap = result["cap"]
        command = ["vramlens", "run", "--max-entries", str(self.options.max_entries)]
        command += ["--memory-limit", f"{cap // MIB}MiB"] if cap is not None else []
        command += self.launch(workload, result["args"])
        record = {
            "workload": workload.name, "library": workload.library, "story": workload.story,
            "intent": workload.intent, "held_out": workload.is_held_out, "round": workload.round,
            "recorded": {"folder": str(self.folder(workload)), "script": workload.script, "args": result["args"],
                         "launcher": workload.launcher, "memory_limit": None if cap is None else f"{cap // MIB}MiB",
                         "command": " ".join(command)},
            "calibration": {"of": case, "cap": cap, "overrides": plan.overrides, "notes": plan.notes,
                            "runs": [[label, _brief(m)] for label, m in plan.runs]},
            "inputs": inputs,
            **verdict,
            "agrees_with_intent": verdict["cause"] == workload.intent,
        }
        (run_dir / "ground_truth.json").write_text(json.dumps(record, indent=2))
        self.results[workload.name]["ground_truth"] = {k: record[k] for k in ("cause", "detail", "rule", "agrees_with_intent")}
        mark = "" if record["agrees_with_intent"] else f"  (built to show {workload.intent}: the measurement wins)"
        self.log(f"ground truth {workload.name}: {verdict['cause']} [{verdict['rule']}]{mark}")

    def pack(self) -> None:
        staging = Path(tempfile.mkdtemp(prefix="pack-", dir=self.runs))
        members = []
        for workload in self.workloads:
            run_dir = self.run_dir(workload)
            if not (run_dir / "capture").exists():
                continue
            fixture = staging / "fixtures" / workload.name
            shutil.copytree(run_dir / "capture", fixture / "capture")
            for name in ("ground_truth.json",):
                if (run_dir / name).exists():
                    shutil.copy(run_dir / name, fixture / name)
            if (run_dir / "experiment" / "experiment.json").exists():
                shutil.copy(run_dir / "experiment" / "experiment.json", fixture / "experiment.json")
            if (run_dir / "run.log").exists():
                lines = (run_dir / "run.log").read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
                (fixture / "run.log").write_text("\n".join(lines) + "\n")
            members.append((workload.name, fixture))
        archives = self._compress(members, staging)
        bins: list[list[Path]] = []
        packed = 0
        for archive in sorted(archives, key=lambda a: a.stat().st_size):  # the smallest first: as many as fit
            size = archive.stat().st_size
            if size > ARCHIVE_LIMIT or packed + size > TOTAL_LIMIT:
                self.skipped.append(f"{archive.name}: too large to bring back ({size / MIB:.1f} MiB)")
                self.log(f"!! {archive.name} is {size / MIB:.1f} MiB: no room left in what comes back, left out")
                continue
            packed += size
            for chosen in bins:
                if sum(a.stat().st_size for a in chosen) + size + 64 * 1024 <= ARCHIVE_LIMIT:
                    chosen.append(archive)
                    break
            else:
                if len(bins) == MAX_ARCHIVES:
                    self.log(f"!! no room left for {archive.name}: left out")
                    continue
                bins.append([archive])
        for old in self.out.glob("captures-*.tar"):
            old.unlink()
        for number, chosen in enumerate(bins, 1):
            with tarfile.open(self.out / f"captures-{number}.tar", "w") as tar:
                for archive in chosen:
                    tar.add(archive, arcname=archive.name)
        self.log(f"packed {sum(len(b) for b in bins)} of {len(archives)} workloads into {len(bins)} archive(s): "
                 + ", ".join(f"captures-{n}.tar ({sum(a.stat().st_size for a in b) / MIB:.1f} MiB)" for n, b in enumerate(bins, 1)))
        shutil.rmtree(staging, ignore_errors=True)

    def _compress(self, members: list, staging: Path) -> list[Path]:
        def one(member):
            name, fixture = member
            archive = staging / f"{name}.tar.xz"
            subprocess.run(["tar", "-C", str(fixture.parent), "-cJf", str(archive), name], check=True,
                           env=dict(os.environ, XZ_OPT="-6 -T2"))
            return archive
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            return list(pool.map(one, members))

    def write_summary(self) -> None:
        summary = {
            "dry_run": self.options.dry_run, "root": str(self.root), "elapsed_s": round(self.elapsed(), 1),
            "phases_s": self.phases, "skipped": self.skipped,
            "workloads": {w.name: dict(self.results.get(w.name, {"captured": False}),
                                       calibration=vars(self.plans[w.name]) if w.name in self.plans else None)
                          for w in self.workloads},
        }
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))

    def stop_everything(self) -> None:
        self.stopping = True
        with self.lock:
            active = list(self.active)
        for process in active:
            _end_group(process)

    def run(self) -> int:
        watchdog = threading.Timer(self.options.budget_s + self.options.overrun_s, self._hard_stop)
        watchdog.daemon = True
        watchdog.start()
        for name, phase in (("setup", self.setup), ("shared", self.phase_shared), ("alone", self.phase_alone),
                            ("captures", self.phase_captures)):
            began = self.elapsed()
            self.log(f"== phase {name}")
            try:
                phase()
            except Exception as error:
                self.log(f"!! phase {name}: {type(error).__name__}: {error}")
                if name == "setup":
                    break
            self.phases[name] = round(self.elapsed() - began, 1)
        watchdog.cancel()
        self.stopping = False
        self.judge_all()
        self.pack()
        self.write_summary()
        self.log(f"done in {self.elapsed():.0f} s; skipped: {', '.join(self.skipped) or 'nothing'}")
        return 0

    def _hard_stop(self) -> None:
        self.log("!! budget and overrun spent: ending the runs in progress, packing what exists")
        self.stop_everything()


def select_workloads(only: list[str] | None = None, round_: int | None = None, skip_optional: bool = False) -> list[Workload]:
    """The workloads a call records, in the manifest's order: those named (all when none is), of the
    round asked for (all rounds when none is), and the cases their counter-cases take a cap from."""
    selected = [w for w in WORKLOADS if (not only or w.name in only) and (round_ is None or w.round == round_)]
    missing_cases = {w.cap_from for w in selected if w.cap_from} - {w.name for w in selected}
    chosen = [w for w in WORKLOADS if w in selected or w.name in missing_cases]
    return [w for w in chosen if not (skip_optional and w.optional)]


def variant_specs_of(workload: Workload, args: list[str]) -> list[tuple[str, str]]:
    """(kind, spec) of each confirming run: the allocator setting, then --flag=value for the halved
    batch (or size), the halved steps and the fix."""
    specs = [("allocator", EXPANDABLE)]
    for knob in (workload.scale, workload.steps):
        if knob is None:
            continue
        value = ground_truth.current_value(args, knob.flag, knob.value)
        if value > 1:
            specs.append(("argument", f"{knob.flag}={value // 2}"))
    if workload.fix:
        specs.append(("argument", f"{workload.fix.flag}={workload.fix.value}"))
    return specs


def stand_in_spec(workload: Workload) -> dict:
    """How the stand-in imitates a workload in a dry run (memory behaviour only, on the pretend device)."""
    behaviour = {"working_set": "first_step", "retained_references": "growth", "fragmentation": "fragmentation",
                 "outside_allocator": "outside", "cached_not_leak": "cached", "no_problem": "healthy"}[workload.intent]
    if workload.cap_from:
        behaviour = "healthy_after_fix"
    if workload.growth_holder in ground_truth.INTENDED_CACHES:
        behaviour = "growth"
    knob = lambda k: None if k is None else {"flag": k.flag, "reference": k.value or (workload.calibration.probe_batch if workload.calibration else 1)}  # noqa: E731
    return {"behaviour": behaviour, "scale": knob(workload.scale), "steps": knob(workload.steps),
            "fix": None if workload.fix is None else {"flag": workload.fix.flag, "value": workload.fix.value},
            "nanogpt": workload.progress.startswith("^iter")}


def _contains(folder: Path, inner: Path) -> bool:
    try:
        inner.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def _label(overrides) -> str:
    return ", ".join(f"{flag} {value}" for flag, value in overrides)


def _cap_text(cap: int | None) -> str:
    return "none" if cap is None else f"{cap // MIB}MiB"


def _brief(m: dict) -> dict:
    return {k: m.get(k) for k in ("status", "oom", "peak_allocated", "peak_reserved", "duration_s")}


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _end_group(process: subprocess.Popen) -> None:
    """End a process we started and everything it started (it leads its own session)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Record the real-workload corpus on a GPU (see the module's docstring).")
    parser.add_argument("out", help="folder for log.txt, summary.json and captures-N.tar")
    parser.add_argument("--dry-run", action="store_true", help="the same orchestration on the stand-in torch, no GPU")
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch and the libraries")
    parser.add_argument("--root", help="neutral folder the workloads run from (default /workspace, else TMP/workspace)")
    parser.add_argument("--tool-dir", default="/opt/vramlens", help="neutral folder for the copy of VRAM Lens")
    parser.add_argument("--lanes", type=int, default=4, help="processes on the GPU at once in the shared phase")
    parser.add_argument("--budget-s", type=float, default=450.0, help="no new run starts after this many seconds")
    parser.add_argument("--run-guess-s", type=float, default=10.0,
                        help="seconds one run is expected to take before calibration has measured it")
    parser.add_argument("--overrun-s", type=float, default=60.0, help="past budget + this, runs in progress are ended")
    parser.add_argument("--max-entries", type=int, default=PRIMARY_MAX_ENTRIES,
                        help=f"allocator history of each recorded capture (default {PRIMARY_MAX_ENTRIES})")
    parser.add_argument("--only", nargs="*", help="record these workloads only (and the cases they take a cap from)")
    parser.add_argument("--round", type=int, help="record the workloads of this round only (manifest: round), e.g. 3")
    parser.add_argument("--known-plans", help="summary.json of an earlier call: reuse the caps it calibrated")
    parser.add_argument("--no-capture", nargs="*", help="workloads whose capture an earlier call recorded: confirming runs only")
    parser.add_argument("--calibration-cap", type=int, default=None, metavar="BYTES",
                        help="cap for the calibration runs that would otherwise run uncapped (the device is shared by lanes)")
    parser.add_argument("--skip-optional", action="store_true", help="leave out the optional workloads (DDP)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    if options.dry_run and not options.root:
        options.root = tempfile.mkdtemp(prefix="dry-workspace-")
        options.tool_dir = os.path.join(options.root, ".vramlens-tool")
    return Driver(options).run()


if __name__ == "__main__":
    sys.exit(main())
