"""Pure functions from a capture to typed results: replay, attribution, accounting, diagnosis.

``analyze_capture(capture)`` / ``analyze_path(path)`` return an :class:`Analysis`; nothing here
prints or talks LSP. ``to_json(analysis)`` gives the documented --json schema.
"""

from vramlens.analysis.pipeline import analyze_capture, analyze_path
from vramlens.analysis.rendering.json_export import SCHEMA_VERSION, to_json
from vramlens.analysis.model import Analysis

__all__ = ["SCHEMA_VERSION", "Analysis", "analyze_capture", "analyze_path", "to_json"]
