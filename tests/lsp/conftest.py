import sys
from pathlib import Path

# Let the tests import their helper module (lsp_helpers) by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest  # noqa: E402
from lsp_helpers import client  # noqa: E402,F401  (the real server over stdio, opened on ``workspace``)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The one workspace folder the client opens; modules that need files in it override this fixture."""
    return tmp_path
