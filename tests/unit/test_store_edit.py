"""Which edit the storing line's quick fix offers, chosen by what the census saw its holder keep
(analysis/recommendations/store_edit.py): its graphs (.detach()) or its tensors (.detach().cpu(), .item())."""

from __future__ import annotations

from pathlib import Path

import pytest

from vramlens.analysis import analyze_path
from vramlens.analysis.model import Holder, StoringLine
from vramlens.analysis.recommendations.store_edit import store_edit

MIB, GIB = 1 << 20, 1 << 30
PLACE = ("/srv/train.py", 41)
REPO = Path(__file__).resolve().parents[2]


def storing(kind: str = "append", found_by: str = "holder", holder: str = "__main__.losses") -> StoringLine:
    return StoringLine(holder=holder, target="losses", kind=kind, path=PLACE[0], line=PLACE[1], bytes=3 * GIB,
                       growth_bytes=2 * GIB, found_by=found_by)


def holder(own: int, graphs: int, with_graph: int | None = 10, numel: int | None = 4096, root: str = "__main__.losses",
           stored_at=PLACE) -> Holder:
    return Holder(root=root, kind="list", bytes=own, tensors=10, with_graph=with_graph, graph_bytes=graphs,
                  stored_at=stored_at, item_numel=numel)


def methods(*args, **kwargs) -> list[str] | None:
    edit = store_edit("retained_references", [storing(*args, **kwargs)], [HOLDER])
    return None if edit is None else [choice.method for choice in edit.choices]


def chosen(kept: Holder, kind: str = "append") -> list[str] | None:
    edit = store_edit("retained_references", [storing(kind)], [kept])
    return None if edit is None else [choice.method for choice in edit.choices]


HOLDER = holder(own=64 * MIB, graphs=3 * GIB)


def test_graphs_that_keep_more_than_the_tensors_are_dropped_first():
    edit = store_edit("retained_references", [storing()], [HOLDER])
    assert (edit.path, edit.line, edit.target) == (*PLACE, "losses")
    assert [choice.method for choice in edit.choices] == ["detach", "detach_cpu"]
    assert edit.choices[0].why == "keeps the values, frees the 3.00 GiB their autograd graphs hold in __main__.losses"
    assert edit.choices[1].why == ("frees the 3.06 GiB __main__.losses holds on the GPU")


def test_tensors_that_keep_the_memory_themselves_go_to_the_cpu_first():
    assert chosen(holder(own=2 * GIB, graphs=0)) == ["detach_cpu"]  # the backward freed what the graphs saved
    assert chosen(holder(own=2 * GIB, graphs=0, with_graph=0)) == ["detach_cpu"]  # no graph at all
    assert chosen(holder(own=2 * GIB, graphs=300 * MIB)) == ["detach_cpu", "detach"]


def test_one_element_tensors_are_kept_as_numbers():
    assert chosen(holder(own=5 * MIB, graphs=3 * GIB, numel=1)) == ["detach", "item"]
    assert chosen(holder(own=2 * MIB, graphs=0, numel=1)) == ["item"]
    # a few bytes of losses: moving them to the CPU is not worth offering, .item() still frees their graphs
    assert chosen(holder(own=5120, graphs=3 * GIB, numel=1)) == ["detach", "item"]
    assert chosen(holder(own=5120, graphs=3 * GIB, numel=8)) == ["detach"]
    assert chosen(holder(own=5120, graphs=3 * GIB, numel=None)) == ["detach"]  # shapes unknown: not a number


def test_the_store_decides_which_edits_can_apply():
    assert chosen(HOLDER, kind="augmented") == ["detach"]  # a running sum: no CPU copy of a GPU accumulator
    assert chosen(holder(own=2 * GIB, graphs=0, numel=1), kind="augmented") == ["item"]
    assert chosen(holder(own=2 * GIB, graphs=300 * MIB), kind="concat") == ["detach"]
    assert chosen(holder(own=2 * GIB, graphs=0), kind="concat") is None  # the concatenation is the growth
    assert chosen(HOLDER, kind="setattr") is None and chosen(HOLDER, kind="built") is None


def test_no_edit_without_the_census_of_the_holder_or_for_another_cause():
    assert methods(found_by="growth") is None  # found by the growth's data flow: what it keeps is not known
    assert chosen(holder(own=2 * GIB, graphs=0, with_graph=None)) is None  # the census listed none of its tensors
    assert chosen(holder(own=2 * GIB, graphs=0, stored_at=("/srv/train.py", 40))) is None  # another line's holder
    assert chosen(holder(own=2 * GIB, graphs=0, root="model.val_outputs")) is None  # another holder
    assert chosen(holder(own=512 * 1024, graphs=256 * 1024)) is None  # too little to be worth an edit
    assert store_edit("working_set", [storing()], [HOLDER]) is None
    assert store_edit("retained_references", [], [HOLDER]) is None


def test_a_local_holder_is_named_as_the_code_writes_it():
    local = holder(own=2 * GIB, graphs=0, root="local losses in main (train.py:30)")
    edit = store_edit("retained_references", [storing(holder="local losses in main (train.py:30)")], [local])
    assert edit.choices[0].why == "frees the 2.00 GiB losses holds on the GPU"


@pytest.mark.skipif(not (REPO / "tests/fixtures/realworld/hf_decode_loop_grad/capture").exists(), reason="no capture")
def test_the_census_of_a_real_capture_gives_the_kept_tensors_shapes():
    # every decoding step's last-token logits (16 x 32000), kept with graphs that keep more than they do
    result = analyze_path(REPO / "tests/fixtures/realworld/hf_decode_loop_grad/capture",
                          source_root=str(REPO / "workloads" / "hf_generate"))
    kept = next(h for h in result.holders if h.root == "__main__.all_logits")
    assert kept.item_numel == 16 * 32000 and kept.graph_bytes > kept.bytes
    edit = store_edit(result.diagnosis.cause, result.storing, result.holders)
    assert (edit.line, edit.target, [c.method for c in edit.choices]) == (24, "all_logits", ["detach", "detach_cpu"])


ROUND4 = REPO / "tests/fixtures/realworld/round4/module_history_attr.tar.xz"


@pytest.mark.skipif(not ROUND4.exists(), reason="round 4's captures are not here")
def test_vramlens_analyze_shows_the_proven_edit_as_a_diff_under_the_line_to_change(tmp_path):
    import tarfile

    from vramlens.analysis.rendering.analysis_text import render_text
    from vramlens.cli.store_diff import store_diff

    with tarfile.open(ROUND4) as bundle:
        bundle.extractall(tmp_path, filter="data")
    result = analyze_path(tmp_path / "module_history_attr" / "capture", source_root=str(REPO / "workloads" / "retention"))
    text = render_text(result, "capture", edit=store_diff(result)).split("\n")
    at = text.index("  - self.history += [h]")
    assert text[at - 1].startswith("Line to change: module_history.py:29")
    assert text[at + 1] == ("  + self.history += [h.detach().cpu()]   (frees the 2.00 GiB "
                            "model.history holds on the GPU)")
    # the script as written stores a conditional (`... if args.fixed else ...`) in hf_decode_loop_grad: no edit
    other = analyze_path(REPO / "tests/fixtures/realworld/hf_decode_loop_grad/capture",
                         source_root=str(REPO / "workloads" / "hf_generate"))
    assert store_edit(other.diagnosis.cause, other.storing, other.holders) is not None and store_diff(other) is None
    assert "  > all_logits.append(logits.clone() if fixed else logits)" in render_text(other, "capture").split("\n")
