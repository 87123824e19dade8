"""Run inside a kernel by the notebook runner (``runpy.run_path``): load the agent's modules under a
private package name, as ``launch.py`` does for scripts, and start recording.

The runner's kernel has no vramlens on its path: its extension is loaded from here, and IPython is
told it is loaded, so a notebook's own ``%load_ext vramlens`` finds it so instead of failing.
"""

from __future__ import annotations

import importlib
import os
import sys
import types

_AGENT_DIR = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "_vramlens_agent"


def agent_module(name: str):
    if PACKAGE not in sys.modules:
        package = types.ModuleType(PACKAGE)
        package.__path__ = [_AGENT_DIR]
        sys.modules[PACKAGE] = package
    return importlib.import_module(f"{PACKAGE}.{name}")


def start(shell, options: dict) -> str:
    agent_module("kernel_output").bound_output(shell)  # a cell's output is relayed as it is printed, not held
    extension = agent_module("ipython_ext")
    capture = extension.start_for_runner(shell, options)
    loaded = getattr(getattr(shell, "extension_manager", None), "loaded", None)
    if isinstance(loaded, set):
        loaded.add("vramlens")
    return capture


def finish(shell, status: str) -> str:
    return agent_module("ipython_ext").finish_for_runner(shell, status)
