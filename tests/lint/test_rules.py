"""Every check: flagged where it should be, silent on look-alikes, and its fix is exact, idempotent and parses."""

from __future__ import annotations

import ast

import pytest

from functools import partial

from cases import NEGATIVE_CASES, POSITIVE_CASES
from vramlens.lint import CHECKS, apply_fix
from vramlens.lint import fix_source as _fix_source
from vramlens.lint import lint_source as _lint_source

# Each check is tested as a mechanism, so preview checks (off by default) run here too.
lint_source = partial(_lint_source, preview=True)
fix_source = partial(_fix_source, preview=True)

FIXABLE = [case for case in POSITIVE_CASES if case.fixed is not None]


@pytest.mark.parametrize("case", POSITIVE_CASES, ids=[c.name for c in POSITIVE_CASES])
def test_check_reports_the_offending_line(case):
    found = {(f.line, f.code) for f in lint_source(case.source, "case.py")}
    assert (case.line, case.code) in found


@pytest.mark.parametrize("case", POSITIVE_CASES, ids=[c.name for c in POSITIVE_CASES])
def test_finding_carries_its_catalog_entry(case):
    finding = next(f for f in lint_source(case.source) if f.code == case.code)
    entry = next(c for c in CHECKS if c.code == case.code)
    assert (finding.rule, finding.severity) == (entry.rule, entry.severity)
    assert finding.message.endswith(".") and len(finding.message) > 40


@pytest.mark.parametrize("name,code,source", NEGATIVE_CASES, ids=[n[0] for n in NEGATIVE_CASES])
def test_look_alike_is_not_flagged(name, code, source):
    rule = next(c.rule for c in CHECKS if c.code == code)
    assert [f for f in lint_source(source) if f.rule == rule] == []  # no code of the rule (VL201 or VL202)


@pytest.mark.parametrize("case", FIXABLE, ids=[c.name for c in FIXABLE])
def test_fix_produces_exact_text(case):
    assert fix_source(case.source).text == case.fixed


@pytest.mark.parametrize("case", FIXABLE, ids=[c.name for c in FIXABLE])
def test_fix_is_idempotent_and_removes_the_finding(case):
    once = fix_source(case.source).text
    twice = fix_source(once)
    assert twice.text == once and twice.applied == 0
    assert case.code not in {f.code for f in lint_source(once)}


@pytest.mark.parametrize("case", FIXABLE, ids=[c.name for c in FIXABLE])
def test_every_offered_fix_parses(case):
    for finding in lint_source(case.source):
        for fix in finding.fixes:
            fixed = apply_fix(case.source, fix)
            assert fixed is not None
            ast.parse(fixed)


def test_item_is_offered_for_scalar_losses_with_a_sync_note():
    case = next(c for c in POSITIVE_CASES if c.name == "accumulate_loss")
    finding = next(f for f in lint_source(case.source) if f.code == "VL101")
    titles = [fix.title for fix in finding.fixes]
    assert ".detach()" in titles[0] and ".item()" in titles[1] and "GPU" in titles[1]
    assert "total += loss.item()" in apply_fix(case.source, finding.fixes[1])


def test_clone_cpu_to_do_not_cut_the_graph_but_detach_item_data_do():
    template = "import torch.nn as nn\nmodel = nn.Linear(2, 2)\nkeep = []\ndef step(x):\n    keep.append(model(x){})\n"
    for suffix in (".clone()", ".cpu()", ".to('cpu')", ".cuda()"):
        assert [f.code for f in lint_source(template.format(suffix))] == ["VL102"], suffix
    for suffix in (".detach()", ".item()", ".data", ".tolist()", ".detach().numpy()"):
        assert lint_source(template.format(suffix)) == [], suffix


def test_no_grad_fix_adds_import_when_torch_is_not_imported():
    source = '"""Doc."""\nfrom __future__ import annotations\n\ndef predict(model, x):\n    model.eval()\n    return model(x)\n'
    fixed = fix_source(source).text
    assert fixed == '"""Doc."""\nfrom __future__ import annotations\nimport torch\n\n@torch.no_grad()\ndef predict(model, x):\n    model.eval()\n    return model(x)\n'


def test_no_grad_fix_uses_the_alias_in_use_and_keeps_indentation():
    source = "import torch as th\n\nclass Runner:\n    @property\n    def x(self):\n        return 1\n\n    @staticmethod\n    def evaluate(model, x):\n        model.eval()\n        return model(x)\n"
    fixed = fix_source(source).text
    assert "    @th.no_grad()\n    @staticmethod\n    def evaluate" in fixed
    ast.parse(fixed)


def test_no_grad_is_not_offered_when_backward_is_reachable():
    source = "import torch\n\ndef evaluate(model, x):\n    return model(x)\n\ndef train(model, x):\n    evaluate(model, x).sum().backward()\n"
    assert [f for f in lint_source(source) if f.rule == "missing-no-grad"] == []


def test_no_grad_is_not_offered_when_a_training_loop_two_calls_up_backpropagates():
    source = (
        "import torch\nimport torch.nn as nn\n\n"
        "def predict(model: nn.Module, x):\n    return model(x)\n\n"
        "def loss_of(model, x):\n    return predict(model, x).mean()\n\n"
        "def train(model, loader, opt):\n    for x in loader:\n        loss_of(model, x).backward()\n        opt.step()\n"
    )
    assert [f for f in lint_source(source) if f.rule == "missing-no-grad"] == []
    alone = source.split("def loss_of")[0]
    findings = [f for f in lint_source(alone) if f.rule == "missing-no-grad"]
    assert findings and findings[0].fixes, "without a caller that trains, the decorator is offered"


