"""Mechanisms read in the false findings of a spot check on fresh public code (BENCHMARKS.md, round 8), each
beside the leak it must still see.

Each source marks the lines that must be reported (``# flag: VL102``); every other line is a look-alike that
must stay silent (mechanisms.py).
"""

from __future__ import annotations

import pytest

from mechanisms import check, source
from vramlens.lint import lint_source

HEAD = "import torch\nimport torch.nn as nn\nfrom agents import Actor\n\n"


def cases(*texts: str) -> list[str]:
    return [HEAD + source(t) for t in texts]


def ids(texts: list[str]) -> list[str]:
    return [f"shape{i}" for i in range(len(texts))]


NOT_MODULE_TRAIN = cases(
    """
    def run(env, episodes):
        actor = Actor(lr=1e-3)
        rewards = []
        for _ in range(episodes):
            state = env.reset()
            total = 0
            action = actor.predict(state)
            state, reward, done, info = env.step(action)
            total += reward
            actor.train(state, action)
            rewards.append(total)
        return rewards
    """,
    """
    def run(env, episodes, loader):
        actor = Actor(lr=1e-3)
        actor.train()
        outputs = []
        for x in loader:
            out = actor.predict(x)
            outputs.append(out)  # flag: VL102
            out.mean().backward()
        return outputs
    """,
)


@pytest.mark.parametrize("text", NOT_MODULE_TRAIN, ids=ids(NOT_MODULE_TRAIN))
def test_a_train_method_with_data_arguments_is_not_module_train(text):
    """``actor.train(states, grads)`` (a TensorFlow actor's training step) makes ``actor`` no module, so
    ``actor.predict`` runs no forward; ``actor.train()`` does, as ``Module.train(mode)`` takes one flag."""
    check(text)


LEAK = """
def evaluate(model: nn.Module, loader):
    outputs = []
    for x in loader:
        out = model(x)
        outputs.append(out){mark}
        out.mean().backward()
    return outputs
"""


@pytest.mark.parametrize("imports, reported", [
    ("import tensorflow as tf\nimport numpy as np\n", False),
    ("import jax.numpy as jnp\n", False),
    ("import tensorflow as tf\nimport torch.nn as nn\n", True),
    ("import numpy as np\nimport torch.nn as nn\n", True),
])
def test_a_file_of_another_framework_is_not_checked(imports, reported):
    """A TensorFlow or JAX file that imports nothing of PyTorch holds no torch tensors: none of its calls is a
    torch forward, whatever the names say."""
    check(imports + "\n" + source(LEAK.format(mark="  # flag: VL102" if reported else "")))


ON_A_PARAMETER = cases(
    """
    def dynamic_eval(model: nn.Module, batches, lr, lamb):
        for param in model.parameters():
            param.data0 = 1 * param.data
        total = 0
        for x, y in batches:
            loss = model(x, y)
            loss.backward()
            for param in model.parameters():
                step = lamb * (param.data0 - param.data) - lr * param.grad.data / (param.MS + 1e-8)
                param.data += step
                total += loss.data
        return total
    """,
    """
    def projections(model: nn.Module, loader):
        kept = []
        weight = next(model.parameters())
        for x in loader:
            kept.append(weight.data0 @ x)
            kept.append(weight.T @ x)  # flag: VL102
        return kept
    """,
)


@pytest.mark.parametrize("text", ON_A_PARAMETER, ids=ids(ON_A_PARAMETER))
def test_what_code_hangs_on_a_parameter_is_not_the_parameter(text):
    """``param.data0``, ``param.MS`` (dynamic evaluation's saved weights and running squares) are whatever was
    stored there, not the parameter: computing with them makes no graph. ``param.T`` is a view of it."""
    check(text)


METER_OF_THE_BASE_CLASS = cases(
    """
    class Average:
        def __init__(self):
            self.total = 0.0
        def update(self, values):
            self.total += values.sum().item()

    class Metric:
        def __init__(self):
            self.value = Average()

    class SquaredError(Metric):
        def update(self, model: nn.Module, x, y):
            error = (model(x) - y) ** 2
            self.value.update(error)
    """,
    """
    class Keeper:
        def __init__(self):
            self.kept = []
        def update(self, values):
            self.kept.append(values)

    class Metric:
        def __init__(self):
            self.value = Keeper()

    class SquaredError(Metric):
        def update(self, model: nn.Module, x, y):
            error = (model(x) - y) ** 2
            self.value.update(error)  # flag: VL102
    """,
)


@pytest.mark.parametrize("text", METER_OF_THE_BASE_CLASS, ids=ids(METER_OF_THE_BASE_CLASS))
def test_a_meter_the_base_class_builds_is_judged_by_its_own_method(text):
    """``self.value = Average()`` in the base class's ``__init__``: a subclass's ``self.value.update(error)`` runs
    that class's ``update``, which takes ``.item()`` (no finding) or keeps the tensor (reported at the call)."""
    check(text)


