"""OOMs a library catches below Python (cuDNN's workspace probes) cost nothing and are counted; the OOM
that reaches Python gets its snapshot and census where it is raised; a completed run whose OOMs were
all such probes is read as completed."""

import sys
import types

import pytest

from vramlens.agent import oom_fate
from vramlens.agent.recorder import Recorder
from vramlens.analysis.load.ending import caught_ooms_note, only_library_probes

needs_monitoring = pytest.mark.skipif(not hasattr(sys, "monitoring"), reason="sys.monitoring: Python 3.12+")


class OutOfMemoryError(RuntimeError):
    """Named as torch's is: the fate watcher knows an OOM by its type's name."""


def fake_torch():
    observers, snapshots = [], []

    def snapshot():
        snapshots.append(1)
        return {"taken": len(snapshots)}

    memory = types.SimpleNamespace(_record_memory_history=lambda **kwargs: None, _snapshot=snapshot)
    cuda = types.SimpleNamespace(memory=memory, memory_allocated=lambda device: 5, memory_reserved=lambda device: 6)
    torch = types.SimpleNamespace(cuda=cuda, _C=types.SimpleNamespace(_cuda_attach_out_of_memory_observer=observers.append))
    return torch, observers, snapshots


def _stack():
    frame = sys._getframe(1)
    while frame is not None:
        yield frame
        frame = frame.f_back


@pytest.fixture
def recorder():
    torch, observers, snapshots = fake_torch()
    censuses = []
    recorder = Recorder(torch, 0, "python", 100, on_oom_sample=lambda phase: None,
                        on_oom_census=lambda: censuses.append([f.f_code.co_name for f in _stack()]) or {"moment": "oom"})
    recorder.start()
    yield recorder, observers[0], snapshots, censuses
    recorder._fate.release()


def allocate_and_fail(observe):
    observe(0, 1 << 20, 1 << 30, 1 << 29)  # the allocator's observer, then the error reaches Python here
    raise OutOfMemoryError("CUDA out of memory")


@needs_monitoring
def test_probes_cost_nothing_and_the_raised_oom_gets_its_census_where_it_is_raised(recorder):
    recorder, observe, snapshots, censuses = recorder
    for _ in range(31):  # cuDNN tries workspaces: the library catches each failure itself
        observe(0, 1 << 30, 1 << 30, 1 << 29)
    assert snapshots == [] and censuses == []
    with pytest.raises(OutOfMemoryError):
        allocate_and_fail(observe)
    assert len(censuses) == 1 and "allocate_and_fail" in censuses[0]  # the failing frame is still on the stack
    assert recorder.oom.snapshot == {"taken": 1} and recorder.oom.census == {"moment": "oom"}
    assert recorder.oom.facts()["count"] == 32 and recorder.oom.facts()["caught_below_python"] == 31
    try:
        raise ValueError("not an OOM")
    except ValueError:
        pass
    assert len(censuses) == 1


def test_without_sys_monitoring_the_census_is_taken_in_the_observer(monkeypatch):
    monkeypatch.setattr(oom_fate.OomFate, "_claim_tool", lambda self: False)
    torch, observers, snapshots = fake_torch()
    censuses = []
    recorder = Recorder(torch, 0, "python", 100, on_oom_sample=lambda phase: None,
                        on_oom_census=lambda: censuses.append(1) or {"moment": "oom"})
    recorder.start()
    observers[0](0, 1, 2, 3)
    assert censuses == [1] and snapshots == [1]
    assert "caught_below_python" not in recorder.oom.facts()  # unknown, so not claimed


def meta(status, count, caught, exit_code=0):
    oom = {"count": count, **({"caught_below_python": caught} if caught is not None else {})}
    return {"status": status, "exit_code": exit_code, "oom": oom}


def test_a_completed_run_whose_ooms_were_all_library_probes_did_not_run_out():
    assert only_library_probes(meta("completed", 32, 32))
    assert "libraries caught before any Python code saw them" in caught_ooms_note(meta("completed", 32, 32), 32)
    assert not only_library_probes(meta("completed", 32, 31))  # the script caught one itself
    assert "the script caught 1 of them" in caught_ooms_note(meta("completed", 32, 31), 32)
    assert not only_library_probes(meta("oom", 33, 32, exit_code=1))
    assert "32 were caught inside libraries" in caught_ooms_note(meta("oom", 33, 32, exit_code=1), 33)


def test_an_older_capture_is_not_told_the_script_caught_its_error():
    # No caught_below_python (recorded before it was counted): who caught them is not known.
    note = caught_ooms_note(meta("completed", 45, None), 45)
    assert "by a library that retries with less memory" in note and "or by the script itself" in note
    assert not only_library_probes(meta("completed", 45, None))
