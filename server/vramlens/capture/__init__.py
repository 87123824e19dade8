"""The capture folder: its format, safe loading of snapshot pickles, and their shape checked once.

Standard library only: the analysis, the CLI and the language server all read captures
through here, and nothing here may execute code found in a snapshot.
"""

from vramlens.capture.errors import CaptureError
from vramlens.capture.loader import Capture, load_capture, load_checked_snapshot, load_snapshot

__all__ = ["Capture", "CaptureError", "load_capture", "load_checked_snapshot", "load_snapshot"]
