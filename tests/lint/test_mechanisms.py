"""One test per mechanism of the engine, each over several shapes of the construct it handles.

Each source marks the lines that must be reported (``# flag: VL102``); everything else in it is a
look-alike that must stay silent (mechanisms.py).
"""

from __future__ import annotations

import pytest

from mechanisms import check, source

HEAD = "import torch\nimport torch.nn as nn\n\n"


def cases(*texts: str) -> list[str]:
    return [HEAD + source(t) for t in texts]


def ids(texts: list[str]) -> list[str]:
    return [f"shape{i}" for i in range(len(texts))]


# --- evidence over names: what counts as a forward pass -----------------------------------------------------

FORWARD_EVIDENCE = cases(
    """
    class Net(nn.Module):
        def forward(self, x):
            return x
    def train(loader):
        net = Net()
        keep = []
        for x in loader:
            keep.append(net(x))  # flag: VL102
    """,
    """
    def train(loader):
        lin = nn.Linear(4, 4)
        keep = []
        for x in loader:
            keep.append(lin(x))  # flag: VL102
    """,
    """
    import timm
    def train(loader):
        m = timm.create_model("resnet50")
        keep = []
        for x in loader:
            keep.append(m(x))  # flag: VL102
    """,
    """
    def train(thing, loader):
        thing.train()
        keep = []
        for x in loader:
            keep.append(thing(x))  # flag: VL102
    """,
    """
    def train(thing: nn.Module, loader):
        keep = []
        for x in loader:
            keep.append(thing(x))  # flag: VL102
    """,
    """
    def run(path, loader):
        scripted = torch.jit.load(path)
        keep = []
        for x in loader:
            keep.append(scripted(x))  # flag: VL102
    """,
    """
    def step(thing, x, keep):
        keep.append(thing(x))
    def main(loader):
        keep = []
        for x in loader:
            step(nn.Linear(2, 2), x, keep)
    """,
    """
    class Trainer:
        def __init__(self, encoder):
            self.encoder = encoder.to("cuda")
            self.history = []
        def fit(self, loader):
            for x in loader:
                self.history.append(self.encoder(x))  # flag: VL102
    """,
)


@pytest.mark.parametrize("text", FORWARD_EVIDENCE, ids=ids(FORWARD_EVIDENCE))
def test_a_forward_pass_is_a_call_of_something_known_to_be_a_module(text):
    check(text)


NAMES_ARE_NOT_EVIDENCE = cases(
    """
    def train(loader, model_fn):
        keep = []
        for x in loader:
            keep.append(module_available(x))
            keep.append(unwrap_model(x))
            keep.append(resolve_act_layer(x))
            keep.append(_decode_block_str(x))
    """,
    """
    def test_model_builder(loader):
        keep = []
        for x in loader:
            keep.append(test_resnet(x))
    """,
    """
    def report(loader, module_sizes):
        totals = {}
        for name, size in module_sizes.items():
            totals[name] = size
    """,
    """
    class Runner(object):
        def forward(self, x):
            return x
    def train(loader):
        r = Runner()
        keep = []
        for x in loader:
            keep.append(r(x))
    """,
    """
    from typing import Type
    def build(layer: Type[nn.Module], loader):
        keep = []
        for x in loader:
            keep.append(layer(x))
    """,
)


@pytest.mark.parametrize("text", NAMES_ARE_NOT_EVIDENCE, ids=ids(NAMES_ARE_NOT_EVIDENCE))
def test_names_alone_are_not_evidence_of_a_forward_pass(text):
    check(text)


BACKWARD_EVIDENCE = cases(
    """
    def train(model, loader, opt):
        history = []
        for x, y in loader:
            loss = model(x).mean()
            loss.backward()
            opt.step()
            history.append(loss)  # flag: VL102
    """,
    """
    def train(net, loss_fn, loader, opt):
        total = 0
        for x, y in loader:
            preds = net(x)
            loss = loss_fn(preds, y)
            total += loss  # flag: VL101
            loss.backward()
    """,
    """
    def train(model, loader, opt):
        outputs = []
        for batch in loader:
            output = model(batch)
            output["loss"].backward()
            output["loss"] = output["loss"].detach()
            outputs.append(output)
    """,
    """
    def train(model, train_loader, eval_loader, accelerator):
        for batch in train_loader:
            loss = model(batch).loss
            accelerator.backward(loss)
        losses = []
        for batch in eval_loader:
            with torch.no_grad():
                outputs = model(batch)
            loss = outputs.loss
            losses.append(loss)
    """,
)


@pytest.mark.parametrize("text", BACKWARD_EVIDENCE, ids=ids(BACKWARD_EVIDENCE))
def test_a_backpropagated_value_carries_graph_and_its_producers_are_differentiable(text):
    check(text)


