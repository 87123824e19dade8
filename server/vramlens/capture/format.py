"""Names and version of the capture folder (documented in docs/capture-format.md).

A capture folder holds ``capture.json`` (facts about the run), ``snapshot.pickle`` (exactly
what ``torch.cuda.memory._dump_snapshot`` writes, so PyTorch's own viewer opens it) and, from
version 2, the tensor census at the snapshot's moment (``census.json``) and near the peak
(``census-peak.json``).
The agent, which may not import this package, writes them with the same names
(``vramlens/agent/capture_writer.py``; a test keeps the two in step).
"""

FORMAT_NAME = "vramlens-capture"
FORMAT_VERSION = 3
META_FILE = "capture.json"
SNAPSHOT_FILE = "snapshot.pickle"
CENSUS_FILE = "census.json"
PEAK_CENSUS_FILE = "census-peak.json"
