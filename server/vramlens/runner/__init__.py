"""The server side of a capture: start the agent in the user's interpreter, watch it, finish the capture."""

from vramlens.runner.launch import RunOptions, RunResult, run_script

__all__ = ["RunOptions", "RunResult", "run_script"]