LOSS_MODULE_STATS = cases(
    """
    class Agent:
        def __init__(self, net: nn.Module):
            self.net = net
            self.loss_fn = ActorCriticLoss()
            self.history = []
        def step(self, batch, opt):
            loss, stats = self.loss_fn(self.net(batch))
            loss.backward()
            opt.step()
            self.history.append(stats)
            return stats

    class ActorCriticLoss(nn.Module):
        def forward(self, values):
            loss = values.pow(2).mean()
            return loss, {"loss": loss.item(), "mean": values.mean().item()}
    """,
    """
    class Agent:
        def __init__(self, net: nn.Module):
            self.net = net
            self.loss_fn = ActorCriticLoss()
            self.history = []
        def step(self, batch, opt):
            loss, stats = self.loss_fn(self.net(batch))
            loss.backward()
            opt.step()
            self.history.append(stats)  # flag: VL102
            return stats

    class ActorCriticLoss(nn.Module):
        def forward(self, values):
            loss = values.pow(2).mean()
            return loss, {"loss": loss, "mean": values.mean().item()}
    """,
    """
    class Agent:
        def __init__(self, net: nn.Module):
            self.net = net
            self.loss_fn = ActorCriticLoss()
            self.history = []
        def step(self, batch, opt):
            result = self.loss_fn(self.net(batch))
            loss, stats = result
            loss.backward()
            opt.step()
            self.history.append(stats)
            self.history.append(result[0])  # flag: VL102

    class ActorCriticLoss(nn.Module):
        def forward(self, values):
            loss = values.pow(2).mean()
            return loss, {"loss": loss.item()}
    """,
)


@pytest.mark.parametrize("text", LOSS_MODULE_STATS, ids=ids(LOSS_MODULE_STATS))
def test_a_position_the_files_own_forward_never_fills_with_graph_is_clean(text):
    """A loss module of the file returns ``loss, {"loss": loss.item()}``: the statistics beside the loss are
    Python floats wherever the module is called, however the class is placed in the file. A position that may
    hold graph keeps the forward's labels."""
    check(text)


ROLLOUT_BACKPROPAGATED_AFTER_THE_LOOP = cases(
    """
    class Args:
        pass

    class Agent:
        def __init__(self, net: nn.Module, opt, loss_fn):
            self.net, self.opt, self.loss_fn = net, opt, loss_fn
        def update(self, data):
            values = []
            for state, done in zip(data["state"], data["done"]):
                out = self.net(state, done)
                values.append(out)
            args = Args()
            args.values = torch.cat(values)
            loss = self.loss_fn(args)
            loss.backward()
            self.opt.step()
    """,
    """
    class Agent:
        def __init__(self, net: nn.Module, opt):
            self.net, self.opt = net, opt
        def update(self, episodes):
            for data in episodes:
                values = []
                for state, done in zip(data["state"], data["done"]):
                    out = self.net(state, done)
                    values.append(out)
                loss = torch.cat(values).sum()
                loss.backward()
                self.opt.step()
    """,
    """
    class Agent:
        def __init__(self, net: nn.Module, opt):
            self.net, self.opt = net, opt
        def update(self, data):
            values = []
            for state, done in zip(data["state"], data["done"]):
                out = self.net(state, done)
                values.append(out)  # flag: VL102
                out.sum().backward()
                self.opt.step()
            return values
    """,
)


@pytest.mark.parametrize("text", ROLLOUT_BACKPROPAGATED_AFTER_THE_LOOP, ids=ids(ROLLOUT_BACKPROPAGATED_AFTER_THE_LOOP))
def test_a_rollout_differentiated_after_its_loop_keeps_the_graphs_it_needs(text):
    """A list made anew for each backward, filled in a loop and joined into the loss backpropagated after it
    (truncated BPTT, an actor-critic rollout), holds graphs that backward needs. Kept beside a backward in the
    loop, it keeps old graphs."""
    check(text)


BOUNDED_DEQUE = cases(
    """
    from collections import deque

    class Visualiser:
        def __init__(self, model: nn.Module):
            self.model = model
            self.recent = deque(maxlen=10)
            self.every = deque()
        def step(self, loader):
            for x in loader:
                out = self.model(x)
                self.recent.append(out)
                self.every.append(out)  # flag: VL102
    """,
)


@pytest.mark.parametrize("text", BOUNDED_DEQUE, ids=ids(BOUNDED_DEQUE))
def test_a_deque_with_a_maximum_length_keeps_the_last_few(text):
    """``deque(maxlen=10)`` drops the oldest: it never keeps every step's graph. A deque without one does."""
    check(text)


RUN_ONCE_FOR_ITS_EFFECTS = cases(
    """
    def evaluate(model, loader, size):
        model.eval()
        model(torch.zeros(1, 3, size, size))  # a warm-up: nothing keeps what it returns
        predictions = []
        with torch.no_grad():
            for x in loader:
                predictions.append(model(x).argmax(1))
        return predictions
    """,
    """
    def calibrate(model, sample):
        model.eval()
        torch.quantization.prepare(model, inplace=True)
        _ = model(sample)
        torch.quantization.convert(model, inplace=True)
        return model
    """,
    """
    def predict(model, x):
        model.eval()
        out = model(x)  # flag: VL202
        return out.argmax(-1)
    """,
    """
    def features(model, loader):
        model.eval()
        for x in loader:
            model(x)  # flag: VL202
    """,
)


@pytest.mark.parametrize("text", RUN_ONCE_FOR_ITS_EFFECTS, ids=ids(RUN_ONCE_FOR_ITS_EFFECTS))
def test_a_forward_run_once_with_its_result_dropped_is_no_inference(text):
    """A warm-up or calibration forward whose result nothing keeps, run once per call, records a graph that
    dies with the call; a forward whose result is used, or one run on every batch of a loop, still counts."""
    check(text)


