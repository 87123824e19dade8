"""The loaded-capture store: one load may hold several processes (ranks); the failing one is shown."""

import shutil
from pathlib import Path

from vramlens.lsp.capture_store import CaptureStore, LoadedCapture, analyze_for_folder

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "tests" / "fixtures" / "captures"


def test_a_load_of_several_ranks_shows_the_failing_one_and_can_switch(tmp_path):
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    healthy, root = analyze_for_folder(str(CAPTURES / "no_problem"), str(tmp_path), rank=0)
    failing, _ = analyze_for_folder(str(CAPTURES / "working_set"), str(tmp_path), rank=1)
    loaded = LoadedCapture.of_ranks("/captures/run", tmp_path.as_uri(), root, [healthy, failing])
    assert loaded.view.rank == 1 and loaded.view.failed

    store = CaptureStore()
    store.put(loaded)
    working_set = str(tmp_path / "scenarios" / "working_set.py")
    assert store.figures_for(working_set).annotations
    assert store.figures_for(str(tmp_path / "scenarios" / "no_problem.py")) is None

    assert loaded.select_rank(0) and loaded.view.rank == 0
    assert store.figures_for(working_set) is None and store.figures_for(str(tmp_path / "scenarios" / "no_problem.py"))
    assert not loaded.select_rank(7) and loaded.view.rank == 0
    assert store.clear(tmp_path.as_uri()) == [loaded] and store.get(None) is None