# --- grad-mode contexts --------------------------------------------------------------------------------------

NO_GRAD_CONTEXTS = cases(
    """
    import functools
    def no_grad_wrapper(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with torch.no_grad():
                return fn(*args, **kwargs)
        return wrapper
    @no_grad_wrapper
    def predict(model: nn.Module, x):
        return model(x)
    """,
    """
    from contextlib import contextmanager
    @contextmanager
    def evaluating():
        with torch.no_grad():
            yield
    def evaluate(model: nn.Module, loader):
        with evaluating():
            for x in loader:
                model(x)
    """,
    """
    nograd = torch.no_grad()
    @nograd
    def predict(model: nn.Module, x):
        return model(x)
    """,
    """
    from utils import smart_inference_mode
    @smart_inference_mode()
    def run(model: nn.Module, loader):
        for x in loader:
            model(x)
    """,
    """
    from contextlib import ExitStack
    def evaluate(model: nn.Module, loader):
        with ExitStack() as stack:
            stack.enter_context(torch.no_grad())
            for x in loader:
                model(x)
    """,
    """
    def evaluate(model: nn.Module, loader):
        for x in loader:
            model(x)
    def main(model, loader):
        with torch.no_grad():
            evaluate(model, loader)
    """,
    """
    def evaluate(model: nn.Module, loader):
        for x in loader:
            model(x)
    def main():
        evaluate(nn.Linear(2, 2), [])
    with torch.no_grad():
        main()
    """,
    """
    class Pipeline:
        def __init__(self):
            self.model = nn.Linear(2, 2)
        @torch.no_grad()
        def __call__(self, x):
            return self.predict(x)
        def predict(self, x):
            return self.model(x)
    """,
    """
    from transformers import AutoModelForCausalLM
    from diffusers import StableDiffusionPipeline
    from detectron2.engine import DefaultPredictor
    def sample(loader, cfg):
        model = AutoModelForCausalLM.from_pretrained("x")
        pipe = StableDiffusionPipeline.from_pretrained("y")
        predictor = DefaultPredictor(cfg)
        keep = []
        for x in loader:
            keep.append(model.generate(x))
            keep.append(pipe(x).images[0])
            keep.append(predictor(x))
    """,
    """
    from diffusers import DiffusionPipeline
    def log_validation(pipeline, prompts):
        pipeline = pipeline.to("cuda")
        pipeline.set_progress_bar_config(disable=True)
        images = []
        for prompt in prompts:
            images.append(pipeline(prompt).images[0])
        return images
    def main(prompts):
        log_validation(DiffusionPipeline.from_pretrained("x"), prompts)
    """,
    """
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
        def forward(self, x):
            return self.predict(x)
        def predict(self, x):
            return self.fc(x)
    """,
    """
    import lightning as L
    class Strategy:
        def validation_step(self, module, batch):
            return module.validation_step(batch)
        def predict_step(self, model: nn.Module, batch):
            return model(batch)
    """,
)


@pytest.mark.parametrize("text", NO_GRAD_CONTEXTS, ids=ids(NO_GRAD_CONTEXTS))
def test_grad_mode_switched_off_elsewhere_is_seen(text):
    check(text)


def test_missing_no_grad_is_still_found_when_one_caller_records():
    check(HEAD + source("""
        def evaluate(model: nn.Module, loader):
            for x in loader:
                model(x)  # flag: VL201
        def main(model, loader):
            with torch.no_grad():
                evaluate(model, loader)
            evaluate(model, loader)
        """))


# --- taint follows values ------------------------------------------------------------------------------------

TAINT_FLOW = cases(
    """
    def train(model: nn.Module, opt, loader, accelerator):
        model, opt, loader = accelerator.prepare(model, opt, loader)
        names = []
        for batch in loader:
            names.append(batch)
            names.append(opt)
    """,
    """
    def train(model: nn.Module, loader):
        order = {}
        for i, x in enumerate(loader):
            out = model(x)
            order[i] = i
    """,
    """
    def collect(model: nn.Module):
        params = []
        for name, p in model.named_parameters():
            params.append(p)
            params.append(name)
        return params
    """,
    """
    def train(model: nn.Module, loader):
        keep = []
        for x in loader:
            out = model(x)
            with torch.no_grad():
                out = model(x)
            keep.append(out)
    """,
    """
    def train(rnn: nn.Module, loader, h):
        for x in loader:
            h.detach_()
            out, h = rnn(x, h)
    """,
    """
    def train(rnn: nn.Module, loader, hidden):
        for x in loader:
            hidden[0].detach_()
            hidden[1].detach_()
            out, hidden = rnn(x, hidden)
    """,
    """
    def train(model: nn.Module, loader):
        keep = []
        for x, y in loader:
            keep.append(y)
            out = model(x)
            keep.append(out)  # flag: VL102
    """,
)


