"""Static checks for PyTorch code that wastes GPU memory, with safe fixes. Standard library only."""

from .catalog import CHECKS, RULES, is_enabled, unknown_selectors
from .engine.chunks import ChunkCache
from .engine.driver import iter_python_files, lint_bytes, lint_file, lint_paths, lint_source
from .engine.fixes import apply_edits, apply_fix, fix_file, fix_source
from .engine.store_fixes import store_fixes
from .findings import Edit, Finding, Fix
from .project.roots import project_root

__all__ = [
    "CHECKS", "ChunkCache", "RULES", "Edit", "Finding", "Fix", "apply_edits", "apply_fix", "fix_file", "fix_source",
    "is_enabled", "iter_python_files", "lint_bytes", "lint_file", "lint_paths", "lint_source", "project_root",
    "store_fixes", "unknown_selectors",
]