TORCHTNT_UNITS = [
    source(
        f"""
        import torch
        from torchtnt.framework import EvalUnit, PredictUnit


        class Evaluation({base}):
            def __init__(self, model):
                super().__init__()
                self.model = model

            def {hook}(self, state, data):
                self.model.eval()
                preds = self.model(data["x"]){flag}
                return preds.argmax(-1)
        """
    )
    for base, hook, flag in (
        ("EvalUnit[dict]", "eval_step", ""),
        ("PredictUnit", "predict_step", ""),
        ("EvalUnit[dict]", "predict_step", "  # flag: VL202"),  # the evaluation loop never calls it
        ("object", "eval_step", "  # flag: VL202"),
    )
]


@pytest.mark.parametrize("text", TORCHTNT_UNITS, ids=ids(TORCHTNT_UNITS))
def test_torchtnt_runs_its_units_eval_and_predict_steps_without_grad(text):
    """torchtnt's evaluate() is decorated with torch.no_grad() and predict() runs under inference_mode: the
    steps they call of a unit (a generic base ``EvalUnit[T]`` too) record nothing."""
    check(text)


KEPT_AFTER_BACKWARD = source(
    """
    import torch

    def train(model, loader, optimizer):
        losses = []
        for x, y in loader:
            optimizer.zero_grad()
            loss = (model(x) - y).pow(2).mean()
            loss.backward()
            optimizer.step()
            losses.append(loss)
        return losses

    def train_sometimes(model, loader):
        losses = []
        for i, (x, y) in enumerate(loader):
            loss = (model(x) - y).pow(2).mean()
            if i % 4 == 0:
                loss.backward()
            losses.append(loss)
        return losses

    def train_retained(model, loader):
        losses = []
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            loss.backward(retain_graph=True)
            losses.append(loss)
        return losses
    """
)


def test_a_loss_kept_after_its_backward_is_reported_for_its_graph_not_its_activations():
    """The step's backward has freed the saved activations (benchmarks/graph_after_backward.py: 0.1 KiB a
    step kept as a number, 354 KiB as a tensor, 1,495 KiB with the graph retained, for a 12-layer encoder),
    so the finding says what stays: the graph. A backward that runs only sometimes, or retains the graph,
    frees nothing for certain."""
    findings = {f.line: f.message for f in lint_source(KEPT_AFTER_BACKWARD, "case.py", preview=True) if f.code == "VL102"}
    lines = KEPT_AFTER_BACKWARD.splitlines()
    kept = [number for number, line in enumerate(lines, start=1) if "losses.append(loss)" in line]
    assert sorted(findings) == kept
    first, sometimes, retained = (findings[number] for number in kept)
    assert "backward has freed their saved activations" in first and "host memory" in first
    for message in (sometimes, retained):
        assert "with its saved activations" in message and "freed" not in message


def test_a_dropped_call_of_the_files_own_evaluation_routine_still_counts():
    """Only a module's own forward run once for its effects is let go: ``self._eval_epoch()`` drops no graph
    of its own, it runs the whole evaluation."""
    check(HEAD + source(
        """
        class Trainer:
            def __init__(self, model, loader):
                self.model = model
                self.loader = loader

            def _eval_step(self, x):
                return self.model(x).mean().item()  # flag: VL202

            def evaluate(self):
                self.model.eval()
                self._eval_step(self.loader.sample())  # flag: VL202
        """
    ))


def _encoder(made: str, store: str, also: str = "") -> str:
    """A module whose forward caches each block's hidden state in ``self.cached_state``, made as ``made``."""
    return HEAD + source(
        f"""
        class Encoder(nn.Module):
            def __init__(self, blocks):
                super().__init__()
                self.blocks = nn.ModuleList(nn.GRU(8, 8, batch_first=True) for _ in range(blocks))
                self.cached_state = {made}

            def forward(self, x, step, cache=False):
                for i, block in enumerate(self.blocks):
                    x, h = block(x)
                    if cache:
                        {store}{also}
                return x
        """
    )


_FIXED_LENGTH = "[torch.empty(0) for _ in range(blocks)]"
FIXED_SLOTS = [
    _encoder(_FIXED_LENGTH, "self.cached_state[i] = h"),
    _encoder(_FIXED_LENGTH, "self.cached_state[i] = h  # flag: VL103",
             "\n" + " " * 24 + "self.cached_state.append(h)  # flag: VL102"),
    _encoder("{}", "self.cached_state[step] = h  # flag: VL103"),
]


@pytest.mark.parametrize("text", FIXED_SLOTS, ids=ids(FIXED_SLOTS))
def test_a_list_only_written_by_index_keeps_one_value_per_slot(text):
    """``self.cache = [torch.empty(0) for _ in range(n)]`` then ``self.cache[i] = h``: writing past a list's
    end raises, so it never grows; a list something appends to, or a dict keyed by the step, does."""
    check(text)


