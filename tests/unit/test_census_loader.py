"""Reading censuses: version-1 captures load without one; a census the agent wrote loads as it
was written; a broken or hostile one is one clear sentence, never a traceback."""

import copy
import json
import os
import shutil

import pytest

from vramlens.agent import capture_writer
from vramlens.capture import CaptureError, load_capture
from vramlens.capture import census as census_format
from vramlens.capture import format as capture_format

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "captures")
VERSION_1 = sorted(name for name in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, name))
                   and json.load(open(os.path.join(FIXTURES, name, "capture.json")))["version"] == 1)


@pytest.mark.parametrize("name", VERSION_1)
def test_version_1_captures_load_without_a_census(name):
    assert len(VERSION_1) >= 10  # the fixtures recorded by the first version of the capture format
    capture = load_capture(os.path.join(FIXTURES, name))
    assert capture.meta["version"] == 1
    assert capture.census is None and capture.peak_census is None
    assert capture.snapshot["device_traces"] or capture.snapshot["segments"]


def test_the_agent_and_the_loader_agree_on_the_names():
    for name in ("CENSUS_FILE", "PEAK_CENSUS_FILE", "FORMAT_VERSION"):
        assert getattr(capture_writer, name) == getattr(capture_format, name)
    from vramlens.agent.census import CENSUS_FORMAT
    from vramlens.agent.census.inventory import ROLES

    assert CENSUS_FORMAT == census_format.CENSUS_FORMAT and ROLES == census_format.ROLES


@pytest.fixture(scope="module")
def real_census():
    torch = pytest.importorskip("torch")
    from vramlens.agent.census import take_census

    model = torch.nn.Linear(32, 32)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 32)).sum().backward()
    optimizer.step()
    kept = {"outputs": [torch.randn(8) for _ in range(3)]}
    taken = take_census(torch, "oom", device_filter=lambda t: t.device.type == "cpu", budget_s=30,
                        extra_roots={"model": model, "optimizer": optimizer, "kept": kept})
    return json.loads(json.dumps(taken))


def write_capture_with(folder, census, peak=None):
    snapshot = {"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 512, "frames": []}]]}
    capture_writer.write_capture(str(folder), {"status": "oom", "snapshot_moment": "oom"}, snapshot, census, peak)
    return folder


def test_a_census_the_agent_wrote_loads_as_written(tmp_path, real_census):
    folder = write_capture_with(tmp_path / "cap", real_census, dict(real_census, moment="peak"))
    assert sorted(os.listdir(folder)) == ["capture.json", "census-peak.json", "census.json", "snapshot.pickle"]
    capture = load_capture(folder)
    assert capture.meta["version"] == capture_writer.FORMAT_VERSION and capture.meta["census"] == "census.json"
    loaded = capture.census
    assert loaded["moment"] == "oom" and capture.peak_census["moment"] == "peak"
    assert loaded["tensors"] == [dict(t, **{"class": t.get("class")}) for t in real_census["tensors"]]  # null when absent
    assert loaded["storages"] == real_census["storages"]
    assert loaded["roles"] == real_census["roles"] and loaded["optimizers"][0]["state"] == real_census["optimizers"][0]["state"]
    assert [h["path"] for h in loaded["holders"]] == [h["path"] for h in real_census["holders"]]


def broken(census, change):
    damaged = copy.deepcopy(census)
    change(damaged)
    return damaged


def _first_holder(census):
    return census["holders"][0]


CASES = [
    ("not a dict", lambda c: c.clear() or c.update(x=1), "format is not vramlens-census"),
    ("wrong shape type", lambda c: c["tensors"][0].update(shape="big"), "tensors[0].shape is not a list"),
    ("negative bytes", lambda c: c["storages"][0].update(bytes=-5), "storages[0].bytes is not a whole number"),
    ("huge number", lambda c: c["totals"].update(bytes=10**30), "totals.bytes is not a whole number"),
    ("a bool for a count", lambda c: c["totals"].update(tensors=True), "totals.tensors is not a whole number"),
    ("storage out of range", lambda c: c["tensors"][0].update(storage=10**6), "tensors[0].storage is not a whole number"),
    ("tensor reference out of range", lambda c: _first_holder(c)["tensors"].update(listed=[0, 10**9]),
     "holders[0].tensors.listed[1] is not a whole number"),
    ("owner out of range", lambda c: c["storages"][0].update(owner=500), "storages[0].owner is not an entry of"),
    ("unknown role", lambda c: c["storages"][0].update(role="mystery"), "storages[0].role is not one of"),
    ("unknown moment", lambda c: c.update(moment="later"), "moment is not one of"),
    ("missing table", lambda c: c.pop("holders"), "it has no holders"),
    ("a text where an object goes", lambda c: c.update(modules=["model"]), "modules[0] is not an object"),
    ("an endless string", lambda c: c["tensors"][0].update(dtype="f" * 100_000), "tensors[0].dtype is not a text"),
    ("a nan", lambda c: c.update(epoch=float("nan")), "epoch is not a number"),
]


def census_refusal(folder) -> str:
    """A census that cannot be used costs only itself: the snapshot loads, and one note says why."""
    capture = load_capture(folder)
    assert capture.census is None
    (note,) = [note for note in capture.notes if "analysed without it" in note]
    return note


@pytest.mark.parametrize("label, change, message", CASES, ids=[case[0] for case in CASES])
def test_a_broken_census_is_one_clear_sentence(tmp_path, real_census, label, change, message):
    folder = write_capture_with(tmp_path / "cap", broken(real_census, change))
    sentence = census_refusal(folder)
    assert sentence.startswith("census.json is not a valid census: ") and message in sentence
    assert sentence.endswith(".") and "\n" not in sentence and len(sentence) < 400


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"format": "vramlens-census", "version": ' + "9" * 5000 + "}", "damaged and cannot be read"),
    ("{ not json", "damaged and cannot be read"),
    ("[1, 2, 3]", "it is not a JSON object"),
    ("\xff\xfe", "damaged and cannot be read"),
])
def test_unreadable_census_files_are_one_clear_sentence(tmp_path, real_census, text, message):
    folder = write_capture_with(tmp_path / "cap", real_census)
    (folder / "census.json").write_bytes(text.encode("latin-1"))
    assert message in census_refusal(folder)


def test_an_oversized_census_is_refused_before_it_is_read(tmp_path, real_census, monkeypatch):
    folder = write_capture_with(tmp_path / "cap", real_census)
    monkeypatch.setattr(census_format, "MAX_FILE_BYTES", 1000)
    assert "more than a census can be" in census_refusal(folder)


@pytest.mark.parametrize("name, message", [
    ("../../etc/passwd", "not a file name in the capture folder"),
    ("missing.json", "no such file beside it"),
    (17, "not a file name"),
])
def test_capture_json_must_name_a_census_file_beside_it(tmp_path, real_census, name, message):
    folder = write_capture_with(tmp_path / "cap", real_census)
    meta = json.loads((folder / "capture.json").read_text())
    meta["census"] = name
    (folder / "capture.json").write_text(json.dumps(meta))
    assert message in census_refusal(folder)


def test_a_version_1_folder_copied_with_a_stray_census_file_ignores_it(tmp_path):
    shutil.copytree(os.path.join(FIXTURES, "no_problem"), tmp_path / "c")
    (tmp_path / "c" / "census.json").write_text("{ broken")
    assert load_capture(tmp_path / "c").census is None  # version 1 names no census
