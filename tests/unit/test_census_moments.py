"""When the census is taken: the OOM allowance and the peak watcher's growth and time rules."""

import pytest

from vramlens.agent import census_moments
from vramlens.agent.census_moments import CensusMoments, PeakWatch

MIB = 2**20


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(census_moments.time, "monotonic", clock)
    return clock


def fake_take(duration):
    """A take(moment) recording its censuses, reporting the allocated figure the test sets."""
    taken, allocated = [], [0]

    def take(moment):
        census = {"moment": moment, "duration_s": duration, "device": {"allocated": allocated[0]}}
        taken.append(census)
        return census

    return take, taken, allocated


def test_a_peak_census_needs_growth_and_its_share_of_time(clock):
    take, taken, allocated = fake_take(duration=0.2)
    watch = PeakWatch(take)  # recording began at 1000 s
    allocated[0] = 1000 * MIB
    clock.now += 4.9
    watch.observe(1000 * MIB)
    assert taken == []  # the first is expected to take 0.05 s: not before 5 s, 1 % of the run
    clock.now += 0.2
    allocated[0] = 63 * MIB
    watch.observe(63 * MIB)
    assert taken == []  # under the floor
    allocated[0] = 1000 * MIB
    watch.observe(1000 * MIB)
    assert len(taken) == 1 and watch.census is taken[0] and taken[0]["peaks_taken"] == 1
    # It took 0.2 s; the next is expected to take as long: 0.4 s of census fit in 40 s of run.
    clock.now = 1030.0
    allocated[0] = 1300 * MIB
    watch.observe(1300 * MIB)
    assert len(taken) == 1
    clock.now = 1040.0
    allocated[0] = 1050 * MIB
    watch.observe(1050 * MIB)  # time enough, but grown by less than 10 %
    assert len(taken) == 1
    allocated[0] = 1200 * MIB
    watch.observe(1200 * MIB)
    assert len(taken) == 2 and watch.census["peaks_taken"] == 2


def test_the_censuses_at_ooms_stop_at_their_allowance_and_keep_one_for_the_final_oom():
    calls = []

    class Counting(CensusMoments):
        def take(self, moment, extra_roots=None):
            calls.append((moment, sorted(extra_roots or ())))
            return {"moment": moment, "duration_s": 0.6}

    moments = Counting(torch=None, source_root=None, budget_s=0.1)  # 10 budgets = 1 s, the last one kept back
    results = [moments.at_oom() for _ in range(4)]
    assert [moment for moment, _ in calls] == ["oom", "oom"] and results[2] is None and results[3] is None
    assert moments.notes() == ["No census was taken at 2 OOMs the run went on from: the censuses at earlier OOMs had "
                               "taken 1.2 s, the most the run allows them."]
    # Past the allowance, the OOM that ends the run still gets its census, with the error as a named root.
    final = moments.at_final_oom(MemoryError("CUDA out of memory"))
    assert final["after_unwind"] is True and calls[-1] == ("oom", ["<the script's exception>"])
    assert moments.notes()[0].startswith("No census was taken at 1 OOMs")


def test_the_allowance_at_ooms_keeps_its_last_budget_back():
    class Counting(CensusMoments):
        def take(self, moment, extra_roots=None):
            return {"moment": moment, "duration_s": 0.05}

    moments = Counting(torch=None, source_root=None, budget_s=0.1)
    taken = sum(moments.at_oom() is not None for _ in range(100))
    assert taken == 18  # 0.9 s of 0.05 s censuses: nine budgets, not ten


def test_extra_roots_are_asked_for_at_each_census(monkeypatch):
    seen = []
    monkeypatch.setattr(census_moments, "take_census",
                        lambda torch, moment, **options: seen.append(options["extra_roots"]) or {"moment": moment})
    generation = iter(range(10))
    moments = CensusMoments(torch=None, source_root=None, extra_roots=lambda: {"Out": next(generation)})
    moments.take("on_demand")
    moments.take("oom")
    assert seen == [{"Out": 0}, {"Out": 1}]


def test_a_census_that_never_looked_is_no_census(monkeypatch):
    monkeypatch.setattr(census_moments, "take_census", lambda torch, moment, **options: {
        "moment": moment, "complete": False, "skipped": ["Another census was still running, so this one was not taken."]})
    moments = CensusMoments(torch=None, source_root=None)
    assert moments.take("on_demand") is None
    assert moments.notes() == ["A census was asked for but not taken: Another census was still running, so this one "
                               "was not taken."]
