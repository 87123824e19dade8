"""Small sources for the rule tests: one flagged case per check, with the text its default fix must give."""

from __future__ import annotations

from dataclasses import dataclass
from textwrap import dedent, indent


@dataclass(frozen=True)
class Case:
    name: str
    code: str
    line: int
    source: str
    fix: tuple[str, str] | None  # (text, replacement) that `--fix` must make once; None: no fix offered

    @property
    def fixed(self) -> str | None:
        if self.fix is None:
            return None
        old, new = self.fix
        assert self.source.count(old) == 1, f"{self.name}: {old!r} must occur exactly once"
        return self.source.replace(old, new)


def _src(text: str) -> str:
    return dedent(text).lstrip("\n")


TRAIN_HEADER = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 4)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""



def _accumulating_loop(statement: str) -> str:
    """A training loop whose last statement (line 14) is ``statement``."""
    return TRAIN_HEADER + _src(f"""
        def train(loader):
            total = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                {statement}
            return total
        """)


VAL_LOOP = """\
    for x, y in val_loader:
        out = model(x)
        correct += (out.argmax(1) == y).sum().item()
"""

POSITIVE_CASES = [
    Case("accumulate_loss", "VL101", 14, _accumulating_loop("total += loss"),
         ("total += loss\n", "total += loss.detach()\n")),
    Case("accumulate_spelled_out", "VL101", 14, _accumulating_loop("total = total + loss * 2"),
         ("total = total + loss * 2", "total = total + (loss * 2).detach()")),
    Case("append_through_alias", "VL102", 14, TRAIN_HEADER + _src("""
        class Trainer:
            def __init__(self):
                self.history = []

            def step(self, x):
                buf = self.history
                out = model(x)
                buf.append(out)
                return out
        """), ("buf.append(out)", "buf.append(out.detach())")),
    Case("dict_store_clone_keeps_graph", "VL103", 14, TRAIN_HEADER + _src("""
        def train(loader):
            outputs = {}
            for i, (x, y) in enumerate(loader):
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                optimizer.step()
                outputs[i] = out.clone().cpu()
            return outputs
        """), ("out.clone().cpu()\n", "out.clone().cpu().detach()\n")),
    Case("cat_accumulator", "VL104", 12, TRAIN_HEADER + _src("""
        def predict_all(loader):
            preds = torch.empty(0)
            with torch.no_grad():
                pass
            for x in loader:
                preds = torch.cat((preds, model(x).cpu()))
            return preds
        """), None),
    Case("self_attribute_in_forward", "VL105", 14, TRAIN_HEADER + _src("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                out = self.fc(x)
                self.last = out
                return out
        """), ("self.last = out\n", "self.last = out.detach()\n")),
    Case("recurrent_state", "VL106", 12, TRAIN_HEADER + _src("""
        rnn = nn.GRU(4, 4)

        def train(loader):
            h = torch.zeros(1, 1, 4)
            for x, y in loader:
                out, h = rnn(x, h)
                loss = criterion(out, y)
                loss.backward()
                optimizer.step()
        """), ("rnn(x, h)", "rnn(x, h.detach())")),
    Case("predict_without_no_grad", "VL202", 9, TRAIN_HEADER + _src("""
        def predict(x):
            model.eval()
            return model(x).argmax(dim=-1)
        """), ("def predict", "@torch.no_grad()\ndef predict")),
    Case("validation_loop_in_training_function", "VL202", 14, TRAIN_HEADER + _src("""
        def fit(train_loader, val_loader):
            for x, y in train_loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            correct = 0
            for x, y in val_loader:
                out = model(x)
                correct += (out.argmax(1) == y).sum().item()
            return correct
        """), (VAL_LOOP, "    with torch.no_grad():\n" + indent(VAL_LOOP, "    "))),
    Case("retain_graph_in_loop", "VL301", 10, TRAIN_HEADER + _src("""
        def train(loader):
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward(retain_graph=True)
                optimizer.step()
        """), None),
    Case("empty_cache_every_step", "VL401", 12, TRAIN_HEADER + _src("""
        def train(loader):
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                torch.cuda.empty_cache()
        """), None),
    Case("host_tensor_in_loop", "VL501", 9, TRAIN_HEADER + _src("""
        def train(loader, device):
            for x, y in loader:
                weights = torch.tensor([1.0, 2.0, 3.0, 4.0]).to(device)
                loss = criterion(model(x) * weights, y)
                loss.backward()
        """), ("]).to(device)", "], device=device)")),
    Case("oom_retry_in_handler", "VL601", 12, TRAIN_HEADER + _src("""
        def run(batch):
            try:
                out = model(batch)
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
                out = model(batch[: len(batch) // 2])
            return out
        """), None),
]

# Look-alikes that must stay silent: (name, code that must not appear, source).
NEGATIVE_CASES = [
    ("accumulate_item", "VL101", TRAIN_HEADER + _src("""
        def train(loader):
            total = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                total += loss.item()
        """)),
    ("accumulate_float_after_reassign", "VL101", TRAIN_HEADER + _src("""
        def train(loader):
            total = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                loss = float(loss)
                total += loss
        """)),
    ("accumulate_then_backward", "VL101", TRAIN_HEADER + _src("""
        def train(batches):
            total_loss = 0
            for x, y in batches:
                total_loss += criterion(model(x), y)
            total_loss.backward()
            optimizer.step()
        """)),
    ("list_recreated_each_iteration", "VL102", TRAIN_HEADER + _src("""
        def train(loader):
            for x, y in loader:
                parts = []
                parts.append(criterion(model(x), y))
                sum(parts).backward()
        """)),
    ("list_cleared_each_iteration", "VL102", TRAIN_HEADER + _src("""
        def train(loader):
            parts = []
            for x, y in loader:
                parts.clear()
                parts.append(model(x))
                optimizer.step()
        """)),
    ("small_constant_loop", "VL102", TRAIN_HEADER + _src("""
        def heads(x):
            outs = []
            for k in range(3):
                outs.append(model(x))
            return torch.stack(outs)
        """)),
    ("append_detached", "VL102", TRAIN_HEADER + _src("""
        def train(loader):
            losses = []
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                losses.append(loss.detach())
        """)),
    ("forward_time_steps", "VL102", TRAIN_HEADER + _src("""
        class Decoder(nn.Module):
            def forward(self, x, steps):
                outs = []
                h = x
                for t in range(steps):
                    h = self.cell(h)
                    outs.append(h)
                return torch.stack(outs)
        """)),
    ("stored_loss_attribute", "VL105", TRAIN_HEADER + _src("""
        class ContentLoss(nn.Module):
            def forward(self, x):
                self.loss = criterion(x, self.target)
                return x
        """)),
    ("recurrent_state_detached", "VL106", TRAIN_HEADER + _src("""
        rnn = nn.GRU(4, 4)

        def train(loader):
            h = torch.zeros(1, 1, 4)
            for x, y in loader:
                h = h.detach()
                out, h = rnn(x, h)
                criterion(out, y).backward()
        """)),
    ("predict_decorated", "VL201", TRAIN_HEADER + _src("""
        @torch.inference_mode()
        def predict(x):
            return model(x)
        """)),
    ("predict_bare_decorator", "VL201", TRAIN_HEADER + _src("""
        @torch.no_grad
        def predict(x):
            return model(x)
        """)),
    ("evaluate_with_block", "VL201", TRAIN_HEADER + _src("""
        def evaluate(loader):
            model.eval()
            with torch.set_grad_enabled(False):
                for x, y in loader:
                    model(x)
        """)),
    ("module_level_grad_off", "VL201", "import torch\ntorch.set_grad_enabled(False)\n" + TRAIN_HEADER + _src("""
        def predict(x):
            return model(x)
        """)),
    ("inference_named_but_trains", "VL201", TRAIN_HEADER + _src("""
        def sample_and_learn(x, y):
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        """)),
    ("retain_graph_once", "VL301", TRAIN_HEADER + _src("""
        def step(x, y):
            out = model(x)
            criterion(out, y).backward(retain_graph=True)
            out.sum().backward()
        """)),
    ("retain_graph_two_heads", "VL301", TRAIN_HEADER + _src("""
        def step(losses):
            for i in range(2):
                losses[i].backward(retain_graph=True)
        """)),
    ("empty_cache_periodic", "VL401", TRAIN_HEADER + _src("""
        def train(loader):
            for step, (x, y) in enumerate(loader):
                criterion(model(x), y).backward()
                if step % 100 == 0:
                    torch.cuda.empty_cache()
        """)),
    ("device_at_creation", "VL501", TRAIN_HEADER + _src("""
        def train(loader, device):
            for x, y in loader:
                w = torch.tensor([1.0, 2.0], device=device)
                x = torch.from_numpy(x).to(device)
        """)),
    ("dtype_conversion_not_a_move", "VL501", TRAIN_HEADER + _src("""
        def train(loader):
            for x, y in loader:
                w = torch.zeros(4).to(torch.float16)
        """)),
    ("oom_flag_then_retry", "VL601", TRAIN_HEADER + _src("""
        def run(batch):
            oom = False
            try:
                out = model(batch)
            except torch.cuda.OutOfMemoryError:
                oom = True
            if oom:
                torch.cuda.empty_cache()
                out = model(batch[: len(batch) // 2])
            return out
        """)),
    ("runtime_error_not_oom", "VL601", TRAIN_HEADER + _src("""
        def run(batch):
            try:
                out = model(batch)
            except RuntimeError:
                out = model(batch.float())
            return out
        """)),
    # Look-alikes found in library code (transformers) while tuning precision.
    ("layer_loop_is_structure_not_recurrence", "VL106", TRAIN_HEADER + _src("""
        def run_layers(layers, hidden, loader):
            for layer in layers:
                hidden = layer(hidden)
            return hidden
        """)),
    ("tensor_slice_write_is_not_a_container", "VL103", TRAIN_HEADER + _src("""
        def chunks(loader, out):
            for i, x in enumerate(loader):
                out[:, i] = model(x)
        """)),
    ("constructing_layers_is_not_a_forward", "VL102", TRAIN_HEADER + _src("""
        class Stack:
            def __init__(self, config, batches):
                self.layers = []
                for batch in batches:
                    self.layers.append(DecoderBlock(config))
        """)),
    ("tensor_named_like_a_layer_is_not_a_model", "VL201", TRAIN_HEADER + _src("""
        def predict_length(after_conv1):
            return after_conv1.max().item()
        """)),
    ("pixel_values_is_not_a_validation_set", "VL201", TRAIN_HEADER + _src("""
        def encode_frames(pixel_values, optimizer):
            feats = [model(frame) for frame in pixel_values]
            torch.stack(feats).sum().backward()
            optimizer.step()
            for frame in pixel_values:
                model(frame)
        """)),
    ("private_decoding_helper_follows_its_caller", "VL101", TRAIN_HEADER + _src("""
        class Generator:
            def _sample(self, ids, steps):
                scores = ()
                while steps:
                    scores += (model(ids),)
                    steps -= 1
                return scores
        """)),
    ("dtype_variable_is_not_a_move", "VL501", TRAIN_HEADER + _src("""
        def train(loader, dtype):
            for x, y in loader:
                w = torch.zeros(4).to(dtype)
        """)),
]


def default_on_case() -> Case:
    """A positive case, with a fix, of a check that is on by default now: what the command line and the fixer do
    does not depend on which check it is, and the held-out gate moves checks in and out of the default. When the
    gate leaves no check with a fix on (VL107 has none), a preview check's case whose file gives that one finding
    with every check on: the tests then turn preview checks on (``preview_needed``)."""
    from vramlens.lint import lint_source

    on = _default_on()
    found = next((c for c in POSITIVE_CASES if c.code in on and c.fix is not None), None)
    if found is not None:
        return found
    return next(c for c in POSITIVE_CASES
                if c.fix is not None and [f.code for f in lint_source(c.source, preview=True)] == [c.code])


def preview_needed(case: Case) -> bool:
    """The case's check is off by default: a test of it turns preview checks on."""
    return case.code not in _default_on()


def _default_on() -> set[str]:
    from vramlens.lint import CHECKS

    return {c.code for c in CHECKS if not c.preview}
