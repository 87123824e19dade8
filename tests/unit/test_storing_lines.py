"""The storing line's static half: which statements store into what (analysis/attribution/store_facts.py)
and how a holder or an allocation line is joined to them (analysis/attribution/storing.py). Tiny sources
written here, parsed for real; the join on real captures is tests/test_storing_realworld.py."""

from __future__ import annotations

import textwrap

from vramlens.analysis.attribution.store_facts import file_facts
from vramlens.analysis.attribution.storing import (
    SourceFacts, holder_name, store_for_holder, store_from_backward, store_from_line,
)
from vramlens.analysis.model import Holder

SOURCE = textwrap.dedent('''\
    import torch

    all_logits = []
    metrics = {}


    class Bank:
        def __init__(self):
            self.feats = torch.empty(0)

        def add(self, f):
            self.feats = torch.cat([self.feats, f.detach()])


    class Module:
        def validation_step(self, batch):
            logits = self(batch)
            self.val_outputs.append(logits)
            return logits


    def hook(module, inputs, output):
        feats.append(output)


    def main(model, batches):
        total = 0
        history = []
        for step, x in enumerate(batches):
            logits = model(x)
            preds = logits.argmax(-1)
            all_logits.append(preds)
            metrics[step] = logits
            loss = logits.sum()
            total += loss
            setattr(model, "last", logits)
            loss.backward(retain_graph=True)
        out = model(x)
        history.append(out)
        return total
''')


def test_every_kind_of_store_is_a_fact_with_its_function_and_loop():
    facts = file_facts(SOURCE)
    found = {(store.line, store.kind, store.target, store.function) for store in facts.stores}
    assert (12, "concat", "self.feats", "add") in found
    assert (18, "append", "self.val_outputs", "validation_step") in found
    assert (23, "append", "feats", "hook") in found
    assert (32, "append", "all_logits", "main") in found
    assert (33, "item", "metrics", "main") in found
    assert (35, "augmented", "total", "main") in found
    assert (36, "setattr", "model.last", "main") in found
    assert (37, "retain_graph", "loss", "main") in found
    in_loop = {store.line: store.loop for store in facts.stores}
    assert in_loop[32] == (29, 37) and in_loop[39] is None  # after the loop: nothing accumulates
    assert next(store for store in facts.stores if store.line == 32).reads == {"preds"}


def test_a_file_that_does_not_parse_gives_no_facts():
    assert file_facts("def broken(:\n") is None
    assert file_facts("x = [" * 100_000) is None  # too deep for the parser: no facts, no crash


class _Sources(SourceFacts):
    """The resolver's reading replaced by the text above (the real resolver is exercised on captures)."""

    def __init__(self, files: dict[str, str]):
        self.files = files
        self._facts = {}
        self.resolver = None

    def of(self, recorded: str):
        return file_facts(self.files[recorded]) if recorded in self.files else None


def _holder(root: str, kind: str = "list", at: int | None = 31, created: tuple | None = None) -> Holder:
    return Holder(root=root, kind=kind, bytes=1 << 30, tensors=8, appended_at=("/app/train.py", at) if at else None,
                  created_at=created)


def test_holder_roots_name_what_the_code_stores_into():
    assert holder_name(_holder("__main__.all_logits")).leaf == "all_logits"
    attribute = holder_name(_holder("model.val_outputs"))
    assert attribute.leaf == "val_outputs" and attribute.qualified
    local = holder_name(_holder("local history in main (train.py:39)", kind="frame", created=("/app/train.py", 39)))
    assert (local.leaf, local.function) == ("history", "main")
    assert holder_name(_holder("logits, labels", kind="locals")) is None  # a frame's locals: no one name
    assert holder_name(_holder("trainer.state._results['x']")).leaf == "_results"


def test_a_named_holder_is_joined_to_its_store_and_never_guessed_across_files():
    sources = _Sources({"/app/train.py": SOURCE})
    recorded, stores = store_for_holder(_holder("__main__.all_logits"), [], sources)
    assert recorded == "/app/train.py" and stores[0].line == 32
    assert store_for_holder(_holder("model.val_outputs", at=17), [], sources)[1][0].line == 18
    assert store_for_holder(_holder("__main__.nothing_stores_here"), [], sources) is None
    # the same name stored into in two files: no storing line rather than a guess
    both = _Sources({"/app/train.py": SOURCE, "/app/other.py": "def f(x):\n    all_logits.append(x)\n"})
    holder = _holder("__main__.all_logits", at=None)
    holder.created_at = None
    from vramlens.analysis.model import LineStat
    lines = [LineStat(path, 1, "f", 1, 0.5, 1, 1, False) for path in ("/app/train.py", "/app/other.py")]
    assert store_for_holder(holder, lines, both) is None


