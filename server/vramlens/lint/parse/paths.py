"""What a file's path says about the code in it: whether it is test support (a test, a fixture, a helper of
the tests) rather than code that trains or serves a model."""

from __future__ import annotations

import re

# The folders test code is kept in by the common conventions (pytest, unittest, a package's ``test_utils``).
_TEST_FOLDERS = frozenset({"test", "tests", "testing", "test_utils", "testutils", "test_helpers"})
_TEST_FILE = re.compile(r"^(test_.*|.*_test|tests|conftest)\.(py|ipynb)$")


def is_test_support(path: str) -> bool:
    """A test file (``test_x.py``, ``x_test.py``, ``conftest.py``) or a module of a test folder
    (``pkg/test_utils/infer_utils.py``). Only the folder that holds the file is read: an editor names a file by
    its absolute path, and a folder above the project (``~/tests/project/train.py``) says nothing of its code."""
    parts = re.split(r"[\\/]", path)
    name = parts[-1]
    folder = parts[-2] if len(parts) > 1 else ""
    return bool(_TEST_FILE.match(name)) or folder.lower() in _TEST_FOLDERS
