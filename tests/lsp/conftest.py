import sys
from pathlib import Path

# Let the tests import their helper module (lsp_helpers) by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest  # noqa: E402
import pytest_lsp  # noqa: E402
from lsp_helpers import initialize_with_folder  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The one workspace folder the client opens; modules that need files in it override this fixture."""
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "vramlens.lsp"]))
async def client(lsp_client: LanguageClient, workspace: Path):
    """The real server over stdio, initialised as VS Code does with ``workspace`` as its folder."""
    await initialize_with_folder(lsp_client, workspace)
    yield
    await lsp_client.shutdown_session()