@pytest.mark.parametrize("text", TAINT_FLOW, ids=ids(TAINT_FLOW))
def test_taint_spreads_only_where_graph_flows(text):
    check(text)


def test_a_reinforce_buffer_that_another_function_backpropagates_and_clears_is_intentional():
    check(HEAD + source("""
        class Policy(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)
                self.saved_log_probs = []
            def forward(self, x):
                return self.fc(x)
        policy = Policy()
        def select_action(state):
            probs = policy(state)
            policy.saved_log_probs.append(probs.log())
        def finish_episode(optimizer):
            policy_loss = []
            for log_prob in policy.saved_log_probs:
                policy_loss.append(-log_prob)
            loss = torch.cat(policy_loss).sum()
            loss.backward()
            del policy.saved_log_probs[:]
        def main(env):
            for episode in range(1000):
                select_action(env.reset())
                finish_episode(None)
        """))


# --- recurrent state, retained graphs in loops, empty_cache ---------------------------------------------------

def test_recurrent_state_is_judged_by_evidence():
    check(HEAD + source("""
        import jax
        def train(rnn: nn.Module, loader, state, h):
            for batch in loader:
                batch = move_to_device(batch, "cuda")
                state, metrics = train_step(state, batch)
                out, h = rnn(batch, h)  # flag: VL106
        """))


RETAIN_GRAPH = cases(
    """
    def train(model: nn.Module, loader, opt):
        for x in loader:
            out = model(x)
            gp = torch.autograd.grad(out.sum(), x, retain_graph=True, create_graph=True)[0]
            (out.mean() + gp.norm()).backward()
    """,
    """
    def gradient_penalty(d: nn.Module, x):
        out = d(x)
        return torch.autograd.grad(out.sum(), x, create_graph=True)[0].norm()
    def train(d, loader):
        for x in loader:
            (d(x).mean() + gradient_penalty(d, x)).backward()
    """,
    """
    def penalty_step(d: nn.Module, x):
        loss = d(x).mean()
        loss.backward(create_graph=True)  # flag: VL301
    def train(d, loader):
        for x in loader:
            penalty_step(d, x)
    """,
    """
    def train(model: nn.Module, loader):
        for x in loader:
            loss = model(x).mean()
            loss.backward(retain_graph=True)  # flag: VL301
    """,
    """
    class Penalty:
        def __init__(self, dis):
            self.dis = dis
        def gradient_penalty(self, merged):
            merged.requires_grad = True
            out = self.dis(merged)
            out.backward(gradient=torch.ones_like(out), create_graph=True)  # flag: VL301
            return merged.grad.norm()
        def input_penalty(self, merged):
            merged.requires_grad = True
            out = self.dis(merged)
            out.backward(gradient=torch.ones_like(out), create_graph=True, inputs=[merged])
            return merged.grad.norm()
        def autograd_penalty(self, merged):
            out = self.dis(merged)
            return torch.autograd.grad(out.sum(), merged, create_graph=True)[0].norm()
        def once(self, loss):
            loss.backward(retain_graph=True)
    """,
)


@pytest.mark.parametrize("text", RETAIN_GRAPH, ids=ids(RETAIN_GRAPH))
def test_retain_graph_is_reported_when_nothing_frees_the_graph_in_the_iteration(text):
    check(text)


EMPTY_CACHE = cases(
    """
    import gc
    def log_validation(trackers):
        for tracker in trackers:
            tracker.log(1)
            gc.collect()
    """,
    """
    def load(model, shard_files):
        for shard in shard_files:
            model.load_state_dict(torch.load(shard))
            torch.cuda.empty_cache()
    """,
    """
    def find_batch_size(model: nn.Module, batch_size):
        while batch_size:
            try:
                torch.cuda.empty_cache()
                model(torch.zeros(batch_size))
                break
            except torch.cuda.OutOfMemoryError:
                batch_size //= 2
    """,
    """
    def train_epoch(model: nn.Module, loader, opt):
        for x in loader:
            model(x).mean().backward()
            opt.step()
    def fit(model, loader, opt, epochs):
        for epoch in range(epochs):
            train_epoch(model, loader, opt)
            torch.cuda.empty_cache()
    """,
    """
    def train(model: nn.Module, loader, opt):
        for x in loader:
            model(x).mean().backward()
            opt.step()
            torch.cuda.empty_cache()  # flag: VL401
    """,
)


