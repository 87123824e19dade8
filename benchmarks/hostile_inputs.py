"""Hostile and broken inputs against one checkout of VRAM Lens: what each does, in a table.

    python benchmarks/hostile_inputs.py [--server DIR] [--only CLASS ...] [--memory]

``--server`` is the ``server/`` folder of the checkout to try (default: this one), so the same inputs
can be run against an older commit (``git archive COMMIT | tar -x -C /tmp/old`` then
``--server /tmp/old/server``). Every case runs in a child process under a memory cap (4 GiB of address
space) and a timeout (30 s), and is judged: ``ok`` when it ends in a result or one sentence and shows
nothing it must not, else what went wrong (a traceback, a hang, memory, a file disclosed, a control
sequence or a forged line printed, a secret left in a redacted text, no answer from the server...).
The inputs are those of tests/hostile/corpus.py and the tests beside it.

``--memory`` measures instead the peak memory of ``vramlens analyze`` on every hostile snapshot
against a bare ``pickle.load`` of a valid snapshot of the same size (each above its interpreter's own
baseline after imports), and the same for a valid 1,000,000-entry snapshot (docs/capture-format.md).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "tests" / "hostile"), str(ROOT / "tests" / "unit"), str(HERE)]

import corpus  # noqa: E402

MEMORY_CAP = 4 << 30
TIMEOUT_S = 30
CAPTURES = ROOT / "tests" / "fixtures" / "captures"
SCENARIOS = ROOT / "scenarios"


def _capped():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


class Checkout:
    def __init__(self, server: Path):
        self.server = server
        self.env = dict(os.environ, PYTHONPATH=str(server))
        self.env.pop("PYTORCH_CUDA_ALLOC_CONF", None)

    def run(self, *args, cwd=None, env=None, timeout=TIMEOUT_S):
        """(returncode or "hang", stdout, stderr, seconds) of `python -m vramlens ARGS`."""
        started = time.monotonic()
        try:
            done = subprocess.run([sys.executable, "-m", "vramlens", *map(str, args)], capture_output=True, text=True,
                                  errors="replace", timeout=timeout, cwd=cwd, env=env or self.env, preexec_fn=_capped)
        except subprocess.TimeoutExpired as expired:
            return "hang", str(expired.stdout or ""), str(expired.stderr or ""), time.monotonic() - started
        return done.returncode, done.stdout, done.stderr, time.monotonic() - started

    def python(self, code: str, timeout=TIMEOUT_S):
        started = time.monotonic()
        try:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, errors="replace",
                                  timeout=timeout, env=self.env, preexec_fn=_capped)
        except subprocess.TimeoutExpired:
            return "hang", "", "", time.monotonic() - started
        return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def judge(code, out: str, err: str, sentence_codes=(2,)) -> str:
    """'ok' for a result or one sentence (which the script's own traceback may follow, after a blank
    line, as `analyze` prints it for a run that ended early); otherwise what happened."""
    if code == "hang":
        return f"hang (killed after {TIMEOUT_S} s)"
    ours = err.split("\n\n", 1)[0] if err.startswith("vramlens") else err
    if code in (-9, 137) or any(line.startswith("MemoryError") for line in ours.splitlines()):
        return "memory (over the 4 GiB cap)"
    if "Traceback (most recent call last)" in ours:
        last = [line for line in ours.strip().splitlines() if line and not line.startswith(" ")][-1]
        return f"traceback ({last.split(':')[0][:40]})"
    if code == 0:
        return "ok"
    lines = [line for line in ours.strip().splitlines() if line]
    if code in sentence_codes and len(lines) == 1 and lines[0].startswith("vramlens"):
        return "ok"
    if isinstance(code, int) and code < 0:
        return f"killed by signal {-code}"
    return f"exit {code}, {len(lines)} lines on stderr"


# -- the cases ----------------------------------------------------------------------------------------
def snapshot_cases(checkout: Checkout, work: Path):
    for group, builder in (("snapshot opcodes", corpus.opcode_inputs), ("special files", corpus.special_files),
                           ("snapshot shapes", corpus.shape_inputs)):
        folder = work / group.replace(" ", "-")
        folder.mkdir()
        commands = (("analyze",), ("analyze", "--json"), ("report",)) if group == "snapshot shapes" else (("analyze",),)
        for name, path in builder(folder).items():
            verdict, spent = "ok", 0.0
            for command in commands:
                code, out, err, seconds = checkout.run(*command, path)
                spent += seconds
                if judge(code, out, err) != "ok":
                    verdict = judge(code, out, err) + (f" in {' '.join(command)}" if len(commands) > 1 else "")
                    break
            yield group, name, verdict, spent


def capture_cases(checkout: Checkout, work: Path):
    folder = work / "captures"
    folder.mkdir()
    for name, path in corpus.capture_inputs(folder).items():
        worst, spent = "ok", 0.0
        for command in (("analyze",), ("analyze", "--json"), ("report",), ("report", "--redact")):
            code, out, err, seconds = checkout.run(*command, path)
            spent += seconds
            verdict = judge(code, out, err)
            if "before any CUDA allocation" in err and "snapshot" in name:
                verdict = "misleading (\"ended … before any CUDA allocation\")"
            if verdict != "ok":
                worst = f"{verdict} in {' '.join(command)}"
                break
        yield "capture folders", name, worst, spent
    walks = work / "walks"
    walks.mkdir()
    for name, path in corpus.folder_walks(walks).items():
        code, out, err, seconds = checkout.run("analyze", path)
        yield "folder walk for ranks", name, judge(code, out, err), seconds


def _raw_with_frames(work: Path, name: str, rewrite) -> Path:
    """The real raw snapshot of a server (no capture.json, no recorded root) with its user frames rewritten."""
    snapshot = pickle.loads((CAPTURES / "server_dump.pickle").read_bytes())
    for trace in snapshot["device_traces"]:
        for entry in trace:
            for frame in entry.get("frames") or ():
                if frame["filename"].startswith("/srv/app/"):
                    rewrite(frame)
    path = work / f"{name}.pickle"
    path.write_bytes(pickle.dumps(snapshot, protocol=4))
    return path


def _frames_renamed(work: Path, name: str, rewrite) -> Path:
    folder = work / name
    shutil.copytree(CAPTURES / "working_set", folder)
    snapshot = pickle.loads((folder / "snapshot.pickle").read_bytes())
    for trace in snapshot["device_traces"]:
        for entry in trace:
            for frame in entry.get("frames") or ():
                if frame["filename"].endswith("scenarios/working_set.py"):
                    rewrite(frame)
    (folder / "snapshot.pickle").write_bytes(pickle.dumps(snapshot, protocol=4))
    return folder


def disclosure_and_terminal_cases(checkout: Checkout, work: Path):
    secret = work / "outside" / "secret.py"
    secret.parent.mkdir()
    secret.write_text("API_KEY = 'do-not-show-this'\n" * 50)
    root = work / "project"
    shutil.copytree(SCENARIOS, root)
    (root / "innocent.py").symlink_to(secret)
    targets = {"frame naming /etc/passwd": ("/etc/passwd", None), "frame naming a file outside the root": (str(secret), None),
               "../ past --source-root": ("../outside/secret.py", root),
               "link in the root to outside": (str(root / "innocent.py"), root)}
    for name, (target, source_root) in targets.items():
        dump = _raw_with_frames(work, name.replace(" ", "_").replace("/", ""), lambda frame: frame.update(filename=target, line=1))
        verdict, spent = "ok", 0.0
        for command in (("analyze",), ("report", "--redact")):
            options = ["--total-memory", "141e9"] + (["--source-root", str(source_root)] if source_root else [])
            code, out, err, seconds = checkout.run(*command, dump, *options)
            spent += seconds
            if "do-not-show-this" in out or "root:x:" in out:
                verdict = f"file disclosed by {' '.join(command)}"
                break
            if judge(code, out, err) != "ok":
                verdict = judge(code, out, err)
        yield "local file disclosure", name, verdict, spent
    hostile = {"ESC sequences in a function name": "main\x1b[2J\x1b]0;owned\x07",
               "a newline forging a Cause line": "main\nCause: fake (confidence 1.00, high)"}
    for name, function in hostile.items():
        folder = _frames_renamed(work, "term-" + str(len(function)), lambda frame: frame.update(name=function))
        verdict, spent = "ok", 0.0
        for command in (("analyze",), ("report",)):
            code, out, err, seconds = checkout.run(*command, folder, "--source-root", root)
            spent += seconds
            if "\x1b" in out or "\x07" in out:
                verdict = f"control sequence printed by {' '.join(command)}"
            elif any(line.startswith(("Cause: fake", "- Cause: fake")) for line in out.splitlines()):
                verdict = f"line forged in {' '.join(command)}"
        yield "terminal injection", name, verdict, spent


REDACTION = [
    ("text between two paths", "copied /data/a.txt to dst=/data/b.txt", ["to dst="], []),
    ("a ../ path", 'open("../../home/alice/private/keys.py")', [], ["alice", "private"]),
    ("--token=…", "train.py --token=abc123def456", [], ["abc123def456"]),
    ("--hf-token …", "train.py --hf-token abc123def456", [], ["abc123def456"]),
    ("HF_TOKEN=hf_…", "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 python t.py", [], ["hf_abcdefghij"]),
    ("?key=… in a URL", "https://example.com/data?key=s3cr3tvalue&page=2", [], ["s3cr3tvalue"]),
    ("credentials in a URL", "https://bob:hunter2@registry.example.com/m", [], ["hunter2"]),
    ("a bearer token", "Authorization: Bearer eyJhbGciOi.payload0123.signature99", [], ["payload0123"]),
    ("sk-… key", "key sk-proj-abcdefghijklmnopqrstuvwxyz", [], ["sk-proj-abcdefghij"]),
    ("AWS access key", "aws AKIAIOSFODNN7EXAMPLE", [], ["AKIAIOSFODNN7EXAMPLE"]),
    ("GitHub token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", [], ["ghp_abcdefghij"]),
    ("an IPv4 address", "rendezvous at 10.0.0.1:29500", [], ["10.0.0.1"]),
    ("an IPv6 address", "peer fe80::1ff:fe23:4567:890a", [], ["fe80::1ff"]),
    ("an internal host in a URL", "see http://build.corp/job/7", [], ["build.corp"]),
    ("public URL and versions kept", "https://docs.pytorch.org/docs/stable/notes/cuda.html driver 580.159.04 at 10:06:50",
     ["docs.pytorch.org", "580.159.04", "10:06:50"], []),
]


def redaction_cases(checkout: Checkout, work: Path):
    for name, text, kept, gone in REDACTION:
        code = f"from vramlens.analysis.rendering.redact import redact; print(redact({text!r}, ['/srv']))"
        status, out, err, seconds = checkout.python(code)
        if status != 0:
            yield "redaction", name, judge(status, out, err), seconds
            continue
        left = [word for word in gone if word in out]
        lost = [word for word in kept if word not in out]
        verdict = "ok" if not left and not lost else (f"left: {left}" if left else f"eaten: {lost}")
        yield "redaction", name, verdict, seconds
    folder = work / "rank-host"
    shutil.copytree(CAPTURES / "working_set", folder)
    meta = json.loads((folder / "capture.json").read_text())
    meta["distributed"] = {"rank": 0, "world_size": 1, "local_rank": 0, "node_rank": 0, "hostname": "gpu-node-3"}
    (folder / "capture.json").write_text(json.dumps(meta))
    code, out, err, seconds = checkout.run("report", folder, "--redact")
    verdict = judge(code, out, err)
    if verdict == "ok":
        verdict = "host name left in the setup table" if "gpu-node-3" in out else (
            "no counts of what was redacted" if "Redacted:" not in out else "ok")
    yield "redaction", "host name in the setup table; counts shown", verdict, seconds


def run_cases(checkout: Checkout, work: Path):
    env = dict(checkout.env, PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "agent_double"), str(checkout.server)]))

    def script(name: str, text: str) -> Path:
        path = work / name
        path.write_text(text)
        return path

    ok = script("ok.py", "print('ran')\n")
    code, out, err, seconds = checkout.run("run", "--memory-limit", "1e400GiB", "-o", work / "c1", ok, cwd=work, env=env)
    yield "vramlens run", "--memory-limit 1e400GiB", judge(code, out, err), seconds
    quit_script = script("quit.py", "import os, torch\nx = torch.empty(2**20, device='cuda')\nos._exit(3)\n")
    code, out, err, seconds = checkout.run("run", "-o", work / "c2", quit_script, cwd=work, env=env)
    yield "vramlens run", "os._exit(3) in the script", "ok" if code == 3 else f"exit {code}, not 3", seconds
    stubborn = script("stubborn.py", "import signal, time, torch\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                     "x = torch.empty(2**20, device='cuda')\nwhile True:\n    time.sleep(0.05)\n")
    code, out, err, seconds = checkout.run("run", "--timeout", "2", "-o", work / "c3", stubborn, cwd=work, env=env, timeout=60)
    kept = (work / "c3" / "capture.json").exists()
    verdict = "ok" if kept and seconds < 15 else f"{seconds:.0f} s, capture {'kept' if kept else 'lost'}"
    yield "vramlens run", "--timeout 2, the script ignores SIGTERM", verdict, seconds
    pid_file = work / "child.pid"
    parent = script("parent.py", "import subprocess, sys, time, torch\nx = torch.empty(2**20, device='cuda')\n"
                    "c = subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, "
                    f"signal.SIG_IGN); time.sleep(120)'])\nopen({str(pid_file)!r}, 'w').write(str(c.pid))\n"
                    "while True:\n    time.sleep(0.05)\n")
    code, out, err, seconds = checkout.run("run", "--timeout", "2", "-o", work / "c4", parent, cwd=work, env=env, timeout=60)
    time.sleep(3)
    alive = pid_file.exists() and _running(int(pid_file.read_text()))
    if alive:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
    yield "vramlens run", "--timeout 2, a child ignores SIGTERM", "child survived" if alive else "ok", seconds
    pids = work / "pids"
    forever = script("forever.py", "import os, subprocess, sys, time, torch\nx = torch.empty(2**20, device='cuda')\n"
                     "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
                     f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{c.pid}}')\nwhile True:\n    time.sleep(0.05)\n")
    started = time.monotonic()
    runner = subprocess.Popen([sys.executable, "-m", "vramlens", "run", "--timeout", "60", "-o", str(work / "c5"), str(forever)],
                              cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not (pids.exists() and " " in pids.read_text()) and time.monotonic() - started < 30:
        time.sleep(0.1)
    runner.kill()
    runner.wait()
    deadline = time.monotonic() + 15
    victims = [int(pid) for pid in pids.read_text().split()] if pids.exists() else []
    while any(_running(pid) for pid in victims) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [pid for pid in victims if _running(pid)]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    kept = (work / "c5" / "capture.json").exists()
    verdict = "ok" if not alive and kept else ("script kept running" if alive else "capture lost")
    yield "vramlens run", "the runner killed with SIGKILL", verdict, time.monotonic() - started


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def lsp_cases(checkout: Checkout, work: Path):
    from test_lsp_stdio import BAD_FRAMES, RawServer, clear_capture

    def server() -> RawServer:
        folder = Path(tempfile.mkdtemp(dir=work))
        raw = RawServer(folder, checkout.server)
        raw.initialize()
        return raw

    def attempt(name, body):
        raw = server()
        started = time.monotonic()
        try:
            verdict = body(raw)
        except AssertionError:
            verdict = "no answer in 20 s"
        finally:
            raw.close()
        return "language server", name, verdict, time.monotonic() - started

    for name, data in BAD_FRAMES.items():
        def framing(raw, data=data):
            raw.send_raw(data)
            clear_capture(raw, 2)
            raw.request(3, "shutdown")
            raw.response(3)
            return "ok"
        yield attempt(name, framing)
    unreadable = {"hover with params: []": ("textDocument/hover", []),
                  "inlay hint at line -5": ("textDocument/inlayHint", {"textDocument": {"uri": "file:///x.py"},
                                            "range": {"start": {"line": -5, "character": 0}, "end": {"line": 3, "character": 0}}})}
    for name, (method, params) in unreadable.items():
        def request(raw, method=method, params=params):
            raw.request(2, method, params)
            raw.response(2, timeout=10)
            return "ok"
        yield attempt(name, request)
    built = {**corpus.shape_inputs(_fresh(work, "lsp-shapes")), **corpus.opcode_inputs(_fresh(work, "lsp-opcodes"))}
    for bomb in ("x = [x, x] thirty times (431 bytes)", "one 100,000-frame stack shared by 5,000 entries"):
        def open_then_shutdown(raw, bomb=bomb):
            raw.request(2, "workspace/executeCommand", {"command": "vramlens.openCapture", "arguments": [{"path": str(built[bomb])}]})
            time.sleep(2)  # the load (and what follows it) is under way
            sent = time.monotonic()
            raw.request(3, "shutdown")
            raw.response(3, timeout=20)
            return "ok" if time.monotonic() - sent < 5 else f"shutdown answered after {time.monotonic() - sent:.0f} s"
        yield attempt(f"openCapture on {bomb}, then shutdown", open_then_shutdown)

    def many_processes(raw):
        script = raw.workspace / "train.py"
        script.write_text("print(1)\n")
        raw.request(2, "workspace/executeCommand", {"command": "vramlens.diagnose", "arguments": [
            {"uri": script.as_uri(), "trusted": True, "processesPerNode": 10**12, "interpreter": "/nonexistent/python"}]})
        answer = raw.response(2)
        message = (answer.get("result") or {}).get("message", "")
        return "ok" if "processesPerNode" in message else f"not checked ({message[:60]})"
    yield attempt("diagnose with processesPerNode 10**12", many_processes)


def _fresh(work: Path, name: str) -> Path:
    folder = work / name
    folder.mkdir()
    return folder


def lint_cases(checkout: Checkout, work: Path):
    leaky = ("import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 4)\ncriterion = nn.MSELoss()\n"
             "def train(loader):\n    total = 0.0\n    for x, y in loader:\n        loss = criterion(model(x), y)\n"
             "        loss.backward()\n        total += loss\n    return total\n")
    folder = _fresh(work, "lint")
    os.mkfifo(folder / "pipe.py")
    code, out, err, seconds = checkout.run("lint", folder / "pipe.py")
    yield "lint", "a FIFO as the file", "ok" if code == 1 and "VL000" in out else judge(code, out, err, (1,)), seconds
    project = _fresh(work, "lint-project")
    (project / "train.py").write_text(leaky)
    os.mkfifo(project / "stream.py")
    code, out, err, seconds = checkout.run("lint", project)
    yield "lint", "a FIFO inside a linted folder", "ok" if code == 1 and "VL101" in out else judge(code, out, err, (1,)), seconds
    code, out, err, seconds = checkout.run("lint", "/dev/zero")
    yield "lint", "/dev/zero", "ok" if code == 1 and "VL000" in out else judge(code, out, err, (1,)), seconds
    dangling = _fresh(work, "lint-dangling")
    (dangling / "train.py").write_text(leaky)
    (dangling / "gone.py").symlink_to(work / "deleted.py")
    code, out, err, seconds = checkout.run("lint", dangling)
    yield "lint", "a dangling *.py symlink in the folder", "ok" if "VL101" in out else f"exit {code}, nothing linted", seconds
    huge = folder / "generated.py"
    huge.write_text("value = 1\n" * (5 << 20))
    code, out, err, seconds = checkout.run("lint", huge)
    yield "lint", "a 50 MB file", "ok" if seconds < 5 and "VL000" in out else f"{seconds:.1f} s, {judge(code, out, err, (1,))}", seconds
    fix = folder / "fix.py"
    fix.write_text("".join(leaky.replace("def train(", f"def train{i}(") for i in range(4000)))
    code, out, err, seconds = checkout.run("lint", "--fix", fix, timeout=300)
    verdict = "ok" if code != "hang" and seconds < 60 else (f"killed after {seconds:.0f} s" if code == "hang" else f"{seconds:.0f} s")
    yield "lint", "--fix with 4,000 findings", verdict, seconds
    for name, data in (("a MemoryError while parsing", None), ("a custom codec cookie (rot13)", b"# coding: rot13\nx = 1\n"),
                       ("an unknown codec cookie", b"# coding: klingon\nx = 1\n")):
        if data is None:
            code_text = ("from vramlens.lint import engine\nimport ast\n"
                         "def boom(text): raise MemoryError()\nengine.parse = boom\n"
                         "print(engine.lint_source('x = 1')[0].message)")
            status, out, err, seconds = checkout.python(code_text)
            message = out.strip()
        else:
            path = folder / f"cookie{len(data)}.py"
            path.write_bytes(data)
            status, out, err, seconds = checkout.run("lint", path)
            message = out.strip()
        bad = [sign for sign in (": ;", "(line None)", "contains cannot", "Traceback") if sign in message + err]
        yield "lint", name, f"garbled ({bad[0]!r}): {message[:70]}" if bad else ("ok" if message else judge(status, out, err, (1,))), seconds


def layout_cases(checkout: Checkout, work: Path):
    def variant(name: str, change) -> Path:
        folder = work / ("layout-" + name)
        shutil.copytree(CAPTURES / "no_problem", folder)
        snapshot = pickle.loads((folder / "snapshot.pickle").read_bytes())
        change(snapshot)
        (folder / "snapshot.pickle").write_bytes(pickle.dumps(snapshot, protocol=4))
        return folder

    def each_entry(**fields):
        return lambda snapshot: [entry.update(fields) for entry in snapshot["device_traces"][0]]

    def frames_with(snapshot):
        for entry in snapshot["device_traces"][0]:
            for frame in entry.get("frames") or ():
                frame.update(fx_node_op="call_function", fx_node_name="linear", fx_original_trace="x = fc(x)")

    def annotate(snapshot):
        trace = snapshot["device_traces"][0]
        trace.insert(3, {"action": "annotate", "time_us": trace[3]["time_us"], "user_metadata": "epoch 1"})
        snapshot.update(host_segments=[], host_traces=[])

    plain = json.loads(checkout.run("analyze", "--json", CAPTURES / "no_problem")[1] or "{}")
    cases = {"pool_id tuples (2.12)": each_entry(pool_id=(0, 0)), "FX frame keys": frames_with,
             "annotate + host_segments (2.14)": annotate, "unknown keys on every entry": each_entry(zz_future={"a": [1]})}
    for name, change in cases.items():
        code, out, err, seconds = checkout.run("analyze", "--json", variant(name.split()[0], change))
        verdict = judge(code, out, err)
        if verdict == "ok":
            data = json.loads(out)
            if data.get("cause") != plain.get("cause"):
                verdict = f"cause changed to {data.get('cause')}"
            elif name.startswith("annotate") and not data.get("phase_marks"):
                verdict = "read, marks not shown"
        yield "newer snapshot layouts", name, verdict, seconds
    code, out, err, seconds = checkout.run("analyze", "--json", variant("skip", lambda s: s["device_traces"].__setitem__(
        0, [e for e in s["device_traces"][0] if e["action"] != "free_requested"])))
    verdict = judge(code, out, err)
    if verdict == "ok":
        peak = json.loads(out)["memory"]["peak_allocated"]
        verdict = "ok" if peak <= plain["memory"]["peak_allocated"] * 1.05 else \
            f"peak overstated {peak / plain['memory']['peak_allocated']:.1f}x"
    yield "newer snapshot layouts", "skip_actions=['free_requested'] (2.11)", verdict, seconds
    code, out, err, seconds = checkout.run("analyze", "--json", variant("nofree", lambda s: s["device_traces"].__setitem__(
        0, [e for e in s["device_traces"][0] if not e["action"].startswith("free")])))
    yield "newer snapshot layouts", "no frees at all (skip_actions)", "ok" if code == 2 else "a wrong answer (live memory overstated)", seconds


def fuzz_cases(checkout: Checkout, work: Path):
    """The CI fuzz's inputs (tests/hostile/test_fuzz.py, seed 16), counted instead of stopping at the first."""
    code = f"""
import sys, json, random, pickle, copy, shutil
sys.path[:0] = [{str(ROOT / 'tests' / 'hostile')!r}]
import test_fuzz as fuzz
from pathlib import Path
from vramlens.capture import CaptureError, load_capture
counts = {{}}
work = Path({str(work)!r}) / "fuzz"
work.mkdir()
def note(kind): counts[kind] = counts.get(kind, 0) + 1
def attempt(load, where):
    try:
        fuzz.outcome(load, where); note("ok")
    except AssertionError as error:
        text = str(error)
        note("last net only" if "last net" in text else "other exception: " + text.split(": ", 2)[1][:40] if ": " in text else "failed")
for pickle_path in fuzz.PICKLES:
    rng = random.Random(f"{{fuzz.SEED}}:{{pickle_path.parent.name}}/{{pickle_path.name}}")
    original = pickle_path.read_bytes()
    for number in range(60):
        path = work / f"m{{number}}.pickle"
        path.write_bytes(fuzz.mutate_bytes(original, rng))
        attempt(lambda: load_capture(path), "b")
for pickle_path in fuzz.PICKLES[:6]:
    rng = random.Random(f"{{fuzz.SEED}}:shape:{{pickle_path.parent.name}}")
    original = pickle.loads(pickle_path.read_bytes())
    for number in range(80):
        path = work / f"s{{number}}.pickle"
        path.write_bytes(pickle.dumps(fuzz.mutate_objects(original, rng, rng.randint(1, 6)), protocol=4))
        attempt(lambda: load_capture(path), "s")
print(json.dumps(counts))
"""
    status, out, err, seconds = checkout.python(code, timeout=600)
    if status != 0:
        yield "fuzz (snapshots)", "byte and shape mutations", judge(status, out, err), seconds
        return
    counts = json.loads(out.strip().splitlines()[-1])
    total = sum(counts.values())
    bad = {kind: count for kind, count in counts.items() if kind != "ok"}
    summary = "ok" if not bad else ", ".join(f"{count} {kind}" for kind, count in sorted(bad.items(), key=lambda i: -i[1]))
    yield "fuzz (snapshots)", f"{total} mutations of the real pickles", summary, seconds