POOL_TEST_CLASS = [
    source(
        f"""
        import torch


        class {name}:
            def {method}(self, pool, device):
                tensors = []
                for _ in range(20):
                    tensor = pool.allocate(512, torch.float32, device, (128,))
                    tensors.append(tensor){flag}
                return tensors
        """
    )
    for name, method, flag in (
        ("TestMemoryPool", "test_fragmentation", ""),
        ("ImagePool", "query", "  # flag: VL102"),
    )
]


@pytest.mark.parametrize("text", POOL_TEST_CLASS, ids=ids(POOL_TEST_CLASS))
def test_a_pytest_class_named_for_a_pool_takes_fixtures_not_images(text):
    """A class named for a pool is taken for a GAN's image pool, whose parameters receive generator outputs;
    pytest's ``Test...`` classes take fixtures (a memory pool's tests), not images."""
    check(text)


def test_a_list_of_fixed_length_filled_across_a_loops_steps_keeps_every_steps_graph():
    """``losses = [None] * steps`` filled by index in the loop keeps each step's graph until the call ends
    (a real fix: nn_lyapunov, in the commit corpus): only a forward's per-block slots are overwritten per call."""
    check(HEAD + source(
        """
        def train(model, loader, optimizer, steps):
            losses = [None] * steps
            for i, (x, y) in enumerate(loader):
                losses[i] = (model(x) - y).pow(2).mean()  # flag: VL103
                if i:
                    losses[i - 1].backward()
                    optimizer.step()
            return losses
        """
    ))


# -- read off the held-out round B's false findings (BENCHMARKS.md, round 11) ----------------------------
def test_a_forward_whose_result_the_training_step_returns_feeds_the_frameworks_backward():
    """After another module's ``eval()`` in a Lightning ``training_step``, the forward whose loss the step
    returns is trained through; the one whose loss is only logged records a graph nobody uses."""
    check(HEAD + source(
        """
        import pytorch_lightning as pl

        class Classifier(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.encoder = nn.Linear(8, 8)
                self.classifier = nn.Linear(8, 2)
                self.ema_classifier = nn.Linear(8, 2)

            def training_step(self, batch, batch_idx):
                x, y = batch
                self.encoder.eval()
                with torch.no_grad():
                    features = self.encoder(x)
                pred = self.classifier(features)
                pred_ema = self.ema_classifier(features)  # flag: VL202
                loss = nn.functional.cross_entropy(pred, y)
                self.log("ema", nn.functional.cross_entropy(pred_ema, y))
                return loss
        """
    ))


def test_gradients_taken_without_create_graph_carry_no_graph():
    """``torch.autograd.grad`` hands back gradients with no history unless asked to build one."""
    check(HEAD + source(
        """
        def guided_sample(model, classifier, x, steps):
            grads_seen = []
            penalties = []
            for _ in range(steps):
                x = x.detach().requires_grad_(True)
                score = classifier(model(x)).sum()
                grad = torch.autograd.grad(score, x)[0]
                grads_seen.append(grad)
                penalty = torch.autograd.grad(score, x, create_graph=True)[0]
                penalties.append(penalty)  # flag: VL102
                x = x + grad
            return grads_seen, penalties
        """
    ))


def test_a_value_bound_afresh_earlier_in_the_same_block_is_no_accumulation():
    """``g = grad(a)`` then ``g = g + grad(b)`` under one ``if`` starts from a new value on every pass that
    reaches it; a sum that starts before the loop carries every step."""
    check(HEAD + source(
        """
        def train(model: nn.Module, loader, opt):
            running = 0
            scores = []
            for step, (x, y) in enumerate(loader):
                out = model(x)
                if step % 10 == 0:
                    score = out.mean()
                    score = score + out.std()
                    scores.append(score.item())
                    running = running + out.std()  # flag: VL101
                loss = (out - y).abs().mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            return running, scores
        """
    ))