@pytest.mark.parametrize("text", EMPTY_CACHE, ids=ids(EMPTY_CACHE))
def test_empty_cache_is_reported_only_in_hot_loops(text):
    check(text)


# --- the misses of issue 13: general constructs followed now ---------------------------------------------------

MISSES = cases(
    """
    def train(model: nn.Module, loader):
        losses = []
        for x in loader:
            losses.append(model(x).mean())  # flag: VL102
            losses[-1].backward()
    """,
    """
    def train(step, n):
        losses = {}
        for i in range(1, n):
            loss = step(i)
            losses[i] = loss  # flag: VL103
            losses[i - 1].backward()
    """,
    """
    def train(model: nn.Module, loader, a=0.9):
        ema = None
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            if ema is None:
                ema = loss
            else:
                ema = a * loss + (1 - a) * ema  # flag: VL101
    """,
    """
    class AverageMeter:
        def __init__(self):
            self.sum = 0
        def update(self, val):
            self.sum += val
    def train(model: nn.Module, loader):
        meter = AverageMeter()
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            meter.update(loss)  # flag: VL101
            meter.update(loss.item())
    """,
    """
    class Recorder:
        def __init__(self):
            self.outputs = []
        def on_batch_end(self, outputs):
            self.outputs.append(outputs)
    def fit(model: nn.Module, loader, recorder: Recorder):
        for x in loader:
            out = model(x)
            out.mean().backward()
            recorder.on_batch_end(out)  # flag: VL102
    """,
    """
    class ImagePool:
        def __init__(self):
            self.images = []
        def push_and_pop(self, image):
            self.images.append(image)
            return image
    pool = ImagePool()
    def train(netG: nn.Module, loader):
        for x in loader:
            fake = netG(x)
            pool.push_and_pop(fake)  # flag: VL102
    """,
    """
    cache = {}
    def remember(key, value):
        cache[key] = value.clone()
    def train(model: nn.Module, loader):
        for i, x in enumerate(loader):
            remember(i, model(x))  # flag: VL103
    """,
    """
    class Trainer:
        def __init__(self, model: nn.Module):
            self.model = model
        def infer(self, x):
            return self.model(x)  # flag: VL201
        def evaluate(self, loader):
            for x in loader:
                self.infer(x)  # flag: VL201
    """,
    """
    class Trainer:
        def __init__(self, model: nn.Module):
            self.model = model
        def set_eval(self):
            self.model.eval()
        def run(self, batches):
            self.set_eval()
            for x in batches:
                self.model(x)  # flag: VL202
    """,
    """
    def evaluate(model: nn.Module, loader):
        for x in loader:
            model(x)  # flag: VL201
    evaluate(nn.Linear(2, 2), [])
    """,
    """
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.history = []
        def forward(self, x):
            return self.fc(x)
        def fit(self, loader, opt):
            for x in loader:
                loss = self(x).mean()
                loss.backward()
                opt.step()
                self.history.append(loss)  # flag: VL102
    """,
)


@pytest.mark.parametrize("text", MISSES, ids=ids(MISSES))
def test_misses_of_real_bug_fixes_are_followed(text):
    check(text)


HOST_TENSORS = cases(
    """
    def train(model: nn.Module, loader, dev, opt):
        for x in loader:
            w = torch.FloatTensor(4, 4).fill_(0).to(dev)  # flag: VL501
            model(x * w).mean().backward()
            opt.step()
    """,
    """
    def weights(dev):
        return torch.tensor([1.0, 2.0]).to(dev)  # flag: VL501
    def train(model: nn.Module, loader, dev, opt):
        for x in loader:
            model(x * weights(dev)).mean().backward()
            opt.step()
    """,
    """
    def train(model: nn.Module, loader, dev, opt):
        for x in loader:
            w = torch.tensor([i * 0.5 for i in range(4)]).to(dev)  # flag: VL501
            model(x * w).mean().backward()
            opt.step()
    """,
    """
    def train(model: nn.Module, loader, dev, opt):
        for x, labels in loader:
            y = torch.tensor(labels).to(dev)
            idx = x.argmax()
            t = torch.Tensor([[idx]]).to(dev)
            model(x).mean().backward()
            opt.step()
    """,
)


@pytest.mark.parametrize("text", HOST_TENSORS, ids=ids(HOST_TENSORS))
def test_host_built_constants_are_found_and_host_data_is_not_a_constant(text):
    check(text)


# --- summaries, recursion, tuple returns ----------------------------------------------------------------------

