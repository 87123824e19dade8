"""Snapshot layouts of torch 2.12–2.15, accepted and read as they mean.

The GPU machine has torch 2.11, so these captures are REAL 2.11 captures from tests/fixtures/captures
with the newer fields added by the test, in the shape torch documents them
(torch/cuda/memory.py `_snapshot`, `_record_memory_history(skip_actions=...)`): a `pool_id` tuple on
every trace entry (2.12), histories recorded with `skip_actions` (2.11), top-level `host_segments` /
`host_traces` and the `annotate` action with its text in `user_metadata` (2.14), FX frame keys
(`fx_node_op`, `fx_node_name`, `fx_node_target`, `fx_original_trace`), the 2.12 message of a request
refused under the per-process fraction, and keys no release has yet, anywhere.
"""

import copy
import json
import pickle
import shutil
from pathlib import Path

import pytest

from vramlens.analysis import analyze_path, to_json
from vramlens.capture import CaptureError

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "tests" / "fixtures" / "captures"
SCENARIOS = str(ROOT / "scenarios")


def copy_capture(name: str, target: Path) -> Path:
    shutil.copytree(CAPTURES / name, target)
    return target


def edit_snapshot(folder: Path, change) -> None:
    path = folder / "snapshot.pickle"
    snapshot = pickle.loads(path.read_bytes())
    change(snapshot)
    path.write_bytes(pickle.dumps(snapshot, protocol=4))


def edit_meta(folder: Path, change) -> None:
    path = folder / "capture.json"
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def entries(snapshot: dict):
    for trace in snapshot["device_traces"]:
        yield from trace


def frames(snapshot: dict):
    for entry in entries(snapshot):
        yield from entry.get("frames") or ()
    for segment in snapshot["segments"]:
        for block in segment["blocks"]:
            yield from block.get("frames") or ()


def essentials(path) -> dict:
    """What the analysis says, without the notes (loading may add one) and the marks."""
    data = to_json(analyze_path(path, source_root=SCENARIOS))
    data.pop("notes")
    data.pop("phase_marks")
    return data


@pytest.mark.parametrize("name", ["working_set", "fragmentation", "no_problem", "retained_references"])
def test_a_pool_id_tuple_on_every_entry_changes_nothing(tmp_path, name):
    folder = copy_capture(name, tmp_path / name)

    def add_pool_ids(snapshot):
        for entry in entries(snapshot):
            entry["pool_id"] = (0, 0)  # a tuple, as torch 2.12 writes it

    edit_snapshot(folder, add_pool_ids)
    assert essentials(folder) == essentials(CAPTURES / name)


def test_fx_frame_keys_and_unknown_keys_anywhere_change_nothing(tmp_path):
    folder = copy_capture("working_set", tmp_path / "ws")

    def add_keys(snapshot):
        snapshot["a_future_key"] = {"nested": [1, 2, 3]}
        for frame in frames(snapshot):
            frame.update(fx_node_op="call_function", fx_node_name="linear_1", fx_node_target="aten.mm",
                         fx_original_trace="x = self.fc(x)", fx_node_info={"unknown": True})
        for entry in entries(snapshot):
            entry["future_entry_key"] = ["anything"]
        for segment in snapshot["segments"]:
            segment["future_segment_key"] = 1.5
            for block in segment["blocks"]:
                block["future_block_key"] = None

    edit_snapshot(folder, add_keys)
    edit_meta(folder, lambda meta: meta.update(future_top=[1], environment=dict(meta["environment"], future_gpu_fact="x")))
    assert essentials(folder) == essentials(CAPTURES / "working_set")


