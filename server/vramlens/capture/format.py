"""Names and version of the capture folder (documented in docs/capture-format.md).

A capture folder holds ``capture.json`` (facts about the run) and ``snapshot.pickle``
(exactly what ``torch.cuda.memory._dump_snapshot`` writes, so PyTorch's own viewer opens it).
The agent, which may not import this package, writes them with the same names
(``vramlens/agent/capture_writer.py``; a test keeps the two in step).
"""

FORMAT_NAME = "vramlens-capture"
FORMAT_VERSION = 1
META_FILE = "capture.json"
SNAPSHOT_FILE = "snapshot.pickle"