def test_a_recursive_detach_helper_returns_no_graph():
    check(HEAD + source("""
        def repackage(h):
            if isinstance(h, torch.Tensor):
                return h.detach()
            return tuple(repackage(v) for v in h)
        def train(rnn: nn.Module, loader, hidden):
            for x in loader:
                if x is None:
                    continue
                else:
                    hidden = repackage(hidden)
                    out, hidden = rnn(x, hidden)
        """))


def test_tuple_returns_are_summarised_per_position():
    check(HEAD + source("""
        def step(model: nn.Module, x):
            loss = model(x).mean()
            return loss, {"loss": loss.item()}
        def train(model, loader):
            logs = []
            for x in loader:
                loss, log = step(model, x)
                logs.append(log)
                logs.append(loss)  # flag: VL102
        """))


# --- autograd.Function contexts --------------------------------------------------------------------------------

def test_the_output_kept_on_ctx_is_reported_and_inputs_and_intermediates_are_not():
    check(HEAD + source("""
        class Direct(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                out = x * y
                ctx.inputs = (x, y)
                ctx.scale = x.size(0)
                ctx.mid = x * 2
                ctx.out = out  # flag: VL107
                return out
        class Helper:
            @staticmethod
            def keep(ctx, inputs, outputs):
                result, info = outputs
                ctx.info = int(info[0])
                ctx.result = result  # flag: VL107
        class Modern(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return x * 2, torch.tensor([1])
            @staticmethod
            def setup_context(ctx, inputs, outputs):
                Helper.keep(ctx, inputs, outputs)
        class Wrapped(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = x + 1
                ctx.view = to_dlpack(out)  # flag: VL107
                return out
        """))


# --- frozen modules ---------------------------------------------------------------------------------------------

def test_frozen_modules_make_no_graph_unless_given_adapters():
    check(HEAD + source("""
        def train(vae: nn.Module, unet: nn.Module, loader, opt):
            vae.requires_grad_(False)
            unet.requires_grad_(False)
            unet.add_adapter(None)
            latents_seen = []
            outputs_seen = []
            for x in loader:
                latents = vae.encode(x)
                latents_seen.append(latents)
                out = unet(latents)
                outputs_seen.append(out)  # flag: VL102
                out.mean().backward()
                opt.step()
        """))


def test_a_wrapper_module_that_makes_no_parameters_of_its_own_around_a_frozen_module_records_no_graph():
    check(HEAD + source("""
        class Wrapper(nn.Module):
            def __init__(self, model, args):
                super().__init__()
                self.model = model
                self.args = args
            def forward(self, x):
                return self.model(x)
        class WithHead(nn.Module):
            def __init__(self, model):
                super().__init__()
                self.model = model
                self.head = nn.Linear(4, 4)
            def forward(self, x):
                return self.head(self.model(x))
        def export(model: nn.Module, loader):
            for p in model.parameters():
                p.requires_grad = False
            kept = []
            wrapped = Wrapper(model, None)
            for x in loader:
                kept.append(Wrapper(model, None)(x))
                kept.append(wrapped(x))
                kept.append(WithHead(model)(x))  # flag: VL102
        """))


# --- dispatch to overrides, constructors, framework hooks ------------------------------------------------------

OVERRIDES = cases(
    """
    class Base(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(4, 4)
        def forward(self, x):
            return self.predict(x)
        def predict(self, x):
            return self.layer(x)
    class Sub(Base):
        def predict(self, x):
            return self.layer(x) * 2
    """,
    """
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.dfl = nn.Conv2d(4, 4, 1)
        def forward(self, x):
            if self.training:
                return x
            return self._inference(x)
        def _inference(self, x):
            return self.dfl(x)
    class Segment(Head):
        pass
    class SegmentWithMasks(Segment):
        def _inference(self, x):
            preds = super()._inference(x)
            return torch.cat([preds, x], 1)
    """,
    """
    class Runner:
        def __init__(self, model: nn.Module):
            self.model = model
        @torch.no_grad()
        def __call__(self, x):
            return self.infer(x)
        def infer(self, x):
            return self.model(x)
    class FastRunner(Runner):
        def infer(self, x):
            return self.model(x.half())
    class Evaluator:
        def __init__(self, model: nn.Module):
            self.model = model
        def run(self, x):
            return self.predict(x)
        def predict(self, x):
            return self.model(x)  # flag: VL201
    """,
)


@pytest.mark.parametrize("text", OVERRIDES, ids=ids(OVERRIDES))
def test_self_calls_reach_the_overrides_of_subclasses(text):
    """``self.predict(x)`` in a base's forward (or under its no_grad ``__call__``) runs a subclass's ``predict``
    too: the override is part of the forward, or runs without grad, like the base method."""
    check(text)


