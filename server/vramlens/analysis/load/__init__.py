"""Stage 1, load: the capture made usable — the device's trace and segments, the allocator settings, how the run ended, which frames are the user's code."""

from vramlens.analysis.load.stage import Loaded, read

__all__ = ["Loaded", "read"]
