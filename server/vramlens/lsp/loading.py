"""What `vramlens.openCapture` (and a finished diagnose or experiment) loads, by what the path holds.

- a folder with ranks' captures below it (`vramlens run --torchrun`): every rank, compared, the
  failing rank shown first, and each hover told the line's spread across ranks;
- an experiment (`experiment.json`, or the folder holding it): its table, with the figures of the
  baseline's first run when that capture is on this machine;
- anything else: one capture folder, its capture.json, or a raw snapshot pickle.

Pure (no pygls); blocking (the adapters call it off the event loop).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from vramlens.analysis.ranks.model import RankComparison
from vramlens.analysis.ranks.analyze import analyze_ranks
from vramlens.analysis.experiments.experiment import experiment_json, record_from_json
from vramlens.capture import CaptureError
from vramlens.capture.experiment_shape import MAX_FILE_BYTES as MAX_EXPERIMENT_BYTES, check_experiment
from vramlens.capture.ranks import holds_rank_captures
from vramlens.lsp import capture_store
from vramlens.lsp.annotations import spread_markdown
from vramlens.lsp.capture_store import FileFigures, LoadedCapture, RankView, file_figures
from vramlens.lsp.source_mapping import choose_source_root, recorded_user_files
from vramlens.regular_files import FileProblem, read_regular_file
from vramlens.experiments.engine import EXPERIMENT_FILE



def load_path(path: str, folder_uri: str, folder_path: str, total_memory: int | None = None) -> LoadedCapture:
    target = Path(path)
    experiment_file = _experiment_file(target)
    if experiment_file is not None:
        return load_experiment(read_experiment(experiment_file), str(experiment_file), folder_uri, folder_path)
    if holds_rank_captures(target):
        return load_ranks(path, folder_uri, folder_path, total_memory)
    return capture_store.load(path, folder_uri, folder_path, total_memory)


def _experiment_file(target: Path) -> Path | None:
    if target.is_dir():
        # Whatever is there is read as the experiment, through the reader that refuses what is not a file.
        return target / EXPERIMENT_FILE if os.path.lexists(target / EXPERIMENT_FILE) else None
    return target if target.suffix == ".json" and target.name != "capture.json" else None


def read_experiment(file: Path) -> dict:
    """The experiment's JSON as `vramlens experiment` would write it from the file's measured runs."""
    try:  # a regular file only, bounded: a FIFO or /dev/zero named *.json is refused, never read
        raw = json.loads(read_regular_file(file, MAX_EXPERIMENT_BYTES, "experiment").decode("utf-8"))
    except FileProblem as problem:
        raise CaptureError(f"Cannot read the experiment: {problem}.") from None
    except RecursionError:
        raise CaptureError(f"{file} is nested too deeply to be an experiment.") from None
    except ValueError as error:  # not JSON, not UTF-8
        raise CaptureError(f"{file} is damaged and cannot be read as an experiment ({str(error)[:200]}).") from None
    return experiment_json(record_from_json(check_experiment(raw, file)))


def load_experiment(data: dict, path: str, folder_uri: str, folder_path: str) -> LoadedCapture:
    """The experiment's table, on the figures of its baseline's first run when that capture is here."""
    capture = _baseline_capture(data)
    if capture is not None:
        try:
            loaded = capture_store.load(capture, folder_uri, folder_path)
        except CaptureError:
            loaded = None  # the table still stands without the run's figures
        if loaded is not None:
            return dataclasses.replace(loaded, experiment=data)
    return LoadedCapture(str(Path(path).resolve()), folder_uri, folder_path, ranks=[], experiment=data)


def _baseline_capture(data: dict) -> str | None:
    runs = data["variants"][0].get("runs") if data["variants"] and isinstance(data["variants"][0], dict) else None
    capture = runs[0].get("capture") if runs and isinstance(runs[0], dict) else None
    return capture if isinstance(capture, str) and Path(capture).is_dir() else None


def load_ranks(path: str, folder_uri: str, folder_path: str, total_memory: int | None = None) -> LoadedCapture:
    """Every rank's capture below ``path``, each mapped onto the workspace, showing the failing rank first."""
    comparison = analyze_ranks(path, total_memory=total_memory,
                               root_for=lambda capture: choose_source_root(folder_path, recorded_user_files(capture)))
    views = [RankView(summary.rank, summary.meta, summary.analysis,
                      with_spread(file_figures(summary.analysis), comparison))
             for summary in comparison.ranks if summary.analysis is not None]
    if not views:
        raise CaptureError(f"None of the ranks' captures in {path} could be analysed: {' '.join(comparison.notes)}")
    shown = comparison.ranks[comparison.default_index].rank
    selected = next((index for index, view in enumerate(views) if view.rank == shown), 0)
    root = views[selected].analysis.local_root or folder_path  # the root that rank's files were mapped with
    return LoadedCapture(str(Path(path).resolve()), folder_uri, root, views, selected, comparison=comparison)


def with_spread(files: dict[str, FileFigures], comparison: RankComparison) -> dict[str, FileFigures]:
    """Each hover on an attributed line gets the line's live bytes on every rank."""
    for figures in files.values():
        for line, annotation in figures.annotations.items():
            spread = comparison.spread_at(annotation.local_path, line)
            if spread is not None and len(spread.live_by_rank) > 1:
                figures.annotations[line] = dataclasses.replace(
                    annotation, hover=f"{annotation.hover}\n\n{spread_markdown(spread.live_by_rank)}")
    return files