ABSTRACT_INFERENCE = """
class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 4)

    def _inference(self, x):
        {body}


def worker(model: Base, queue, opt):
    kept = []
    while True:
        x = queue.get()
        out = model._inference(x)
        kept.append(out){mark}
        loss = out.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize("body, mark", [("raise NotImplementedError", ""), ("return self.net(x)", "  # flag: VL102")],
                         ids=["abstract", "implemented"])
def test_a_method_only_subclasses_implement_is_no_forward_by_its_name(body, mark):
    """``model._inference(x)`` on a base class whose method only raises ``NotImplementedError``: which
    subclass runs, and whether it records a graph, this file cannot say (sentence-transformers' workers)."""
    check(HEAD + ABSTRACT_INFERENCE.format(body=body, mark=mark))


@pytest.mark.parametrize("replace, mark", [
    ("for i in range(len(values)):\n                values[i] = values[i].item()", ""),
    ("for i, value in enumerate(values):\n                values[i] = float(value)", ""),
    ("for i in range(len(values)):\n                values[i] = values[i] * 2", "  # flag: VL101"),
    ("for i in range(len(values)):\n                if i:\n                    values[i] = values[i].item()", "  # flag: VL101"),
], ids=["item", "float-enumerate", "scaled", "only-some"])
def test_a_list_whose_every_element_a_loop_replaces_by_a_number_carries_no_graph(replace, mark):
    """A helper that reduces each value across processes and hands back ``.item()`` numbers in the same list
    (round D's training scripts): what it returns holds no graph; scaling the values, or replacing only some,
    keeps it."""
    check(HEAD + source(
        f"""
        def reduce_all(values):
            {replace}
            return values


        class Meter:
            def __init__(self):
                self.sum = 0

            def update(self, value, n=1):
                self.sum += value * n


        def train(model: nn.Module, loader, opt):
            losses = Meter()
            for x, y in loader:
                loss = (model(x) - y).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                [loss] = reduce_all([loss])
                losses.update(loss, x.size(0)){mark}
            return losses.sum
        """
    ))


# -- read off round E's false findings (BENCHMARKS.md, round 11; in sample from now on) ------------------------
def test_a_container_class_of_another_frameworks_nn_is_no_torch_module():
    """``import spiraltorch as st``: ``st.nn.Sequential`` is that framework's, whose forward records no torch
    graph; ``torch.nn.Sequential`` in the same file is torch's."""
    check(source(
        """
        import torch
        import spiraltorch as st


        def score_other(model: st.nn.Sequential, val_loader):
            outs = []
            for x in val_loader:
                outs.append(model(x).tolist())
            return outs


        def score(model: torch.nn.Sequential, val_loader):
            outs = []
            for x in val_loader:
                outs.append(model(x).argmax(-1).tolist())  # flag: VL202
            return outs
        """
    ))


def test_a_tests_objects_live_as_long_as_the_test(tmp_path):
    """A buffer a test module adds to in its forward keeps graph for the test's life: a test's cost, not a
    training run's; the same module in the package is reported."""
    text = HEAD + source(
        """
        class Running(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(4, 4)
                self.total = torch.zeros(4)

            def forward(self, x):
                out = self.net(x)
                self.total += out.mean(0)
                return out
        """
    )
    line = text.splitlines().index("        self.total += out.mean(0)") + 1
    assert ("VL101", line) in {(f.code, f.line) for f in lint_source(text, "pkg/running.py", preview=True)}
    assert not [f for f in lint_source(text, "tests/test_running.py", preview=True) if f.code.startswith("VL1")]


def test_a_function_of_the_file_that_a_forward_calls_computes_the_forward():
    """An unrolled conjugate-gradient solver called from a module's forward rebinds its locals on every
    iteration: that is the forward's own graph, differentiated through, not a leak; the same loop in a
    training routine keeps every step's graph."""
    check(HEAD + source(
        """
        def solve(op, rhs):
            x = torch.zeros_like(rhs)
            r, p = rhs, rhs
            for _ in range(10):
                ap = op(p)
                alpha = (r * r).sum() / (p * ap).sum()
                x = x + alpha * p
                r = r - alpha * ap
                p = r + p
            return x


        class Unrolled(nn.Module):
            def __init__(self):
                super().__init__()
                self.op = nn.Linear(4, 4)

            def forward(self, rhs):
                return solve(self.op, rhs)


        def train(model: nn.Module, loader, opt):
            running = 0
            for x, y in loader:
                loss = (model(x) - y).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                running = running + loss  # flag: VL101
            return running
        """
    ))


def test_a_factory_is_judged_by_its_own_returns_not_those_of_the_functions_it_defines():
    """A benchmark factory hands back lambdas that run the model, one under inference_mode; a ``def`` nested
    in it returns a module it builds. The timing loop that calls what the factory built runs no known
    module, so it is no evaluation routine; a factory that itself returns a module still makes one."""
    check(HEAD + source(
        """
        import time


        def _inference_forward(model, x):
            with torch.inference_mode():
                return model(x)


        def make_operation(kind, model, x):
            if kind == "inference":
                return lambda: _inference_forward(model, x)

            def rebuilt():
                return nn.Sequential(model)

            return lambda: rebuilt()(x)


        def run_timing(fn, samples):
            times = []
            for _ in range(samples):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            return {"median": sorted(times)[len(times) // 2]}


        def main(model, x, samples):
            model.eval()
            fn = make_operation("raw", model, x)
            return run_timing(fn, samples)


        def build(model):
            return nn.Sequential(model)


        def score(net, loader):
            net.eval()
            scorer = build(net)
            total = 0.0
            for x in loader:
                total += scorer(x).sum().item()  # flag: VL202
            return total
        """
    ))


def test_a_trace_of_another_library_is_no_module():
    """``torch.jit.trace(model, x)`` hands back a module; a tracing library's ``tl.trace(model, x)`` hands back
    a log of the run, so calling what it returned runs no forward."""
    check(HEAD + source(
        """
        import torchlens as tl


        def make_operation(kind, model, x):
            if kind == "traced":
                log = tl.trace(model, x)
                return log
            return lambda: None


        def run_memory(fn, runs):
            for _ in range(runs):
                fn()
            return {"peak": torch.cuda.max_memory_allocated()}


        def main(model, x):
            model.eval()
            fn = make_operation("traced", model, x)
            return run_memory(fn, 3)


        def score(net, example, loader):
            net.eval()
            scorer = torch.jit.trace(net, example)
            total = 0.0
            for x in loader:
                total += scorer(x).sum().item()  # flag: VL202
            return total
        """
    ))


def test_a_function_handed_to_a_hook_registration_runs_at_its_callers_grad_mode():
    """A readout hook given to a replay library (``attach_hooks``, ``run_with_hooks``) runs inside the
    replayed forward, whose grad mode the library picks; the same probe in a routine of its own, after
    ``eval()``, builds a graph nobody uses."""
    check(HEAD + source(
        """
        def main(model, log, x):
            probe = nn.Linear(8, 1, bias=False).eval()

            def readout(out, *, hook):
                hook.run_ctx.setdefault("scores", []).append(probe(out).detach())
                return out

            log.attach_hooks("relu", readout).replay()
            model.run_with_hooks(x, fwd_hooks=[("blocks.0", readout)])


        def scores(probe: nn.Linear, feats):
            probe.eval()
            return probe(feats).detach().cpu()  # flag: VL202
        """
    ))


def test_a_method_a_wrapper_forward_calls_by_name_belongs_to_that_forward():
    """``self.model._infer(inputs)`` in a wrapper module's forward: the wrapped model's ``_infer`` runs at the
    grad mode of whoever calls the wrapper, so it is no inference routine of its own; an ``infer`` that no
    forward calls still is one."""
    check(HEAD + source(
        """
        class Backbone(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = nn.Linear(4, 4)

            def _infer(self, inputs):
                return {"features": self.encoder(inputs["x"])}


        class InferWrapper(nn.Module):
            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, x):
                return self.model._infer({"x": x})["features"]


        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Linear(4, 2)

            def predict(self, x):
                return self.head(x).argmax(-1)  # flag: VL201
        """
    ))


def test_a_new_tensor_made_from_a_parameter_has_none_of_its_history():
    """``w.new_zeros(shape)`` takes only the dtype and device of ``w``: adding it to a parameter in place at
    initialisation keeps no graph; adding a product of the parameter does."""
    check(HEAD + source(
        """
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(4, 4, 3)
                self.penalty = 0

            def initialize(self):
                center = self.conv.weight.new_zeros((4, 4), requires_grad=False)
                nn.init.normal_(center)
                self.conv.weight[:, :, 1, 1] += center

            def regularize(self):
                self.penalty += self.conv.weight.pow(2).sum()  # flag: VL101
        """
    ))


def test_a_sum_taken_with_recording_off_has_no_history():
    """A metrics method under ``@torch.no_grad()`` adds what it is given to a dict on the object: with
    recording off the sum is a new tensor without history, whatever the caller passed; the same method
    without the decorator keeps the graph of every call."""
    check(HEAD + source(
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(4, 1)
                self.metrics = {}
                self.totals = {}

            @torch.no_grad()
            def update_metrics(self, name, var):
                if name not in self.metrics:
                    self.metrics[name] = [0, 0]
                self.metrics[name][0] += var
                self.metrics[name][1] += 1

            def update_totals(self, name, var):
                if name not in self.totals:
                    self.totals[name] = 0
                self.totals[name] += var

            def forward(self, x, y):
                loss = (self.net(x) - y).pow(2).mean()
                self.update_metrics("loss", loss)
                self.update_totals("loss", loss)  # flag: VL101
                return loss
        """
    ))


def test_a_loop_over_modules_without_parameters_records_nothing():
    """``for name, layer in [("Dropout", nn.Dropout()), ...]``: every module the loop takes makes no parameter,
    and the input needs no grad, so the forward after ``eval()`` records nothing; one Linear among them does."""
    check(HEAD + source(
        """
        def dropout_fixtures():
            x = torch.arange(12.0).reshape(3, 4)
            out = []
            for name, layer in [("Dropout", nn.Dropout(p=0.5)), ("AlphaDropout", nn.AlphaDropout(p=0.1))]:
                layer.eval()
                y = layer(x)
                out.append({"name": name, "y": y.tolist()})
            return out


        def layer_fixtures():
            x = torch.arange(12.0).reshape(3, 4)
            out = []
            for name, layer in [("Linear", nn.Linear(4, 4)), ("Dropout", nn.Dropout())]:
                layer.eval()
                y = layer(x)  # flag: VL202
                out.append({"name": name, "y": y.tolist()})
            return out
        """
    ))


def test_what_a_forward_hook_kept_is_the_forwards_output():
    """A feature extractor runs its model for the forward hooks' sake and hands back what they stored: that
    carries the graph (a structure loss differentiates through it), so neither the method that reads it nor
    one computing from it is an inference routine; the method that hands back a NumPy copy is one."""
    check(HEAD + source(
        """
        class Extractor:
            def __init__(self, model: nn.Module):
                self.model = model
                self.model.eval()
                self.outputs = []
                self.model.blocks[0].register_forward_hook(self._hook)

            def _hook(self, module, inputs, output):
                self.outputs.append(output)

            def features(self, x):
                self.model(x)
                feats = self.outputs[-1]
                self.outputs = []
                return feats[0]

            def keys(self, x):
                feats = self.features(x)
                flat = feats.transpose(0, 1)
                return flat.reshape(flat.shape[0], -1)

            def embed(self, x):
                return self.features(x).cpu().numpy()  # flag: VL202
        """
    ))


def test_an_element_of_a_forwards_output_feeds_the_backward_that_reads_it():
    """Planning by gradient descent on the actions: after ``eval()`` the forward's ``pred[0]`` becomes the loss
    that ``loss.backward()`` differentiates, so the forward feeds a backward; the same forward whose element is
    only read as a number builds a graph for nothing."""
    check(HEAD + source(
        """
        def plan(model: nn.Module, images, actions, iters, u_reg):
            actions.requires_grad = True
            opt = torch.optim.Adam([actions], 0.1)
            for i in range(iters):
                opt.zero_grad()
                model.eval()
                pred, _ = model([images], actions)
                cost = pred[0].mean()
                loss = cost
                if u_reg > 0.0:
                    model.train()
                    loss = loss + u_reg
                loss.backward()
                opt.step()
            return actions.data


        def rollout(model: nn.Module, images, actions, u_reg):
            model.eval()
            pred, _ = model([images], actions)  # flag: VL202
            cost = pred[0].mean()
            if u_reg > 0.0:
                model.train()
            return cost.item()
        """
    ))


def test_a_value_shown_to_be_an_array_or_a_number_holds_no_graph():
    """``to_numpy`` hands back its argument unchanged only where ``isinstance`` showed it to be an
    ``np.ndarray`` already, and detaches a tensor: the meter it feeds keeps no graph; a helper that hands back
    its argument in the tensor branch still passes the graph on."""
    check(HEAD + source(
        """
        import numpy as np


        def to_numpy(x):
            if isinstance(x, np.ndarray):
                return x
            elif isinstance(x, torch.Tensor):
                return x.detach().cpu().numpy()
            elif isinstance(x, (int, float)):
                return np.array(x)
            raise ValueError("unsupported")


        def as_value(x):
            if isinstance(x, torch.Tensor):
                return x
            return float(x)


        class Runner:
            def __init__(self, model: nn.Module, meter):
                self.model = model
                self.meter = meter
                self.total = 0

            def step(self, x, y, opt):
                loss = (self.model(x) - y).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                self.meter.update(to_numpy(loss))
                self.total += as_value(loss)  # flag: VL101
        """
    ))


def test_an_adversarial_attack_needs_recording_on():
    """A validation that runs adversarial attacks (``attack.attack(images, labels)``, a Lipschitz estimate through
    ``perturb``) takes gradients with respect to its inputs: no_grad would break it, so it is no evaluation to
    report; the same loop without the attack is one."""
    check(HEAD + source(
        """
        class Trainer:
            def __init__(self, model: nn.Module, attacks, lip):
                self.model = model
                self.attacks = attacks
                self.lip = lip

            def adv_validate(self, loader):
                self.model.eval()
                correct = 0
                for images, labels in loader:
                    pred = self.model(images)
                    correct += (pred.argmax(1) == labels).sum().item()
                    for attack in self.attacks.values():
                        adv = attack.attack(images, labels)
                        correct += (self.model(adv).argmax(1) == labels).sum().item()
                return correct

            def record_lip(self, images, pred):
                perturbation = self.lip.perturb(images)
                return (self.model(images + perturbation) - pred).norm().item()

            def lip_validate(self, loader):
                self.model.eval()
                total = 0.0
                for images, labels in loader:
                    pred = self.model(images)
                    total += self.record_lip(images, pred)
                return total

            def plain_validate(self, loader):
                self.model.eval()
                correct = 0
                for images, labels in loader:
                    pred = self.model(images)  # flag: VL202
                    correct += (pred.argmax(1) == labels).sum().item()
                return correct
        """
    ))


def test_a_forward_whose_output_is_returned_is_the_callers_to_judge():
    """A model function handed to a converter switches its layer to eval and returns the forward's output: the
    caller takes the graph with it, so the waste is not proven (preview only); the same forward reduced to a
    number before it is returned is."""
    check(HEAD + source(
        """
        def model_func(wrapped_import, inputs):
            conformer = wrapped_import("conformer")
            layer = conformer.ConvModule(dim=19)
            layer.eval()
            x = layer(inputs) + inputs  # flag: VL201
            return x


        def score(layer: nn.Module, inputs):
            layer.eval()
            x = layer(inputs) + inputs  # flag: VL202
            return x.sum().item()
        """
    ))


def test_a_callee_that_picks_its_grad_mode_by_a_training_flag_is_its_own_judge():
    """A trainer's ``_forward`` records only while ``self.training`` is set and runs under no_grad otherwise:
    the validation loop that calls it builds no graph; one whose helper always records does."""
    check(HEAD + source(
        """
        class Trainer:
            def __init__(self, model: nn.Module, loader):
                self.model = model
                self.loader = loader
                self.training = True

            def _forward(self, batch):
                if self.training:
                    return self.model(batch)
                with torch.no_grad():
                    return self.model(batch)

            def _always(self, batch):
                return self.model(batch)

            def validate(self):
                self.model.eval()
                self.training = False
                total = 0.0
                for batch in self.loader:
                    total += self._forward(batch).sum().item()
                return total

            def validate_always(self):
                self.model.eval()
                total = 0.0
                for batch in self.loader:
                    total += self._always(batch).sum().item()  # flag: VL202
                return total
        """
    ))


def test_a_block_switched_off_by_a_constant_condition_never_runs():
    """``if 'slow test' and False:`` holds a test that never runs: no finding inside it; the same test in a block
    that runs is reported."""
    check(HEAD + source(
        """
        if 'get_max_index test' and False:
            layer = nn.Linear(3, 2)
            x = torch.randn(4, 3)
            layer.eval()
            print(layer(x))

        if 'param protection test' and True:
            layer = nn.Linear(3, 2)
            x = torch.randn(4, 3)
            layer.eval()
            print(layer(x))  # flag: VL202
        """
    ))


def test_a_write_through_data_keeps_no_graph():
    """An EMA codebook updated through ``.data`` (``self.ema_embed.data.mul_(d).add_(dw)``) writes into a detached
    alias, which autograd does not record; the same update on the buffer itself keeps every step's graph."""
    check(HEAD + source(
        """
        class Quantizer(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)
                self.register_buffer("ema_embed", torch.zeros(4, 4))
                self.register_buffer("ema_raw", torch.zeros(4, 4))

            def forward(self, x):
                dw = self.proj(x).t() @ x
                self.ema_embed.data.mul_(0.99).add_(dw, alpha=0.01)
                self.ema_embed.data[0] += dw[0]
                self.ema_raw.mul_(0.99).add_(dw, alpha=0.01)  # flag: VL101
                return dw
        """
    ))


def test_layers_whose_parameters_are_all_frozen_record_nothing():
    """A spiking network trained by STDP: its layers make their weights with ``nn.Parameter(w,
    requires_grad=False)``, so no forward through them (one at a time, in a ModuleList walked or indexed, held on
    the object) records a graph, and ``no_grad`` would save nothing (round O). The same network whose layer makes
    a trainable weight records one in its evaluation."""
    check(HEAD + source(
        """
        class Frozen(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.weights = nn.Parameter(torch.rand(n, n), requires_grad=False)

            def forward(self, x):
                return x @ self.weights


        class Trainable(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.weights = nn.Parameter(torch.rand(n, n))

            def forward(self, x):
                return x @ self.weights


        class SpikingExperiment:
            def __init__(self, sizes, loader):
                self.layers = nn.ModuleList([Frozen(n) for n in sizes])
                self.decision = Frozen(10)
                self.loader = loader

            def forward(self, spikes):
                for i, layer in enumerate(self.layers):
                    spikes = layer(spikes).sign()
                return self.layers[-1](spikes)

            def evaluate(self):
                winners = []
                for spikes, target in self.loader:
                    out = self.decision(self.forward(spikes))
                    winners.append(out.argmax().item())
                return winners


        class TrainedExperiment:
            def __init__(self, sizes, loader):
                self.layers = nn.ModuleList([Trainable(n) for n in sizes])
                self.loader = loader

            def forward(self, spikes):
                for i, layer in enumerate(self.layers):
                    spikes = layer(spikes).sign()
                return spikes

            def evaluate(self):
                winners = []
                for spikes, target in self.loader:
                    out = self.forward(spikes)  # flag: VL201
                    winners.append(out.argmax().item())
                return winners
        """
    ))


def test_a_branch_shown_by_isinstance_to_hold_a_number_carries_nothing():
    """``ce += loss if isinstance(loss, int) else loss.item()`` adds an int or a float, never a tensor (round O);
    the same sum without the ``.item()`` keeps every step's graph."""
    check(HEAD + source(
        """
        def run(model, loader, optimizer):
            ce_losses, kept = 0, 0
            for x, y in loader:
                loss = model(x, y)
                loss.backward()
                optimizer.step()
                ce_losses += loss if isinstance(loss, int) else loss.item()
                kept += loss if isinstance(loss, int) else loss  # flag: VL101
            return ce_losses, kept
        """
    ))


def test_a_value_bound_afresh_earlier_in_the_iteration_is_no_accumulator():
    """``pred = sample(model, x)`` then, in a nested block, ``pred = image + pred``: every pass that reaches the
    update starts from the value bound a few lines above in the same iteration, so nothing carries over (round O);
    the same update of a value bound before the loop adds every step's graph to it."""
    check(HEAD + source(
        """
        def train(model, loader, optimizer, delta):
            running = 0
            for step, (image, target) in enumerate(loader):
                loss = model(image, target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if step % 10 == 0:
                    scaled = loss * 2
                    scaled = scaled[0]
                    if delta:
                        scaled = image + scaled
                    running = running + scaled  # flag: VL101
            return running
        """
    ))


def test_a_forward_that_trains_needs_recording_whatever_it_returns():
    """An explainer whose forward fits a mask by backward passes and hands back the mask detached: calling it after
    ``eval()`` is no evaluation that wastes a graph (torch_geometric's GNNExplainer); a forward that only computes
    the same detached result is one."""
    check(HEAD + source(
        """
        class Explainer(nn.Module):
            def __init__(self):
                super().__init__()
                self.mask = nn.Parameter(torch.ones(4))

            def forward(self, model, x):
                optimizer = torch.optim.Adam([self.mask], lr=0.01)
                for _ in range(10):
                    loss = model(x * self.mask).sum()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                return self.mask.detach()


        class Scorer(nn.Module):
            def __init__(self):
                super().__init__()
                self.mask = nn.Parameter(torch.ones(4))

            def forward(self, model, x):
                return model(x * self.mask).argmax(-1)


        class Wrapper:
            def __init__(self, model):
                self.model = model
                self.explainer = Explainer()
                self.scorer = Scorer()

            def explain(self, x):
                self.model.eval()
                mask = self.explainer(self.model, x)
                return mask.numpy()

            def score(self, x):
                self.model.eval()
                best = self.scorer(self.model, x)  # flag: VL202
                return best.numpy()
        """
    ))
