"""Run a user's script under allocator instrumentation, as if the user had run it directly.

Executed by path in the user's interpreter:
    python launch.py --capture DIR --status-file FILE [options] -- SCRIPT [ARGS...]
sys.argv, __main__, the working folder and the exit code are the script's own. A capture
folder is written on normal exit, on an exception (the OOM included), on sys.exit, on
Ctrl-C, on SIGTERM (the timeout) and, without stopping the run, on SIGUSR1.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types

_AGENT_DIR = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = "_vramlens_agent"  # a private name, so nothing in the user's sys.path collides


def _load_siblings():
    package = types.ModuleType(_PACKAGE)
    package.__path__ = [_AGENT_DIR]
    sys.modules[_PACKAGE] = package
    spec = importlib.util.spec_from_file_location(f"{_PACKAGE}.session", os.path.join(_AGENT_DIR, "session.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    # Our folder must not shadow the user's imports: the script's own folder takes its place.
    if sys.path and os.path.abspath(sys.path[0] or ".") == _AGENT_DIR:
        del sys.path[0]
    sys.exit(_load_siblings().main(sys.argv[1:]))
