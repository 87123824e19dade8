"""The environment the user's script runs in: ours, minus the libraries that only the language server needs.

The editor starts the server with its packaged libraries (vramlens, pygls, lsprotocol…) first on
PYTHONPATH. Passed on unchanged, they would shadow the user's own copies of packages such as
typing_extensions or attrs inside the script, which would then behave differently under vramlens.
The agent needs none of them: it is started by path and imports only the standard library and torch.
"""

from __future__ import annotations

import os
from pathlib import Path

import vramlens

# The folder on sys.path that holds the vramlens package (bundled/libs inside the installed extension).
OWN_LIBRARY_FOLDER = Path(vramlens.__file__).resolve().parent.parent


def _is_own_folder(entry: str) -> bool:
    try:
        return Path(entry).resolve() == OWN_LIBRARY_FOLDER
    except OSError:
        return False


def script_environment(extra_env: dict[str, str], base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (our environment) with ``extra_env`` on top; our own library folder leaves an inherited PYTHONPATH."""
    env = dict(os.environ if base is None else base)
    inherited = env.get("PYTHONPATH")
    if inherited and "PYTHONPATH" not in extra_env:
        kept = [entry for entry in inherited.split(os.pathsep) if entry and not _is_own_folder(entry)]
        if kept:
            env["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del env["PYTHONPATH"]
    env.update(extra_env)
    return env