# -- round 3: the census, experiments, notebooks, the language server, redaction --------------------
_VARIANTS = """
import json, shutil, sys
from pathlib import Path
CAP = Path({captures!r})
def variant(work, name, base, meta=None, census=None, drop=None):
    folder = Path(work) / name
    shutil.copytree(CAP / base, folder)
    if meta:
        data = json.loads((folder / "capture.json").read_text()); meta(data); (folder / "capture.json").write_text(json.dumps(data))
    if census:
        data = json.loads((folder / "census.json").read_text()); census(data); (folder / "census.json").write_text(json.dumps(data))
    if drop:
        (folder / drop).unlink()
    return folder
"""


def _number_variants(work: Path) -> dict[str, tuple[Path, list[str]]]:
    """(capture folder, words that must not be printed) of each case, made from the REAL notebook capture."""
    code = _VARIANTS.format(captures=str(CAPTURES))
    space: dict = {}
    exec(code, space)  # noqa: S102 - our own helper, defined above
    variant = space["variant"]
    link = "[click](https://evil.example/)"

    def inflate(census):
        for storage in census["storages"]:
            storage["bytes"] *= 8000

    def notes(census):
        census["notes"] = [f"note {i}: " + "x" * 200 for i in range(10_000)]

    base = "notebook_kept_outputs"
    return {
        "census epoch 10**400": (variant(work, "n1", base, census=lambda c: c.update(epoch=10**400)), []),
        "census duration_s and budget_s 10**309": (variant(work, "n2", base, census=lambda c: c.update(duration_s=10**309, budget_s=10**309)), []),
        "notebook section size 10**400": (variant(work, "n3", base, meta=lambda m: m["notebook"]["cells"][2].update(allocated_after=10**400)), []),
        "notebook section size negative": (variant(work, "n4", base, meta=lambda m: m["notebook"]["cells"][2].update(allocated_after=-2**40)), ["-1024.00 GiB"]),
        "census not of this snapshot (8000x its bytes)": (variant(work, "n5", base, census=inflate), ["Who holds it"]),
        "census named but missing": (variant(work, "n6", base, drop="census.json"), ["layout is not one"]),
        "census with a negative size": (variant(work, "n7", base, census=lambda c: c["storages"][0].update(bytes=-5)), ["layout is not one"]),
        "notebook cell source a number": (variant(work, "n8", base, meta=lambda m: m["notebook"]["cells"][2].update(source=5)), ["layout is not one"]),
        "10,000 census notes": (variant(work, "n9", base, census=notes), []),
        "lone surrogate in a holder's name": (variant(work, "s1", base, census=lambda c: c["holders"][0].update(path="__main__.\ud800x")), []),
        "lone surrogate in argv and the GPU name": (variant(work, "s2", "working_set", meta=lambda m: (m.update(argv=["t\udcff.py"]), m["environment"].update(gpu_name="H\ud800"))), []),
        "lone surrogate in the exception": (variant(work, "s3", "working_set", meta=lambda m: m["exception"].update(message="\ud800 oops")), []),
        "a link in a holder's name": (variant(work, "m1", base, census=lambda c: c["holders"][0].update(path=f"a`{link}`b")), []),
        "a link in the exception message": (variant(work, "m2", "working_set", meta=lambda m: m["exception"].update(message=f"x {link} <https://evil.example/>")), []),
    }