def test_a_dry_run_in_a_constructor_is_one_time_initialisation():
    check(HEAD + source("""
        class Detector(nn.Module):
            def __init__(self, backbone: nn.Module):
                super().__init__()
                self.model = backbone
                self.model.eval()
                s = 256
                self.stride = torch.tensor([s / x.shape[-2] for x in self.model(torch.zeros(1, 3, s, s))])
                self.model.train()
        def make(backbone: nn.Module):
            return Detector(backbone)
        def evaluate_config(backbone: nn.Module, cfg):
            detector = make(backbone)
            return cfg
        class Evaluator:
            def __init__(self, model: nn.Module):
                self.model = model
            def score(self, loader):
                self.model.eval()
                for x in loader:
                    y = self.model(x)  # flag: VL202
                    print(y.sum().item())
        """))


FRAMEWORK_HOOKS = cases(
    """
    from ultralytics.engine.predictor import BasePredictor
    class Predictor(BasePredictor):
        def inference(self, im):
            return self.generate(im)
        def generate(self, im):
            self.model.eval()
            return self.model.image_encoder(im)
        def explain(self, im):
            self.model.eval()
            return self.model.image_encoder(im)  # flag: VL201
    class VideoPredictor(Predictor):
        def inference(self, im):
            scores = []
            for batch in self.batches(im):
                scores.append(self.model(batch))
            return torch.cat(scores)
    """,
    """
    from ultralytics.engine.validator import BaseValidator
    class DetectionValidator(BaseValidator):
        def postprocess(self, preds):
            self.model.eval()
            return self.model(preds)
    from mylib import BaseValidator as Other
    class Checker(Other):
        def postprocess(self, preds):
            self.model.eval()
            return self.model(preds)  # flag: VL201
    """,
)


@pytest.mark.parametrize("text", FRAMEWORK_HOOKS, ids=ids(FRAMEWORK_HOOKS))
def test_hooks_that_a_framework_base_runs_without_grad(text):
    check(text)


# --- values that carry no graph ---------------------------------------------------------------------------------

NO_GRAPH_VALUES = cases(
    """
    def simulate(steps, policy):
        test = torch.ones(1, requires_grad=True)
        opt = torch.optim.SGD([{"params": test, "lr": 0.1}])
        sch = torch.optim.lr_scheduler.StepLR(opt, 10)
        lrs = []
        for step in range(steps):
            opt.step()
            lrs.append(opt.param_groups[0]["lr"])
            lrs.append(sch.get_last_lr())
            sch.step()
        return lrs
    """,
    """
    from torch.optim import AdamW
    def train(model: nn.Module, loader):
        opt = AdamW(model.parameters())
        seen = []
        for x in loader:
            loss = model(x).sum()
            loss.backward()
            opt.step()
            seen.append(opt.param_groups[0]["lr"])
            seen.append(loss)  # flag: VL102
    """,
    """
    def collate(model: nn.Module, batch, loader, pad):
        for k in batch:
            batch[k] = batch[k] + [pad] * 3
        labels = model.prepare_decoder_input_ids_from_labels(labels=torch.tensor(batch["labels"]))
        keep = {}
        for x, key in loader:
            keep[key] = labels
            keep[key] = keep[key][:2]
            keep[key] = keep[key] + model(x).sum()  # flag: VL101
    """,
)


@pytest.mark.parametrize("text", NO_GRAPH_VALUES, ids=ids(NO_GRAPH_VALUES))
def test_optimizers_prepared_inputs_and_rewritten_slots_carry_no_new_graph(text):
    check(text)


def test_an_input_stored_as_it_came_adds_no_graph_of_the_module():
    check(HEAD + source("""
        class Assigner(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)
            def forward(self, scores, strides):
                self.strides = strides
                hidden = self.proj(scores)
                self.hidden = hidden  # flag: VL105
                scaled = strides * 2
                self.scaled = scaled  # flag: VL105
                return hidden
        """))


RETURNS_ONLY_INPUTS = cases(
    """
    def _select(inputs, kernel, k):
        scores = kernel.diagonal()
        picked = []
        for _ in range(k):
            picked.append(torch.argmax(scores))
        return inputs[torch.stack(picked)]
    def allocate(inputs, covar: nn.Module, k):
        kernel = covar(inputs)  # flag: VL201
        return _select(inputs, kernel, k)
    def embed(inputs, covar: nn.Module):
        return covar(inputs)
    def remember(self, inputs, covar: nn.Module):
        self.kernel = covar(inputs)
        return inputs
    """,
    """
    import jax
    from diffusers import FlaxUNet2DConditionModel
    unet = FlaxUNet2DConditionModel.from_pretrained("x")
    def train_step(state, batch):
        def compute_loss(params):
            pred = unet.apply({"params": params}, batch)
            return ((pred - batch) ** 2).mean()
        grad_fn = jax.value_and_grad(compute_loss)
        loss, grad = grad_fn(state.params)
        return state.apply_gradients(grads=grad)
    """,
)