def test_host_memory_and_annotations_of_torch_2_14_become_phase_marks(tmp_path):
    folder = copy_capture("no_problem", tmp_path / "np")
    original = pickle.loads((CAPTURES / "no_problem" / "snapshot.pickle").read_bytes())
    trace = original["device_traces"][0]
    marks = {0: "warm-up", len(trace) // 2: "epoch 1"}

    def add_host_and_marks(snapshot):
        snapshot["host_segments"] = [{"address": 1, "total_size": 4096, "blocks": []}]
        snapshot["host_traces"] = [{"action": "alloc", "addr": 1, "size": 4096}]
        trace = snapshot["device_traces"][0]
        for position in sorted(marks, reverse=True):
            trace.insert(position, {"action": "annotate", "time_us": trace[position]["time_us"], "stream": 0,
                                    "frames": [], "user_metadata": marks[position]})

    edit_snapshot(folder, add_host_and_marks)
    analysis = analyze_path(folder, source_root=SCENARIOS)
    assert [(mark.index, mark.text) for mark in analysis.phase_marks] == [(0, "warm-up"), (len(trace) // 2 + 1, "epoch 1")]
    assert all(mark.time_us for mark in analysis.phase_marks)
    plain = analyze_path(CAPTURES / "no_problem", source_root=SCENARIOS)
    assert analysis.diagnosis.cause == plain.diagnosis.cause
    assert analysis.timeline.peak_allocated == plain.timeline.peak_allocated
    assert [(line.path, line.line, line.live_bytes) for line in analysis.lines] == \
           [(line.path, line.line, line.live_bytes) for line in plain.lines]
    assert to_json(analysis)["phase_marks"][1] == {"index": len(trace) // 2 + 1, "time_us": analysis.phase_marks[1].time_us,
                                                   "text": "epoch 1"}


def test_the_report_payload_carries_the_phase_marks(tmp_path):
    from vramlens.lsp.capture_store import load
    from vramlens.lsp.report_payload import report_payload

    folder = copy_capture("no_problem", tmp_path / "np")
    edit_snapshot(folder, lambda snapshot: snapshot["device_traces"][0].insert(
        5, {"action": "annotate", "time_us": snapshot["device_traces"][0][5]["time_us"], "user_metadata": "eval"}))
    payload = report_payload(load(str(folder), folder.as_uri(), str(ROOT)), lambda path: path)
    [mark] = payload["series"]["phaseMarks"]
    assert mark["text"] == "eval" and mark["index"] == 5 and isinstance(mark["time"], float)
    assert payload["series"]["marks"] == [{"at": mark["time"], "label": "eval"}]  # what the timeline draws


def test_a_history_without_free_requested_counts_frees_when_they_complete(tmp_path):
    """skip_actions=["free_requested"]: every free is there as free_completed only."""
    folder = copy_capture("no_problem", tmp_path / "np")
    edit_snapshot(folder, lambda snapshot: snapshot["device_traces"].__setitem__(
        0, [entry for entry in snapshot["device_traces"][0] if entry["action"] != "free_requested"]))
    analysis = analyze_path(folder, source_root=SCENARIOS)
    plain = analyze_path(CAPTURES / "no_problem", source_root=SCENARIOS)
    assert any("without free_requested events (skip_actions)" in note for note in analysis.notes)
    # Without the rewrite nothing would ever be freed and the peak would be the sum of every allocation.
    assert analysis.timeline.peak_allocated <= plain.timeline.peak_allocated * 1.05
    assert analysis.timeline.end_allocated == plain.timeline.end_allocated
    assert analysis.diagnosis.cause == plain.diagnosis.cause


def test_a_history_without_any_free_is_refused_rather_than_misread(tmp_path):
    """skip_actions=["free_requested", "free_completed"]: live memory cannot be told."""
    folder = copy_capture("no_problem", tmp_path / "np")
    edit_snapshot(folder, lambda snapshot: snapshot["device_traces"].__setitem__(
        0, [entry for entry in snapshot["device_traces"][0] if not entry["action"].startswith("free")]))
    with pytest.raises(CaptureError, match=r"recorded without frees \(skip_actions\), yet \d+ allocations reuse"):
        analyze_path(folder, source_root=SCENARIOS)


def test_a_history_without_allocations_says_where_its_lines_come_from(tmp_path):
    folder = copy_capture("no_problem", tmp_path / "np")
    edit_snapshot(folder, lambda snapshot: snapshot["device_traces"].__setitem__(
        0, [entry for entry in snapshot["device_traces"][0] if entry["action"] != "alloc"]))
    analysis = analyze_path(folder, source_root=SCENARIOS)
    assert any("skip_actions=['alloc']" in note for note in analysis.notes)


def test_the_2_12_rejection_under_the_fraction_is_an_oom_with_its_meaning(tmp_path):
    """torch 2.12 refuses a request beyond set_per_process_memory_fraction before asking the device."""
    folder = copy_capture("working_set", tmp_path / "ws")
    message = ("Allocation was preemptively rejected because it would exceed per_process_memory_fraction limit. "
               "Tried to allocate 384.00 MiB.")
    edit_meta(folder, lambda meta: meta.update(exception=dict(meta["exception"], message=message), oom=None))
    edit_snapshot(folder, lambda snapshot: snapshot["device_traces"].__setitem__(
        0, [entry for entry in snapshot["device_traces"][0] if entry["action"] != "oom"]))
    analysis = analyze_path(folder, source_root=SCENARIOS)
    assert analysis.outcome == "oom"
    assert any("rejected the failing request before asking the device" in note for note in analysis.notes)

    from vramlens.agent.tracebacks import is_oom
    assert is_oom(RuntimeError(message))  # the agent records such a run as an OOM