def census_and_section_cases(checkout: Checkout, work: Path):
    from markdown_oracle import live_links
    env = dict(checkout.env, PYTHONIOENCODING="utf-8")  # strict, as a UTF-8 terminal is
    for name, (folder, banned) in _number_variants(work).items():
        verdict, spent = "ok", 0.0
        for command in (("analyze",), ("analyze", "--json"), ("report",), ("report", "--redact")):
            code, out, err, seconds = checkout.run(*command, folder, env=env)
            spent += seconds
            verdict = judge(code, out, err)
            if verdict == "ok" and any(word in out + err for word in banned):
                verdict = f"printed {next(word for word in banned if word in out + err)!r}"
            if verdict == "ok" and code == 0 and command == ("analyze", "--json"):
                try:
                    json.loads(out, parse_constant=lambda constant: (_ for _ in ()).throw(ValueError(constant)))
                except ValueError as error:
                    verdict = f"invalid JSON ({str(error)[:40]})"
            if verdict == "ok" and command[0] == "report" and live_links(out):
                verdict = "a live link in the report"
            if verdict == "ok" and "notes" in name and len(out) > 1 << 20:
                verdict = f"{len(out) / 2**20:.0f} MiB of output"
            if verdict != "ok":
                verdict += f" in {' '.join(command)}"
                break
        group = "surrogates" if "surrogate" in name else "markdown injection" if "link" in name else "census and notebook section"
        yield group, name, verdict, spent


