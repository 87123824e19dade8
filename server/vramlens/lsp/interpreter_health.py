"""Whether the interpreter that runs the user's scripts can diagnose: torch importable, CUDA usable.

`vramlens/interpreterHealth` answers it (the client asks when the server starts, i.e. whenever the
interpreter changes, and before a run). The probe runs in that interpreter with a time limit and
creates no CUDA context: it asks torch whether CUDA is built and visible, nothing more.
Each problem is one sentence with the remedy first.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from vramlens.lsp.feature import Feature, handler
from vramlens.lsp.params import optional_uri_param
from vramlens.lsp.server import VramLensServer

INTERPRETER_HEALTH = "vramlens/interpreterHealth"
PROBE_TIMEOUT_S = 60.0  # a first `import torch` on a cold disk takes seconds
PROBE = r"""
import json, sys
facts = {"python": sys.version.split()[0], "executable": sys.executable}
try:
    import torch
except Exception as error:
    facts["torchError"] = f"{type(error).__name__}: {error}"
else:
    facts["torch"] = torch.__version__
    facts["cudaBuild"] = getattr(torch.version, "cuda", None)
    try:
        facts["cuda"] = bool(torch.cuda.is_available())
        facts["devices"] = torch.cuda.device_count() if facts["cuda"] else 0
    except Exception as error:
        facts["cuda"] = False
        facts["cudaError"] = f"{type(error).__name__}: {error}"
print("VRAMLENS-HEALTH " + json.dumps(facts))
"""


def probe(python: str, timeout_s: float = PROBE_TIMEOUT_S, extra_env: dict | None = None) -> dict:
    """The interpreter's facts, or {"runError": why it could not run}. ``extra_env``: the variables a run
    adds (the `env` setting: CUDA_VISIBLE_DEVICES, PYTHONPATH…), so the probe sees what the script will."""
    env = {**os.environ, **(extra_env or {})}
    try:
        # A session of its own: the "interpreter" may be a wrapper that starts others, or ignore SIGTERM;
        # the whole group is killed when the probe ends, so nothing it started outlives it.
        child = subprocess.Popen([python, "-c", PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 errors="replace", stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    except FileNotFoundError:
        return {"runError": "it was not found"}
    except PermissionError:
        return {"runError": "it is not executable"}
    except OSError as error:
        return {"runError": f"it cannot be started ({error.strerror})"}
    try:
        out, errors = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"runError": f"it did not answer within {timeout_s:.0f} s"}
    finally:
        _end_group(child)
    for line in out.splitlines():
        if line.startswith("VRAMLENS-HEALTH "):
            try:
                facts = json.loads(line.removeprefix("VRAMLENS-HEALTH "))
            except ValueError:
                break
            if isinstance(facts, dict):
                return facts
    tail = (errors.strip().splitlines() or [f"exit code {child.returncode}"])[-1]
    return {"runError": f"it failed ({tail[:200]})"}


def _end_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()
    child.wait()


def health(python: str, facts: dict) -> dict:
    """`{ok, canRun, summary, problem, python, torch, cuda, devices}`: `problem` is the sentence to show."""
    answer = {"python": python, "torch": facts.get("torch"), "cuda": bool(facts.get("cuda")),
              "devices": facts.get("devices", 0), "version": facts.get("python")}
    if "runError" in facts:
        return {**answer, "ok": False, "canRun": False, "summary": "interpreter not usable",
                "problem": f"Choose a Python 3.10+ with torch (VRAM Lens: Select interpreter): {python} could not run, "
                           f"{facts['runError']}."}
    if facts.get("torch") is None:
        return {**answer, "ok": False, "canRun": False, "summary": "no torch",
                "problem": f"Choose an interpreter that has torch (VRAM Lens: Select interpreter), or install torch "
                           f"there: {python} cannot import it ({facts.get('torchError', 'not installed')}). "
                           "Lint and opening captures still work."}
    if not facts.get("cuda"):
        reason = ("a build without CUDA" if not facts.get("cudaBuild")
                  else f"built for CUDA {facts['cudaBuild']}, but no CUDA device or driver is visible")
        return {**answer, "ok": False, "canRun": False, "summary": f"torch {facts['torch']} · no CUDA",
                "problem": f"Choose an interpreter whose torch sees a GPU to diagnose runs (VRAM Lens: Select "
                           f"interpreter): torch {facts['torch']} in {python} is {reason}. Lint and opening "
                           "captures still work."}
    devices = facts.get("devices", 0)
    return {**answer, "ok": True, "canRun": True, "problem": None,
            "summary": f"torch {facts['torch']} · CUDA {facts.get('cudaBuild')} · {devices} GPU{'' if devices == 1 else 's'}"}


class InterpreterHealth(Feature):
    def register(self, server: VramLensServer) -> None:
        server.feature(INTERPRETER_HEALTH)(handler(self.interpreter_health))

    async def interpreter_health(self, ls: VramLensServer, params) -> dict:
        uri = optional_uri_param(params, INTERPRETER_HEALTH)
        settings = ls.settings_for(uri)
        python = settings.interpreter or sys.executable
        facts = await asyncio.to_thread(probe, python, PROBE_TIMEOUT_S, settings.env)
        answer = health(python, facts)
        ls.log(f"Interpreter {python}: {answer['summary']}" + (f" — {answer['problem']}" if answer["problem"] else ""))
        return answer
