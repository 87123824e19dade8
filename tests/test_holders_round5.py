"""The holder that grew and the line that keeps it, on round 5's real captures (recorded on an H200;
tests/fixtures/realworld/round5, scripts in workloads/retention/). Round 5 was held out until these
mechanisms were built on three of its misses; benchmarks/storing_lines.py reports the whole round.

- a holder whose bytes its autograd graphs keep (a running sum of losses, a dict of lists of losses) is
  charged the survivors of the lines its graphs' saved tensors were made at (the model's forward), so the
  forward's own locals at the OOM are the step's working set, not the holder that grew;
- growth a backward pass made (no Python frame) that a completed run let go of follows the gradients
  (``p.grad``) into the store in the loop around ``backward()``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.workloads import unpack
from vramlens.analysis import analyze_path

REPO = Path(__file__).resolve().parents[1]
ROUND5 = REPO / "tests" / "fixtures" / "realworld" / "round5"
SOURCES = REPO / "workloads" / "retention"
GIB = 1 << 30


@pytest.fixture(scope="module")
def round5(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("round5")
    unpack.extract_compressed(ROUND5, folder)
    return folder


@pytest.fixture(scope="module")
def analysed(round5):
    cache: dict = {}

    def of(name: str):
        if name not in cache:
            cache[name] = analyze_path(round5 / name / "capture", source_root=str(SOURCES))
        return cache[name]

    return of


def short(place) -> str:
    return f"{str(place[0]).rsplit('/', 1)[-1]}:{place[1]}"


def top_holder(analysis):
    return next(h for h in analysis.holders if not h.working_set and h.kind != "cache")


@pytest.mark.parametrize("name, root, stored, forward_locals", [
    ("eval_running_total", "local total in evaluate", "running_total.py:26", ("x", "out")),
    ("val_loss_history_dict", "local history in main", "loss_history.py:57", ("src",)),
])
def test_a_holder_kept_through_its_graphs_outranks_the_forwards_locals(analysed, name, root, stored, forward_locals):
    analysis = analysed(name)
    top = top_holder(analysis)
    assert top.root.startswith(root) and short(top.stored_at) == stored
    # what it keeps is its graphs' saved activations, made at other lines than the one that stores into it
    assert top.graph_bytes >= 4 * GIB and top.survivor_bytes >= 4 * GIB
    assert sum(top.kept_lines.values()) == top.bytes + top.graph_bytes
    assert max(top.kept_lines, key=top.kept_lines.get) != top.appended_at
    for local in forward_locals:  # the forward in progress at the OOM: this step's own tensors
        holder = next(h for h in analysis.holders if h.root == local)
        assert holder.working_set and not holder.survivor_bytes


def test_a_list_that_grew_stays_the_top_holder_when_its_own_tensors_carry_the_growth(analysed):
    analysis = analysed("generate_scores_kept")
    top = top_holder(analysis)
    assert top.root.startswith("local all_scores in main") and short(top.stored_at) == "generate_scores.py:38"


def test_gradients_kept_by_a_completed_run_are_followed_from_its_backward_into_the_store(analysed):
    analysis = analysed("grad_log_completes")
    assert analysis.outcome == "completed" and analysis.census_moment == "end"
    assert not [h for h in analysis.holders if h.bytes >= 1 << 20]  # main() had returned: the census names nothing
    storing = analysis.storing[0]
    assert short((storing.path, storing.line)) == "grad_log_complete.py:40" and storing.target == "grad_log"
    assert short(storing.allocated_at) == "grad_log_complete.py:35"  # `loss.backward()` started the work
    assert storing.found_by == "growth" and storing.growth_bytes >= 4 * GIB
    frameless = analysis.lines[0]
    assert (frameless.path, frameless.line) == (None, None) and frameless.live_bytes >= storing.growth_bytes


@pytest.mark.parametrize("name, storing_line, forward_line", [
    ("eval_running_total", "running_total.py:26", "running_total.py:23"),
    ("val_loss_history_dict", "loss_history.py:57", "loss_history.py:24"),
])
def test_the_storing_line_of_a_graph_kept_holder_counts_its_bytes_once_and_points_at_the_forward(
        analysed, name, storing_line, forward_line):
    analysis = analysed(name)
    storing = analysis.storing[0]
    assert short((storing.path, storing.line)) == storing_line
    holder = top_holder(analysis)
    # the forward's growth is what the holder's graphs keep: not added to the same statement a second time
    assert storing.bytes == holder.bytes + holder.graph_bytes <= analysis.accounting.allocated
    assert short(storing.allocated_at) == forward_line and max(storing.kept_from, key=storing.kept_from.get) == storing.allocated_at