def test_growth_without_a_holder_follows_the_allocation_line_into_its_store():
    sources = _Sources({"/app/train.py": SOURCE})
    # logits = model(x) feeds preds (one assignment further) into all_logits, metrics[step], total and model.last:
    # four different containers from one line is not one storing line
    assert store_from_line("/app/train.py", 30, sources) is None
    only = _Sources({"/app/t.py": "def run(model, xs):\n    losses = []\n    for x in xs:\n"
                                  "        loss = model(x)\n        losses.append(loss)\n    return losses\n"})
    store = store_from_line("/app/t.py", 4, only)
    assert (store.line, store.target, store.kind) == (5, "losses", "append")
    # outside a loop nothing accumulates step after step
    assert store_from_line("/app/train.py", 38, sources) is None
    # a line that grows its own container is its own storing line
    assert store_from_line("/app/train.py", 12, sources).kind == "concat"


def test_a_store_that_moves_its_value_off_the_gpu_comes_after_the_one_that_keeps_it():
    text = textwrap.dedent('''\
        def main(model, batches, fixed):
            kept = []

            def hook(module, inputs, output):
                kept.append(output)

            for x in batches:
                logits = model(x)
                if fixed:
                    kept.append(logits.argmax(-1).cpu())
                else:
                    kept.append(logits)
                kept.append(logits.item() if fixed else logits)
    ''')
    facts = file_facts(text)
    off = {store.line: store.moves_off for store in facts.stores}
    assert off == {5: False, 10: True, 12: False, 13: False}  # a conditional may keep it either way
    holder = _holder("local kept in main (t.py:2)", kind="frame", at=8, created=("/app/t.py", 2))
    recorded, stores = store_for_holder(holder, [], _Sources({"/app/t.py": text}))
    assert [store.line for store in stores][:1] == [12] and stores[-1].line == 10
    assert 5 in [store.line for store in stores]  # the hook defined inside main stores into main's list


def test_rebinding_a_name_to_itself_plus_more_is_a_store():
    facts = file_facts("def f(xs, model):\n    kept = []\n    for x in xs:\n        kept = kept + [model(x)]\n"
                       "        model.seen = model.seen + [x]\n        other = kept + [x]\n")
    found = {(store.line, store.kind, store.target) for store in facts.stores}
    assert (4, "extend", "kept") in found and (5, "extend", "model.seen") in found  # a list grown, not a sum
    assert not any(store.line == 6 for store in facts.stores)  # a new name made of it stores into nothing
    grown = file_facts("def f(self, h, loss):\n    self.history += [h]\n    self.total += loss\n")
    assert [(store.kind, store.target) for store in grown.stores] == [("extend", "self.history"), ("augmented", "self.total")]


def test_a_method_of_your_own_class_is_not_a_containers_store_and_the_allocating_store_wins():
    text = textwrap.dedent('''\
        import torch

        class Bank:
            def add(self, f):
                self.feats = torch.cat([self.feats, f.detach()])

        def main(model, xs, fixed):
            bank, snapshots = Bank(), []
            for x in xs:
                bank.add(model(x))
                if fixed:
                    snapshots.append({k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()})
                else:
                    snapshots.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    ''')
    facts = file_facts(text)
    assert "add" in facts.methods
    assert {store.line: store.moves_off for store in facts.stores if store.target == "snapshots"} == {12: True, 14: False}
    sources = _Sources({"/app/t.py": text})
    # the census names the object; what it keeps was allocated by the statement that grows its attribute
    bank = Holder(root="bank", kind="object", bytes=1 << 30, tensors=1, appended_at=("/app/t.py", 5))
    assert store_for_holder(bank, [], sources)[1][0].line == 5
    bank.appended_at = None
    assert store_for_holder(bank, [], sources) is None  # `bank.add(...)` alone is a call into your code
    kept = _holder("local snapshots in main (t.py:8)", kind="frame", at=14, created=("/app/t.py", 8))
    kept.appended_at = ("/app/t.py", 14)
    assert store_for_holder(kept, [], sources)[1][0].line == 14


