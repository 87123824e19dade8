"""Well-known training, evaluation and generation code: clean where it should be, flagged where it is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from vramlens.lint import lint_file

SAMPLES = Path(__file__).resolve().parent / "samples"
CLEAN = ["gan_training_loop.py", "accelerate_fit.py", "truncated_bptt_lstm.py", "lightning_module.py"]


@pytest.mark.parametrize("name", CLEAN)
def test_idiomatic_code_is_clean(name):
    assert [(f.line, f.code) for f in lint_file(SAMPLES / name, preview=True)] == []


def test_module_generate_calling_self_records_a_graph():
    path = SAMPLES / "decoder_sample_method.py"
    forward_call = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "= self(tokens)" in text)
    findings = lint_file(path, preview=True)  # missing-no-grad is a preview check
    assert [(f.line, f.code) for f in findings] == [(forward_call, "VL201")]
    assert findings[0].fixes[0].edits[0].new_text == "    @torch.no_grad()\n"


def test_common_leaks_are_flagged_and_bounded_stores_are_not():
    found = [(f.line, f.code) for f in lint_file(SAMPLES / "common_leaks.py", preview=True)]
    # history["loss"].append: grows; metrics["last"] = loss (line 15): one slot, overwritten, not flagged
    assert found == [(14, "VL102"), (26, "VL102"), (33, "VL102"), (33, "VL202")]