def test_a_loop_whose_results_reach_a_backward_is_not_inference_and_others_are_wrapped():
    source = (
        "import torch\nimport torch.nn as nn\n\n"
        "def fit(model: nn.Module, train_loader, val_loader, opt):\n"
        "    for x in train_loader:\n        model(x).mean().backward()\n        opt.step()\n"
        "    scores = []\n"
        "    for x in val_loader:\n        out = model(x)\n        scores.append(out.mean().item())\n"
        "    for x in val_loader:\n        kept = model(x)\n"
        "    kept.mean().backward()\n"
    )
    found = {f.line: f for f in lint_source(source) if f.rule == "missing-no-grad"}
    assert found[10].code == "VL202"  # a loop over validation data calling a module: proven
    assert found[10].fixes and "Wrap" in found[10].fixes[0].title  # scores only keep .item()
    assert 13 not in found  # what this loop computes is backpropagated after it: recording is wanted


def test_columns_count_characters_not_bytes():
    source = "import torch.nn as nn\nmodel = nn.Linear(2, 2)\nkeep = []\ndef step(x):\n    é = 1; keep.append(model(x))\n"
    finding = lint_source(source)[0]
    assert finding.column == source.splitlines()[4].index("keep")
    fixed = fix_source(source).text
    assert "keep.append(model(x).detach())" in fixed


def test_private_validation_helper_is_still_checked():
    source = "import torch\n\nclass Trainer:\n    def _validate(self, loader):\n        self.model.eval()\n        for x in loader:\n            self.model(x)\n"
    assert [f.code for f in lint_source(source)] == ["VL202"]  # it switches to eval and runs the module


def test_move_to_another_tensor_is_flagged_without_a_fix():
    source = "import torch\n\ndef train(loader, logits):\n    for x in loader:\n        w = torch.zeros(4).to(logits)\n"
    findings = lint_source(source)
    assert [f.code for f in findings] == ["VL501"] and findings[0].fixes == ()


@pytest.mark.parametrize("created, fixed", [
    ("torch.zeros(4, dtype=torch.float16)", "torch.zeros(4, dtype=torch.float16, device=device)"),
    ("torch.arange(0, 8, step=2)", "torch.arange(0, 8, step=2, device=device)"),
    ("torch.randn(4)", None),  # the device's generator: a seeded run would draw other numbers
    ("torch.randint(0, 10, (4,))", None),
    ("torch.zeros(4, requires_grad=True)", None),  # a leaf on the device where the copy was not one
    ("torch.empty(4, pin_memory=True)", None),  # pinning a device tensor raises
    ("torch.zeros(4, **options)", None),
])
def test_device_at_creation_is_offered_only_where_it_makes_the_same_tensor(created, fixed):
    source = f"import torch\n\ndef train(loader, device, options):\n    for x in loader:\n        w = {created}.to(device)\n"
    findings = lint_source(source)
    assert [f.code for f in findings] == ["VL501"]
    if fixed is None:
        assert findings[0].fixes == ()
    else:
        assert f"        w = {fixed}\n" in fix_source(source).text


_DUMMY_INPUT_WRAPPER = (
    "import torch\n\nclass DynamicShapeWrapper(torch.nn.Module):\n"
    "    def forward(self, values):\n"
    "        size = values[0].item()\n"
    "        values = torch.ones(size).to(values.device)\n"
    "        return values\n"
)


@pytest.mark.parametrize("path", ["pkg/test_utils/infer_utils.py", "pkg/tests/helpers.py", "pkg/models/test_export.py",
                                  "conftest.py", "C:\\repo\\testing\\wrappers.py"])
def test_a_host_tensor_in_test_support_code_is_neither_flagged_nor_rewritten(path):
    assert [f for f in lint_source(_DUMMY_INPUT_WRAPPER, path) if f.code == "VL501"] == []
    assert fix_source(_DUMMY_INPUT_WRAPPER, path).text == _DUMMY_INPUT_WRAPPER


@pytest.mark.parametrize("path", ["pkg/models/infer_utils.py", "/home/me/tests/project/pkg/wrappers.py", "contest.py"])
def test_the_same_host_tensor_in_library_code_is_flagged_and_created_on_the_device(path):
    assert [f.code for f in lint_source(_DUMMY_INPUT_WRAPPER, path)] == ["VL501"]
    assert "values = torch.ones(size, device=values.device)\n" in fix_source(_DUMMY_INPUT_WRAPPER, path).text


def test_two_decorator_fixes_add_one_import_above_both():
    source = "def predict(model: Module, x):\n    return model(x)\n\n\ndef evaluate(model: Module, x):\n    return model(x)\n"
    fixed = fix_source(source).text
    assert fixed == (
        "import torch\n@torch.no_grad()\ndef predict(model: Module, x):\n    return model(x)\n\n\n"
        "@torch.no_grad()\ndef evaluate(model: Module, x):\n    return model(x)\n"
    )


def test_insertions_at_one_position_keep_their_order():
    from vramlens.lint import Edit, apply_edits

    assert apply_edits("x\n", [Edit(1, 0, 1, 0, "a\n"), Edit(1, 0, 1, 0, "b\n")]) == "a\nb\nx\n"
