"""Every test run keeps the lint's on-disk summaries (lint/project/store.py) in a folder of its own: a test never
reads what an earlier run, or the user's own linting, left in the user's cache folder."""

import os
import tempfile

import pytest


@pytest.fixture(scope="session", autouse=True)
def _own_summary_cache():
    chosen = os.environ.get("VRAMLENS_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="vramlens-test-cache-") as folder:
        os.environ["VRAMLENS_CACHE_DIR"] = folder
        yield folder
    if chosen is None:
        os.environ.pop("VRAMLENS_CACHE_DIR", None)
    else:
        os.environ["VRAMLENS_CACHE_DIR"] = chosen
