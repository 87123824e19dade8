import sys
from pathlib import Path

# Let the tests import their helper module (lsp_helpers) by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))