def section_fuzz_cases(checkout: Checkout, work: Path):
    """tests/hostile/test_fuzz_sections.py's inputs, counted instead of stopping at the first."""
    code = f"""
import sys, json, random, shutil
sys.path[:0] = [{str(ROOT / 'tests' / 'hostile')!r}]
import test_fuzz_sections as fz
from pathlib import Path
from vramlens.capture import CaptureError
from vramlens.lsp.loading import read_experiment
work = Path({str(work)!r}) / "sections"
work.mkdir()
counts = {{}}
def note(kind): counts[kind] = counts.get(kind, 0) + 1
def attempt(check):
    try:
        check(); note("ok")
    except AssertionError as error:
        note("failed: " + str(error)[:60])
    except Exception as error:
        note("exception: " + type(error).__name__)
number = 0
for folder in fz.CENSUS_CAPTURES:
    rng = random.Random(f"{{fz.SEED}}:bench-census:{{folder.name}}")
    census = json.loads((folder / "census.json").read_text())
    for _ in range(40):
        number += 1
        target = work / f"c{{number}}"
        shutil.copytree(folder, target)
        (target / "census.json").write_text(json.dumps(fz.mutate_json(census, rng, rng.randint(1, 6))))
        attempt(lambda: fz.full_outcome(target, "census"))
folder = fz.CAPTURES / "notebook_kept_outputs"
meta = json.loads((folder / "capture.json").read_text())
rng = random.Random(f"{{fz.SEED}}:bench-notebook")
for _ in range(40):
    number += 1
    target = work / f"n{{number}}"
    shutil.copytree(folder, target)
    (target / "capture.json").write_text(json.dumps(dict(meta, notebook=fz.mutate_json(meta["notebook"], rng, rng.randint(1, 6)))))
    attempt(lambda: fz.full_outcome(target, "notebook"))
def experiment(path):
    try:
        data = read_experiment(path)
    except CaptureError as error:
        assert "\\n" not in str(error)
        return
    json.dumps(data, allow_nan=False)
    assert "zz_unknown" not in json.dumps(data)
for original_path in fz.EXPERIMENTS:
    rng = random.Random(f"{{fz.SEED}}:bench-experiment:{{original_path.parent.name}}")
    original = json.loads(original_path.read_text())
    for _ in range(40):
        number += 1
        target = work / f"e{{number}}.json"
        target.write_text(json.dumps(fz.mutate_json(original, rng, rng.randint(1, 6))))
        attempt(lambda: experiment(target))
print(json.dumps(counts))
"""
    status, out, err, seconds = checkout.python(code, timeout=600)
    if status != 0:
        yield "fuzz (census, notebook section, experiment.json)", "mutations of real files", judge(status, out, err), seconds
        return
    counts = json.loads(out.strip().splitlines()[-1])
    bad = {kind: count for kind, count in counts.items() if kind != "ok"}
    summary = "ok" if not bad else ", ".join(f"{count} {kind}" for kind, count in bad.items())
    yield "fuzz (census, notebook section, experiment.json)", f"{sum(counts.values())} mutations of real files", summary, seconds