@pytest.mark.parametrize("text", RETURNS_ONLY_INPUTS, ids=ids(RETURNS_ONLY_INPUTS))
def test_a_forward_whose_graph_reaches_nothing_returned_is_inference(text):
    """Returning only (a selection of) what it was given keeps none of the graph the function recorded; JAX's
    value_and_grad is gradient work, and transformers' Flax classes are not torch modules."""
    check(text)


# --- containers whose elements a backward differentiates ------------------------------------------------------

DIFFERENTIATED_CONTAINERS = cases(
    """
    from functools import reduce
    def optimize(loss_function, tensors, optimizer):
        losses = []
        while True:
            optimizer.zero_grad()
            parts = loss_function(*tensors)
            losses.append(reduce(lambda x, y: x + y, parts))  # flag: VL102
            losses[-1].backward()
            optimizer.step()
    """,
    """
    def train(closure, optimizer, steps):
        losses = [None] * steps
        costs = [None] * steps
        losses[0], costs[0] = closure()
        i = 1
        while i < steps:
            optimizer.zero_grad()
            losses[i - 1].backward()
            losses[i] = None
            costs[i] = 0.0
            losses[i], costs[i] = optimizer.step(closure)  # flag: VL103
            i += 1
    """,
    """
    from functools import reduce
    def optimize(loss_function, tensors, optimizer):
        for step in range(100):
            losses = []
            optimizer.zero_grad()
            losses.append(reduce(lambda x, y: x + y, loss_function(*tensors)))
            losses[-1].backward()
            optimizer.step()
    """,
    """
    from functools import reduce
    def optimize(loss_function, tensors, optimizer):
        losses = []
        while True:
            optimizer.zero_grad()
            losses.append(reduce(lambda x, y: x + y, loss_function(*tensors)))
            torch.stack(losses).sum().backward()
            optimizer.step()
    """,
    """
    def train(closure, optimizer, steps):
        losses = [None] * steps
        costs = [None] * steps
        i = 1
        while i < steps:
            losses[i], costs[i] = optimizer.step(closure)
            i += 1
    """,
)


@pytest.mark.parametrize("text", DIFFERENTIATED_CONTAINERS, ids=ids(DIFFERENTIATED_CONTAINERS))
def test_what_goes_into_a_container_that_a_backward_reads_carries_graph(text):
    check(text)


# --- containers of modules --------------------------------------------------------------------------------------

MODULE_CONTAINERS = cases(
    """
    class Trainer:
        def __init__(self, model, optimizer, loader):
            self.model, self.optimizer, self.loader = model, optimizer, loader
        def _eval_step(self, z):
            return self.model["generator"](z).mean().item()  # flag: VL202
        def _eval_epoch(self):
            for key in self.model.keys():
                self.model[key].eval()
            for z in self.loader:
                self._eval_step(z)  # flag: VL202
    """,
    """
    class Trainer:
        def __init__(self, model, optimizer, loader):
            self.model, self.optimizer, self.loader = model, optimizer, loader
        def _eval_step(self, z):
            return self.model["generator"](z).mean().item()
        def _eval_epoch(self):
            for key in self.model.keys():
                self.model[key].to("cuda")
                self.optimizer[key].zero_grad()
            for z in self.loader:
                self._eval_step(z)
    """,
    """
    def evaluate(transforms, batches):
        for key in transforms:
            transforms[key].eval()
        for batch in batches:
            with torch.no_grad():
                out = transforms["main"](batch).mean().item()
    """,
)


@pytest.mark.parametrize("text", MODULE_CONTAINERS, ids=ids(MODULE_CONTAINERS))
def test_a_container_whose_elements_are_used_as_modules_holds_modules(text):
    check(text)


# --- evidence over names and types: summaries, metrics and floats ---------------------------------------------

