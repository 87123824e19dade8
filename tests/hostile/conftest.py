import sys
from pathlib import Path

# The hostile-input tests share the corpus (corpus.py) and the process helpers of tests/unit.
sys.path.insert(0, str(Path(__file__).resolve().parent))
