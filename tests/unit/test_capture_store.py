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


def test_the_failing_cell_of_a_notebook_gets_the_oom_even_when_it_holds_nothing_live():
    """The request that failed was never live: its cell has no figure, yet it is where the error goes."""
    from pathlib import Path as _Path

    from vramlens.analysis import analyze_path
    from vramlens.lsp.capture_store import file_figures

    repo = _Path(__file__).resolve().parents[2]
    analysis = analyze_path(repo / "tests/fixtures/captures/notebook_kept_outputs", source_root=str(repo / "scenarios"))
    failing = [figures for key, figures in file_figures(analysis).items() if figures.oom is not None]
    assert len(failing) == 1 and not failing[0].annotations
    assert failing[0].lines[failing[0].oom.line - 1].startswith("big = torch.empty(3 * 2**30")