def experiment_file_cases(checkout: Checkout, work: Path):
    folder = _fresh(work, "experiments")
    source = next(path for path in sorted((ROOT / "tests" / "fixtures" / "realworld").glob("*/experiment.json"))
                  if json.loads(path.read_text()).get("schema") == "vramlens-experiment")
    original = json.loads(source.read_text())
    cases = {
        "NaN in a run's figures": lambda d: d["variants"][0]["runs"][0].update(peak_reserved=float("nan")),
        "an unknown 20 MB field": lambda d: d.update(zz_unknown="y" * (20 << 20)),
        "200,000 runs in a variant": lambda d: d["variants"][0].update(runs=d["variants"][0]["runs"] * (200_000 // max(len(d["variants"][0]["runs"]), 1))),
        "a script name with a newline": lambda d: d.update(script="t.py\nChosen intervention: fake"),
        "a variant of no known kind": lambda d: d["variants"][0].update(kind="magic"),
        "variants not a list": lambda d: d.update(variants={"a": 1}),
        "a probe value of 10**400": lambda d: d.update(search={"argument": "--n", "limit": "1GiB", "lo": 1, "probes": [{"value": 10**400}]}),
    }
    for name, change in cases.items():
        data = json.loads(json.dumps(original))
        change(data)
        path = folder / f"{len(name)}-{abs(hash(name)) % 10**6}.json"
        path.write_text(json.dumps(data))
        code = ("import json, sys\nfrom pathlib import Path\nfrom vramlens.capture import CaptureError\n"
                "from vramlens.lsp.loading import read_experiment\n"
                "from vramlens.analysis.rendering.experiment_text import render_text\n"
                f"try:\n    data = read_experiment(Path({str(path)!r}))\nexcept CaptureError as error:\n"
                "    print('vramlens: ' + str(error), file=sys.stderr); sys.exit(2)\n"
                "text = json.dumps(data, allow_nan=False)\nshown = render_text(data)\n"
                "print(len(text), len(shown), 'zz_unknown' in text, any(l.startswith('Chosen intervention: fake') for l in shown.splitlines()))")
        status, out, err, seconds = checkout.python(code)
        verdict = judge(status, out, err)
        if verdict == "ok" and status == 0:
            size, shown, unknown, forged = out.split()
            verdict = ("unknown field passed on" if unknown == "True" else "line forged" if forged == "True"
                       else f"{int(size) / 2**20:.0f} MiB to the client" if int(size) > 4 << 20 else "ok")
        yield "experiment.json", name, verdict, seconds
    for name, make in (("a FIFO named *.json", lambda p: os.mkfifo(p)), ("a link to /dev/zero named *.json", lambda p: p.symlink_to("/dev/zero"))):
        path = folder / f"special-{len(name)}.json"
        make(path)
        status, out, err, seconds = checkout.python(
            "import sys\nfrom pathlib import Path\nfrom vramlens.capture import CaptureError\nfrom vramlens.lsp.loading import read_experiment\n"
            f"try:\n    read_experiment(Path({str(path)!r}))\nexcept CaptureError as error:\n    print('vramlens: ' + str(error), file=sys.stderr); sys.exit(2)\n")
        yield "experiment.json", name, judge(status, out, err), seconds


def lsp_round3_cases(checkout: Checkout, work: Path):
    from test_lsp_stdio import RawServer

    def attempt(name, body):
        folder = Path(tempfile.mkdtemp(dir=work))
        raw = RawServer(folder, checkout.server)
        started = time.monotonic()
        try:
            verdict = body(raw, folder)
        except AssertionError as error:
            verdict = f"no answer ({str(error)[:40]})"
        finally:
            raw.close()
        return "language server (files, lifecycle)", name, verdict, time.monotonic() - started

    def command(raw, msg_id, name, argument):
        raw.request(msg_id, "workspace/executeCommand", {"command": name, "arguments": [argument]})
        return raw.response(msg_id, timeout=20).get("result") or {}

    def export_to_fifo(raw, folder):
        raw.initialize()
        assert command(raw, 2, "vramlens.openCapture", {"path": str(CAPTURES / "retained_references")}).get("ok")
        os.mkfifo(folder / "r.md")
        answer = command(raw, 3, "vramlens.exportReport", {"path": str(folder / "r.md")})
        return "ok" if answer.get("ok") is False and "named pipe" in answer.get("message", "") else f"answered {answer}"

    def export_outside(raw, folder):
        raw.initialize()
        command(raw, 2, "vramlens.openCapture", {"path": str(CAPTURES / "retained_references")})
        outside = Path(tempfile.mkdtemp(dir=work)) / "nonexistent" / "dir" / "r.md"
        answer = command(raw, 3, "vramlens.exportReport", {"path": str(outside)})
        return "ok" if answer.get("ok") is False and not outside.parent.exists() else "written outside the workspace"

    def open_fifo_json(raw, folder):
        raw.initialize()
        os.mkfifo(folder / "results.json")
        answer = command(raw, 2, "vramlens.openCapture", {"path": str(folder / "results.json")})
        return "ok" if answer.get("ok") is False else "opened"

    def notebook_fifo(raw, folder):
        raw.initialize()
        command(raw, 2, "vramlens.openCapture", {"path": str(CAPTURES / "notebook_kept_outputs")})
        os.mkfifo(folder / "b.ipynb")
        uri = f"vscode-notebook-cell:{folder / 'b.ipynb'}#W0sZmlsZQ"
        raw.send({"jsonrpc": "2.0", "method": "notebookDocument/didOpen", "params": {
            "notebookDocument": {"uri": (folder / "b.ipynb").as_uri(), "notebookType": "jupyter-notebook", "version": 1,
                                 "cells": [{"kind": 2, "document": uri}]},
            "cellTextDocuments": [{"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}]}})
        raw.request(3, "textDocument/inlayHint", {"textDocument": {"uri": uri},
                                                  "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}})
        raw.response(3, timeout=20)
        return "ok"

    def before_initialize(raw, folder):
        raw.request("early", "textDocument/hover", {"textDocument": {"uri": "file:///x.py"}, "position": {"line": 0, "character": 0}})
        code = raw.response("early")["error"]["code"]
        return "ok" if code == -32002 else f"error {code}"

    def after_shutdown(raw, folder):
        raw.initialize()
        raw.request(2, "shutdown")
        raw.response(2)
        raw.request(3, "textDocument/hover", {"textDocument": {"uri": "file:///x.py"}, "position": {"line": 0, "character": 0}})
        code = raw.response(3, timeout=10)["error"]["code"]
        return "ok" if code == -32600 else f"error {code}"

    def exit_without_shutdown(raw, folder):
        raw.initialize()
        raw.send({"jsonrpc": "2.0", "method": "exit"})
        code = raw.proc.wait(10)
        return "ok" if code == 1 else f"exit {code}"

    def bad_params(raw, folder):
        raw.initialize()
        raw.request(2, "vramlens/lineAnnotations", {"uri": 5})
        error = raw.response(2)["error"]
        return "ok" if error["code"] == -32602 and not error.get("data") else f"error {error['code']} with data"

    def big_did_open(raw, folder):
        raw.initialize()
        raw.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": (folder / "big.py").as_uri(), "languageId": "python", "version": 1, "text": "value = 1\n" * (5 << 20)}}})
        sent = time.monotonic()
        raw.request(2, "vramlens/lineAnnotations", {"uri": (folder / "big.py").as_uri()})
        raw.response(2, timeout=60)
        spent = time.monotonic() - sent
        return "ok" if spent < 5 else f"blocked {spent:.0f} s"

    for name, body in (("exportReport to a FIFO", export_to_fifo), ("exportReport to /nonexistent/dir/r.md", export_outside),
                       ("openCapture of a FIFO named *.json", open_fifo_json),
                       ("a notebook whose file is a FIFO, a capture loaded", notebook_fifo),
                       ("a request before initialize", before_initialize), ("a request after shutdown", after_shutdown),
                       ("exit without shutdown", exit_without_shutdown), ("lineAnnotations {uri: 5}", bad_params),
                       ("a 50 MB didOpen", big_did_open)):
        yield attempt(name, body)
    yield _probe_case(checkout, work)


def _probe_case(checkout: Checkout, work: Path):
    pids = work / "probe.pids"
    stubborn = work / "stubborn_probe.py"
    stubborn.write_text("import os, signal, subprocess, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                        "c = subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)'])\n"
                        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{c.pid}}')\ntime.sleep(120)\n")
    interpreter = work / "python-stubborn"
    interpreter.write_text(f"#!/bin/sh\nexec {sys.executable} {stubborn}\n")
    interpreter.chmod(0o755)
    status, out, err, seconds = checkout.python(
        f"from vramlens.lsp.interpreter_health import probe\nprint(probe({str(interpreter)!r}, timeout_s=3))")
    time.sleep(0.5)
    victims = [int(pid) for pid in pids.read_text().split()] if pids.exists() else []
    alive = [pid for pid in victims if _running(pid)]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    verdict = judge(status, out, err) if status != 0 else ("child left alive" if alive else "ok")
    return "language server (files, lifecycle)", "interpreter probe of a SIGTERM-ignoring interpreter", verdict, seconds


def redaction_corpus_cases(checkout: Checkout, work: Path):
    code = f"""
import sys, json
sys.path[:0] = [{str(ROOT / 'tests' / 'hostile')!r}]
import secrets_corpus
from vramlens.analysis.rendering.redact import redact
leaks, texts, kinds = 0, 0, set()
for seed in range(100, 120):
    for kind, text, secrets in secrets_corpus.planted(seed):
        texts += 1
        shown = redact(text, ["/srv/project"])
        if any(secret in shown for secret in secrets):
            leaks += 1; kinds.add(kind)
kept = sum(redact(f"see {{t}} here", ["/srv/project"]) != f"see {{t}} here" for t in secrets_corpus.KEPT)
print(json.dumps({{"kinds": len(secrets_corpus.KINDS), "texts": texts, "leaks": leaks, "leaking": sorted(kinds), "eaten": kept}}))
"""
    status, out, err, seconds = checkout.python(code, timeout=300)
    if status != 0:
        yield "redaction", "planted-secret corpus", judge(status, out, err), seconds
        return
    found = json.loads(out.strip().splitlines()[-1])
    verdict = "ok" if not found["leaks"] and not found["eaten"] else \
        f"{found['leaks']} leaks ({', '.join(found['leaking'][:4])}), {found['eaten']} public texts eaten"
    yield "redaction", f"planted-secret corpus: {found['kinds']} kinds, {found['texts']} texts", verdict, seconds


def notebook_run_cases(checkout: Checkout, work: Path):
    env = dict(checkout.env, PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "agent_double"), str(checkout.server)]))
    folder = _fresh(work, "notebooks")
    deep = folder / "deep.ipynb"
    deep.write_text('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}")
    odd = folder / "not_text.ipynb"
    odd.write_text(json.dumps({"nbformat": 4, "metadata": {}, "cells": [
        {"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": []},
        {"cell_type": "code", "source": 5, "metadata": {}, "outputs": []}]}))
    for name, path in (("nested 100,000 deep", deep), ("a code cell whose source is a number", odd)):
        code, out, err, seconds = checkout.run("run", "-o", folder / f"c-{path.stem}", path, cwd=folder, env=env)
        verdict = judge(code, out, err)
        if verdict == "ok" and path == odd and "not text" not in err:
            verdict = "the cell was skipped silently"
        yield "notebooks", name, verdict, seconds
    try:
        import nbformat  # noqa: F401
    except ImportError:
        yield "notebooks", "a kernel ignoring SIGTERM and SIGINT, --timeout 3", "not run (nbformat missing)", 0.0
        return
    stubborn = folder / "stubborn.ipynb"
    stubborn.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "source": "import torch\nx = torch.empty(2**20, device='cuda')", "metadata": {}, "outputs": [], "execution_count": None, "id": "a"},
        {"cell_type": "code", "source": "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
         "signal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)", "metadata": {}, "outputs": [],
         "execution_count": None, "id": "b"}]}))
    code, out, err, seconds = checkout.run("run", "--timeout", "3", "-o", folder / "c-stubborn", stubborn, cwd=folder, env=env, timeout=90)
    kept = (folder / "c-stubborn" / "capture.json").exists()
    verdict = "ok" if kept and code != "hang" else ("hang" if code == "hang" else "ended without a capture")
    yield "notebooks", "a kernel ignoring SIGTERM and SIGINT, --timeout 3", verdict, seconds


def boundary_cases(checkout: Checkout, work: Path):
    folder = _fresh(work, "boundaries")
    shutil.copytree(CAPTURES / "working_set", folder / "cap")
    (folder / "cap" / "snapshot.pickle").unlink()
    blob = folder / "blob.pickle"
    with open(blob, "wb") as handle:  # sparse: 2 GiB on paper, nothing on disk
        handle.write(b"\x80\x04")
        handle.seek(2 << 30)
        handle.write(b".")
    (folder / "cap" / "snapshot.pickle").symlink_to(blob)
    status, out, err, seconds = checkout.python(
        "import resource, sys\nfrom vramlens.cli import main\n"
        f"code = main(['analyze', {str(folder / 'cap')!r}])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.__stdout__)\nsys.exit(code)")
    verdict = judge(status, out, err)
    if verdict == "ok" or status == 2:
        peak_mib = int(out.strip().splitlines()[-1]) / 1024 if out.strip() else 0
        verdict = "ok" if status == 2 and peak_mib < 512 else f"{peak_mib:.0f} MiB before the answer (exit {status})"
    yield "boundaries", "a capture linking a 2 GiB pickle, under a 4 GiB cap", verdict, seconds


def notebook_sync_cases(checkout: Checkout, work: Path):
    import notebook_sync
    started = time.monotonic()
    try:
        row = notebook_sync.measure(checkout.server, 1000)
    except TimeoutError:
        yield "notebook sync", "1,000 cells, one edit", "no answer", time.monotonic() - started
        return
    verdict = "ok" if row["edit_messages"] <= 101 and row["open_s"] < 20 else \
        f"{row['edit_messages']} messages for one edit, open {row['open_s']:.0f} s"
    yield "notebook sync", f"1,000 cells: open {row['open_s']:.1f} s, edit {row['edit_s']:.1f} s, {row['edit_messages']} message(s)", \
        verdict, time.monotonic() - started


CLASSES = {"snapshots": snapshot_cases, "captures": capture_cases, "output": disclosure_and_terminal_cases,
           "redaction": redaction_cases, "run": run_cases, "lsp": lsp_cases, "lint": lint_cases,
           "layouts": layout_cases, "fuzz": fuzz_cases, "sections": census_and_section_cases,
           "section-fuzz": section_fuzz_cases, "experiments": experiment_file_cases, "lsp-round3": lsp_round3_cases,
           "redaction-corpus": redaction_corpus_cases, "notebooks": notebook_run_cases, "boundaries": boundary_cases,
           "notebook-sync": notebook_sync_cases}


def table(server: Path, only: list[str]) -> None:
    checkout = Checkout(server)
    print(f"checkout: {server}; python {sys.version.split()[0]}; memory cap {MEMORY_CAP >> 30} GiB, timeout {TIMEOUT_S} s\n")
    print("| class | input | outcome | s |\n|---|---|---|---:|")
    summary: dict[str, Counter] = {}
    with tempfile.TemporaryDirectory(prefix="vramlens-hostile-") as scratch:
        for name in only or CLASSES:
            work = Path(scratch) / name
            work.mkdir()
            for group, case, verdict, seconds in CLASSES[name](checkout, work):
                print(f"| {group} | {case} | {verdict} | {seconds:.1f} |", flush=True)
                summary.setdefault(group, Counter())["ok" if verdict == "ok" else "not ok"] += 1
    print("\n| class | inputs | ok | not ok |\n|---|---:|---:|---:|")
    for group, counts in summary.items():
        print(f"| {group} | {sum(counts.values())} | {counts['ok']} | {counts['not ok']} |")


# -- memory: analyze on hostile input vs a bare pickle.load of a valid snapshot of the same size -----------
# The high-water mark of this process's own memory (VmHWM, kB): unlike ru_maxrss it does not start from
# the forking parent's, which a child keeps across exec.
_MEASURE = """
import sys
def high_water():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
{imports}
base = high_water()
{work}
print(high_water() - base, file=sys.__stdout__)
"""


def _increase(checkout: Checkout, imports: str, work: str) -> tuple[int | None, float]:
    status, out, err, seconds = checkout.python(_MEASURE.format(imports=imports, work=work), timeout=120)
    lines = out.strip().splitlines()
    return (int(lines[-1]) * 1024 if lines and lines[-1].lstrip("-").isdigit() else None), seconds


def _real_pattern(entries: int) -> dict:
    """A valid snapshot of about ``entries`` entries made of the REAL no_problem capture's trace repeated
    (fresh addresses and times each round; one frames list per entry, the frame dicts shared, as torch
    writes them)."""
    snapshot = pickle.loads((CAPTURES / "no_problem" / "snapshot.pickle").read_bytes())
    trace = snapshot["device_traces"][0]
    made = []
    for round_number in range(entries // len(trace) + 1):
        for entry in trace:
            copy = dict(entry, frames=list(entry.get("frames") or ()))
            copy["addr"] = entry["addr"] + round_number * (1 << 36)
            copy["time_us"] = entry["time_us"] + round_number * 10**6
            made.append(copy)
    return dict(snapshot, device_traces=[made[:max(entries, 1)]])


def _valid_of_size(size: int, folder: Path) -> Path:
    path = folder / f"valid-{size}.pickle"
    entries = max(1, size // 70)
    data = pickle.dumps(_real_pattern(entries), protocol=4)
    if abs(len(data) - size) > size * 0.1 and entries > 1:  # one correction brings it near the size
        data = pickle.dumps(_real_pattern(max(1, int(entries * size / len(data)))), protocol=4)
    path.write_bytes(data)
    return path


def memory(server: Path) -> None:
    checkout = Checkout(server)
    # Every module the command imports is imported before the baseline: what is measured is the input's.
    analyze = ("from vramlens.cli import build_parser, main\nimport os, sys\nbuild_parser()\n"
               "import vramlens.analysis.pipeline, vramlens.capture.loader\nsys.stdout = open(os.devnull, 'w')",
               "try:\n    main(['analyze', PATH])\nexcept SystemExit:\n    pass")
    bare = ("import pickle", "pickle.load(open(PATH, 'rb'))")
    print(f"checkout: {server}; python {sys.version.split()[0]}; memory above each interpreter's own after imports\n")
    print("| input | file | analyze: peak increase | bare pickle.load of a valid snapshot of that size | ratio | s |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="vramlens-memory-") as scratch:
        folder = Path(scratch)
        inputs = {**corpus.opcode_inputs(_fresh(folder, "o")), **corpus.shape_inputs(_fresh(folder, "s"))}
        million = folder / "million.pickle"
        million.write_bytes(pickle.dumps(_real_pattern(1_000_000), protocol=4))
        inputs["valid 1,000,000-entry snapshot (itself)"] = million
        for name, path in inputs.items():
            size = path.stat().st_size
            if size < 2:
                continue
            valid = million if path == million else _valid_of_size(size, folder)
            used, seconds = _increase(checkout, analyze[0], f"PATH = {str(path)!r}\n" + analyze[1])
            reference, _ = _increase(checkout, bare[0], f"PATH = {str(valid)!r}\n" + bare[1])
            floor = max(reference or 0, 1 << 20)  # below 1 MiB the interpreters' own noise decides
            ratio = f"{(used or 0) / floor:.2f}" if used is not None else "failed"
            print(f"| {name} | {size:,} B | {(used or 0) / 2**20:.1f} MiB | {(reference or 0) / 2**20:.1f} MiB | {ratio} | {seconds:.1f} |",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", type=Path, default=ROOT / "server", help="the server/ folder of the checkout to try")
    parser.add_argument("--only", nargs="*", default=[], choices=list(CLASSES), help="some classes only")
    parser.add_argument("--memory", action="store_true", help="measure memory against a bare pickle.load instead")
    args = parser.parse_args()
    if args.memory:
        memory(args.server.resolve())
    else:
        table(args.server.resolve(), args.only)


if __name__ == "__main__":
    main()