def test_a_list_built_by_a_comprehension_is_filled_where_it_is_made():
    facts = file_facts("losses = [loss_of(4096) for _ in range(8)]\nnames = [str(i) for i in range(3)]\nplain = []\n")
    assert [(store.line, store.kind, store.target) for store in facts.stores] == [(1, "built", "losses"),
                                                                                  (2, "built", "names")]


GRAD_LOG = textwrap.dedent('''\
    def main(model, optimizer, batches):
        grad_log = []
        norms = []
        for x in batches:
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
            grads = [p.grad for p in model.parameters()]
            norms.append([g.norm().item() for g in grads])
            grad_log.append(grads)
            optimizer.zero_grad(set_to_none=True)
        return grad_log
''')


def test_a_store_of_what_reads_a_gradient_is_a_fact():
    facts = file_facts(GRAD_LOG)
    assert [(line, function, loop) for line, function, loop in facts.backwards] == [(6, "main", (4, 11))]
    grads = next(binding for binding in facts.bindings if binding.names == ("grads",))
    assert grads.reads_grad and not next(b for b in facts.bindings if b.names == ("loss",)).reads_grad
    # `grads = [p.grad …]` is itself a (built) store; the appends read `grads`, a name bound from `.grad`
    assert [store.line for store in facts.stores if store.reads_grad] == [8]


def test_growth_the_backward_made_follows_its_gradients_into_the_store_in_its_loop():
    sources = _Sources({"/app/train.py": GRAD_LOG})
    recorded, backward_line, store = store_from_backward(["/app/train.py"], sources)
    # norms keeps floats (.item()): off the GPU; grad_log keeps the gradient tensors one assignment further
    assert (recorded, backward_line, store.line, store.target) == ("/app/train.py", 6, 10, "grad_log")
    direct = GRAD_LOG.replace("grad_log.append(grads)", "grad_log.append([p.grad.clone() for p in model.parameters()])")
    assert store_from_backward(["/app/train.py"], _Sources({"/app/train.py": direct}))[2].line == 10
    # two containers keep gradients: not guessed between
    both = GRAD_LOG.replace("norms.append([g.norm().item() for g in grads])", "norms.append(grads[0])")
    assert store_from_backward(["/app/train.py"], _Sources({"/app/train.py": both})) is None
    # no backward in a loop, or no store of a gradient: nothing
    once = "def f(model, x, log):\n    model(x).sum().backward()\n    log.append([p.grad for p in model.parameters()])\n"
    assert store_from_backward(["/app/train.py"], _Sources({"/app/train.py": once})) is None
    assert store_from_backward(["/app/train.py"], _Sources({"/app/train.py": SOURCE})) is None


def test_a_number_made_from_a_gradient_does_not_keep_it():
    def reads(value: str) -> bool:
        return next(b for b in file_facts(f"g = {value}\n").bindings).reads_grad

    assert reads("[p.grad for p in ps]") and reads("p.grad.detach().clone()") and reads("torch.cat([p.grad.flatten()])")
    assert reads("torch.autograd.grad(loss, params)") and reads("{n: p.grad for n, p in named}")
    assert not reads("[p.grad.norm() for p in ps]") and not reads("torch.norm(p.grad)") and not reads("p.grad.shape")
    assert not reads("[p.data for p in ps]")


def test_growth_the_backward_made_with_no_store_found_says_so_rather_than_guess():
    from vramlens.analysis.attribution.storing import storing_lines
    from vramlens.analysis.model import LineStat

    both = GRAD_LOG.replace("norms.append([g.norm().item() for g in grads])", "norms.append(grads[0])")
    lines = [LineStat("/app/train.py", 5, "main", 1 << 30, 0.5, 1 << 30, 1, False)]
    found, note = storing_lines([], lines, [], _Sources({"/app/train.py": both}), backward_growth=4 << 30)
    assert found == [] and "backward pass" in note and "no statement of your code" in note
    assert storing_lines([], lines, [], _Sources({"/app/train.py": both}))[1] is None  # no such growth: nothing said
