"""Loading a helper module of the repository from its file, once, under the name it is known by.

The workload corpus's scripts (workloads/record.py, ...) run standalone on GPU machines and import
their neighbours by plain name (``import manifest``); registering the module under that same name
means a benchmark, a test and those scripts all share one module object.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load(name: str, path: Path) -> ModuleType:
    """The module ``name`` from ``path`` (a .py file, or a package's folder)."""
    if name in sys.modules:
        return sys.modules[name]
    if path.is_dir():
        spec = importlib.util.spec_from_file_location(
            name, path / "__init__.py", submodule_search_locations=[str(path)])
    else:
        spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module {name} at {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