SUMMARIES_BY_EVIDENCE = cases(
    """
    from collections import defaultdict
    class Trainer:
        def __init__(self, model: nn.Module):
            self.model = model
            self._stored = defaultdict(lambda: defaultdict(list))
        def get_batch_loss_metrics(self, batch):
            metrics = {}
            loss = self.model(batch).mean()
            metrics["eval_loss" if not self.model.training else "loss"] = loss.cpu()  # flag: VL102
            metrics["nll"] = loss.detach()
            return loss, metrics
        def compute_loss(self, model, inputs):
            loss, metrics = self.get_batch_loss_metrics(inputs)
            self.store_metrics(metrics)
            return (loss, metrics)
        def store_metrics(self, metrics, split="train"):
            for key, value in metrics.items():
                self._stored[split][key].append(value)
    """,
    """
    from collections import defaultdict
    from .utils import compute_metrics
    class Trainer:
        def __init__(self, model: nn.Module):
            self.model = model
            self._stored = defaultdict(lambda: defaultdict(list))
        def get_batch_loss_metrics(self, batch):
            loss = self.model(batch).mean()
            metrics = {"loss": loss.detach().cpu()}
            return loss, metrics
        def compute_loss(self, model, inputs):
            loss, metrics = self.get_batch_loss_metrics(inputs)
            self.store_metrics(metrics)
            self.store_metrics(compute_metrics(loss))
            return (loss, metrics)
        def store_metrics(self, metrics, split="train"):
            for key, value in metrics.items():
                self._stored[split][key].append(value)
    """,
    """
    class AverageMeter:
        def __init__(self):
            self.sum = 0.0
            self.count = 0
        def update(self, val: float, n: int = 1):
            self.sum += val * n
            self.count += n
    def train(model: nn.Module, loader, opt):
        meter = AverageMeter()
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            opt.step()
            meter.update(loss, x.shape[0])  # flag: VL101
            meter.update(loss.item(), x.shape[0])
    """,
)


@pytest.mark.parametrize("text", SUMMARIES_BY_EVIDENCE, ids=ids(SUMMARIES_BY_EVIDENCE))
def test_names_and_float_annotations_do_not_hide_graph_the_evidence_shows(text):
    check(text)


METER_UPDATES = cases(
    """
    from .misc import AverageMeter, MetricLogger
    class Runner:
        def __init__(self, model: nn.Module, opt):
            self.model, self.opt = model, opt
            self.losses = AverageMeter(["coarse", "refine"])
            self.logger = MetricLogger()
            self.history = {}
        def train_step(self, x):
            coarse, refine = self.model(x)
            loss = coarse.mean() + refine.mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.losses.update([coarse.mean() * 1000, refine.mean() * 1000])  # flag: VL101
            self.losses.update([coarse.mean().item(), refine.mean().item()])
            self.logger.update(loss=loss, coarse=coarse.mean())
            self.history.update({"loss": loss})  # flag: VL103
    """,
    """
    from .misc import AverageMeter
    class Meter:
        def __init__(self):
            self.total = 0.0
        def update(self, value):
            self.total += float(value)
    def train(model: nn.Module, loader, opt):
        meter = Meter()
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            opt.step()
            meter.update(loss)
            logs = {}
            logs.update({"loss": loss})
            step_meter = AverageMeter()
            step_meter.update(loss)
    """,
    """
    import torchmetrics
    from torchmetrics import MeanMetric
    def evaluate(model: nn.Module, loader, metrics):
        model.eval()
        mean = MeanMetric()
        accuracy = torchmetrics.Accuracy(task="binary")
        for x, y in loader:
            with torch.no_grad():
                scores = model(x)
            out = model(x)  # flag: VL202
            metrics.update(out, y)
            mean.update(out)
            accuracy.update(out, y)
    """,
)


@pytest.mark.parametrize("text", METER_UPDATES, ids=ids(METER_UPDATES))
def test_graph_handed_to_a_long_lived_meter_update_is_kept(text):
    check(text)


IN_PLACE_ACCUMULATION = cases(
    """
    class Policy:
        def __init__(self, model: nn.Module):
            self.model = model
            self.avg = torch.zeros(1)
            self.ema = torch.zeros(1)
        def loss(self, batch):
            sq = torch.mean(self.model(batch) ** 2)
            self.avg.add_(0.1 * (sq - self.avg))  # flag: VL101
            self.ema.mul_(0.9).add_(sq, alpha=0.1)  # flag: VL101
            self.ema.mul_(0.9).add_(sq.detach(), alpha=0.1)
            with torch.no_grad():
                self.avg.add_(0.1 * (sq - self.avg))
            local = torch.zeros(1)
            local.add_(sq)
            return sq
    """,
    """
    def train(model: nn.Module, ema: nn.Module, loader, opt):
        total = torch.zeros(1)
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            opt.step()
            total.add_(loss)  # flag: VL101
            for p_ema, p in zip(ema.parameters(), model.parameters()):
                p_ema.data.mul_(0.99).add_(p.data, alpha=0.01)
    """,
)


@pytest.mark.parametrize("text", IN_PLACE_ACCUMULATION, ids=ids(IN_PLACE_ACCUMULATION))
def test_in_place_adds_into_an_accumulator_are_accumulations(text):
    check(text)
