from pathlib import Path

import pytest
from lsp_helpers import client  # noqa: F401  (the real server over stdio, opened on ``workspace``)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The one workspace folder the client opens; modules that need files in it override this fixture."""
    return tmp_path
