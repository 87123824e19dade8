import sys
from pathlib import Path

# Test helpers (snapshot builders, shared assertions) live beside the unit tests; let every test
# import them by name, whichever file pytest happens to collect first.
sys.path.insert(0, str(Path(__file__).resolve().parent / "unit"))
