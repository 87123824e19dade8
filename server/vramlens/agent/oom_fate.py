"""Whether an OOM reached Python code, learnt without any cost while no exception is raised.

Libraries catch some OOMs below Python: cuDNN tries workspace sizes and takes the next smaller one
when an allocation fails, so a ResNet step near a limit can see dozens of OOMs that never reach
the script. The moment an OOM does reach Python is its first ``RAISE`` event (``sys.monitoring``,
Python 3.12+): the failing call's frames are all still on the stack there, so that is where its
census is taken. An OOM followed by another OOM, or by the end of the run, without a raise in
between, was caught below Python and costs nothing.

Without ``sys.monitoring`` (Python < 3.12), or when another tool holds every free tool id,
``available`` is False and the recorder takes its census inside the OOM observer, as before.
"""

from __future__ import annotations

import sys

TOOL_IDS = (4, 3)  # the ids sys.monitoring leaves free (0-2 and 5 are the debugger's, coverage's, profiler's, optimizer's)
TOOL_NAME = "vramlens"


def is_oom_error(error) -> bool:
    return type(error).__name__ == "OutOfMemoryError"


class OomFate:
    """``on_raise()`` is called once for each pending OOM, at the first raise of an OutOfMemoryError."""

    def __init__(self, on_raise):
        self._on_raise = on_raise
        self.pending = False
        self._tool: int | None = None
        self.available = self._claim_tool()

    def _claim_tool(self) -> bool:
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is None:
            return False
        for tool in TOOL_IDS:
            try:
                monitoring.use_tool_id(tool, TOOL_NAME)
            except ValueError:  # another tool has it
                continue
            self._tool = tool
            return True
        return False

    def watch(self) -> None:
        """An OOM just happened: watch for its raise (the RAISE event is global, so any thread's raise counts)."""
        self.pending = True
        monitoring = sys.monitoring
        if monitoring.get_events(self._tool) == 0:
            monitoring.register_callback(self._tool, monitoring.events.RAISE, self._raised)
            monitoring.set_events(self._tool, monitoring.events.RAISE)

    def _raised(self, code, offset, error):
        # Called for every raise in Python code once an OOM has happened: a test and a return.
        if self.pending and is_oom_error(error):
            self.pending = False
            try:
                self._on_raise()
            except Exception:  # the user's exception must go on unchanged
                pass

    def release(self) -> None:
        if self._tool is None:
            return
        try:
            sys.monitoring.set_events(self._tool, 0)
            sys.monitoring.register_callback(self._tool, sys.monitoring.events.RAISE, None)
            sys.monitoring.free_tool_id(self._tool)
        except Exception:
            pass
        self._tool = None
        self.available = False
