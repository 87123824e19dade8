"""Run a notebook under recording, in a fresh kernel of this interpreter (see notebook_driver.py).

Executed by path in the user's interpreter, as launch.py is for scripts:
    python notebook_launch.py --capture DIR --status-file FILE [options] -- NOTEBOOK.ipynb
"""

from __future__ import annotations

import os
import runpy
import sys

_AGENT_DIR = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0] or ".") == _AGENT_DIR:
        del sys.path[0]  # our folder must not shadow the user's imports
    agent_module = runpy.run_path(os.path.join(_AGENT_DIR, "kernel_entry.py"))["agent_module"]
    sys.exit(agent_module("notebook_driver").main(sys.argv[1:]))
