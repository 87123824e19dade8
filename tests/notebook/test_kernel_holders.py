"""What the kernel itself keeps alive, walked in a real IPython shell with real (CPU) torch tensors.

The agent's filter accepts CUDA tensors only; here a filter that accepts CPU tensors runs the same
walk, so the autograd graph, the traceback's frames and the sharing with user variables are real.
"""

import pytest

torch = pytest.importorskip("torch")
from IPython.testing.globalipapp import start_ipython  # noqa: E402

from vramlens.agent.kernel_holders import FREE_TRACEBACK, kernel_holders  # noqa: E402

CPU_TENSOR = lambda obj: isinstance(obj, torch.Tensor)  # noqa: E731


@pytest.fixture(scope="module")
def shell():
    return start_ipython()


@pytest.fixture
def fresh(shell):
    shell.run_cell("%reset -f", store_history=True)
    shell.run_cell("import torch, sys\nsys.last_type = sys.last_value = sys.last_traceback = None", store_history=True)
    return shell


def holders(shell, **kwargs):
    return {h["root"]: h for h in kernel_holders(shell, torch, is_tensor=CPU_TENSOR, **kwargs)["holders"]}


def cell(shell, code):
    result = shell.run_cell(code, store_history=True)
    return result.execution_count


def test_an_output_with_its_graph_keeps_the_saved_tensors(fresh):
    cell(fresh, "w = torch.ones(1000, requires_grad=True)")
    number = cell(fresh, "(w * 3).exp().sum()")  # shown, so kept in Out[n]; exp saved its result for backward
    held = holders(fresh)[f"Out[{number}]"]
    assert held["free"] == f"%xdel _{number}"
    # exp's saved result (4000 bytes); the leaf `w` is not the graph's to free. After other tests torch may
    # also have wrapped the scalar 3 as a saved 0-d tensor (8 bytes), so the graph holds 4000 to 4008.
    assert 4000 <= held["graph_bytes"] <= 4008
    assert held["exclusive_bytes"] == held["bytes"] == 4 + held["graph_bytes"]
    assert "with grad_fn" in held["what"]


def test_an_output_that_is_also_a_variable_frees_nothing(fresh):
    cell(fresh, "x = torch.zeros(256)")
    number = cell(fresh, "x")
    held = holders(fresh)[f"Out[{number}]"]
    assert (held["bytes"], held["exclusive_bytes"], held["shared_with"]) == (1024, 0, ["x"])


def test_the_kept_traceback_holds_the_locals_of_the_failing_functions(fresh):
    cell(fresh, "def inner():\n    big = torch.zeros(10_000)\n    raise RuntimeError('no')\ndef outer():\n    small = torch.zeros(10)\n    inner()")
    result = fresh.run_cell("outer()", store_history=True)
    assert result.error_in_exec is not None
    code_names = set(fresh.compile._filename_map)
    held = holders(fresh, cell_names=code_names)["sys.last_traceback"]
    assert held["free"] == FREE_TRACEBACK
    assert held["exclusive_bytes"] == 40_000 + 40
    assert [(frame["name"], frame["bytes"]) for frame in held["frames"]] == [("inner", 40_000), ("outer", 40)]
    fresh.run_cell(FREE_TRACEBACK, store_history=True)
    assert "sys.last_traceback" not in holders(fresh, cell_names=code_names)


def test_a_walk_cut_short_says_it_does_not_know(fresh):
    cell(fresh, "many = [torch.zeros(1) for _ in range(20_000)]")
    number = cell(fresh, "many")
    report = kernel_holders(fresh, torch, is_tensor=CPU_TENSOR, budget_s=0.0)
    assert report["complete"] is False and "cut short" in report["note"]
    assert all(h["exclusive_bytes"] is None for h in report["holders"])
    assert f"Out[{number}]" in {h["root"] for h in report["holders"]}


def test_saved_tensors_are_read_without_unpacking_them(fresh):
    # Reading `_saved_*` unpacks: it would run a saved-tensor hook's unpack (a checkpoint's recomputation,
    # an offload's copy back) inside the user's kernel. The walk must leave the counter at 0 and still
    # charge what the pack hook kept, a tensor, to the graph.
    from vramlens.agent.census.autograd_graphs import _SavedReader

    if not _SavedReader(torch).usable:
        pytest.skip("this torch cannot read a SavedTensor without unpacking it")
    cell(fresh, "unpacked = []\n"
                "hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: unpacked.append(1) or t)\n"
                "w = torch.ones(1000, requires_grad=True)")
    cell(fresh, "with hooks:\n    shown = (w * 3).exp().sum()")
    number = cell(fresh, "shown.exp()")  # Out[n]: a second node above the hooked graph
    held = holders(fresh)[f"Out[{number}]"]
    assert fresh.user_ns["unpacked"] == []
    assert held["graph_bytes"] >= 4000
