import sys
from pathlib import Path

# Let the tests import their small helper modules (corpus_expectations) by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))
