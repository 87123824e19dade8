"""The storing line's edit is offered only where the file proves it cannot break the program
(lint/engine/store_fixes.py): the stored value a tensor, no use of the holder that needs its graph (.detach()),
and no use that needs tensors, or tensors on the GPU (.detach().cpu(), .item())."""

from __future__ import annotations

import ast
import textwrap

from vramlens.lint import apply_fix, store_fixes

ALL = ("detach", "detach_cpu", "item")

TRAIN = """\
import torch
from torch import nn

model = nn.Linear(8, 2).cuda()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for x, y in loader:
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    optimizer.step()
    losses.append(loss)
{after}
"""
STORE = 13  # `    losses.append(loss)`


def offered(after: str = "", text: str | None = None, line: int = STORE, target: str = "losses",
            methods=ALL) -> list[str]:
    source = text if text is not None else TRAIN.format(after=textwrap.dedent(after))
    found = store_fixes(source, line, target, methods)
    for _method, fix in found:
        assert apply_fix(source, fix) is not None  # every edit leaves the file parsing
    return [method for method, _fix in found]


def fixed(after: str = "", method: str = "item") -> str:
    source = TRAIN.format(after=after)
    fix = dict(store_fixes(source, STORE, "losses", (method,)))[method]
    return apply_fix(source, fix).split("\n")[STORE - 1]


def test_a_loss_only_counted_and_printed_may_be_detached_moved_or_made_a_number():
    after = 'print(f"mean loss {sum(losses) / len(losses):.3f} over {len(losses)} steps")\nlosses.clear()'
    assert offered(after) == ["detach", "detach_cpu", "item"]
    assert offered(after, methods=("item", "detach")) == ["item", "detach"]  # in the order asked
    assert fixed(after, "detach") == "    losses.append(loss.detach())"
    assert fixed(after, "detach_cpu") == "    losses.append(loss.detach().cpu())"
    assert fixed(after, "item") == "    losses.append(loss.item())"


def test_a_list_later_backpropagated_keeps_its_graphs():
    for after in ("torch.stack(losses).mean().backward()", "sum(losses).backward()",
                  "total = sum(losses)\ntotal.backward()", "torch.autograd.grad(losses[-1], model.weight)"):
        assert offered(after) == [], after


def test_a_list_read_as_tensors_may_only_be_detached():
    # torch.cat needs tensors (no .item()), and what it makes meets the GPU's (no .cpu())
    assert offered("mean = torch.stack(losses).mean()") == ["detach"]
    assert offered("for value in losses:\n    print(value.mean())") == ["detach"]
    assert offered("def report(values):\n    return values\nreport(losses)") == []  # a function of the file may need them
    assert offered("history = losses") == ["detach"]  # an alias: followed for the graph, not for the type


def test_a_value_not_proven_a_tensor_gets_no_edit():
    text = TRAIN.format(after="")
    for value in ("loss if step else 0.0", "(loss, out)", "helper(x)", "loss_dict"):
        changed = text.replace("    losses.append(loss)", f"    losses.append({value})")
        assert offered(text=changed) == [], value
    unknown = text.replace("    loss = criterion(out, y)", "    loss = compute(out, y)")
    assert offered(text=unknown) == []


def test_a_hook_argument_is_a_tensor_only_when_annotated():
    hook = textwrap.dedent("""\
        import torch

        feats = []


        def keep(module, inputs, output{annotation}):
            feats.append(output)
        print(len(feats))
        """)
    assert offered(text=hook.format(annotation=""), line=7, target="feats") == []
    assert offered(text=hook.format(annotation=": torch.Tensor"), line=7, target="feats") == ["detach", "detach_cpu"]


def test_an_attribute_holder_is_checked_in_every_method_and_outside_the_class():
    module = textwrap.dedent("""\
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)
                self.kept = []

            def forward(self, x):
                h = self.proj(x)
                self.kept.append(h)
                return h
        {after}
        """)
    assert offered(text=module.format(after="print(len(net.kept))"), line=13, target="self.kept") == ["detach", "detach_cpu"]
    backward = "torch.cat(net.kept).sum().backward()"
    assert offered(text=module.format(after=backward), line=13, target="self.kept") == []


def test_running_sums_and_concatenations():
    running = textwrap.dedent("""\
        import torch
        from torch import nn

        criterion = nn.MSELoss()
        total = 0.0
        for x, y in loader:
            loss = criterion(net(x), y)
            total += loss
        {after}
        """)
    assert offered(text=running.format(after="print(total / 10)"), line=8, target="total") == ["detach", "item"]
    assert offered(text=running.format(after="score = total / 10\nscore.item()"), line=8, target="total") == ["detach"]
    grown = textwrap.dedent("""\
        import torch

        bank = torch.empty(0, 8)
        for x in loader:
            f = torch.randn(4, 8)
            bank = torch.cat([bank, f])
        print(len(bank))
        """)
    assert offered(text=grown, line=6, target="bank") == ["detach"]  # never moved off beside the bank


def test_a_dict_entry_and_a_list_display():
    text = TRAIN.format(after="print(len(kept))")
    as_item = text.replace("    losses.append(loss)", "    kept[step] = loss")
    assert offered(text=as_item, target="kept") == ["detach", "detach_cpu", "item"]
    as_list = text.replace("    losses.append(loss)", "    kept += [loss]")
    assert offered(text=as_list, target="kept") == ["detach", "detach_cpu", "item"]


def test_no_edit_when_the_line_is_not_one_store_into_the_holder():
    text = TRAIN.format(after="")
    assert offered(text=text, target="outputs") == []  # the line stores into another container
    assert offered(text=text, line=STORE - 1) == []  # another line
    two = text.replace("    losses.append(loss)", "    losses.append(loss); other.append(loss)")
    assert offered(text=two) == []
    assert offered(text="losses.append(loss\n") == []  # does not parse
    ast.parse(text)
