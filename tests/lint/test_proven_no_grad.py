"""missing-no-grad in two strengths: VL202 where the evidence does not rest on names (a module called directly, in
the code that drives the evaluation itself), VL201 for the rest. Each source marks what must be reported with
which code (``# flag: VL202``); a line reported with the other code, or not at all, fails."""

from __future__ import annotations

import pytest

from mechanisms import check, source
from vramlens.lint import lint_source
from vramlens.lint.catalog import BY_CODE

HEAD = "import torch\nimport torch.nn as nn\n\n"

PROVEN = [
    """
    def validate(model: nn.Module, val_loader):
        model.eval()
        total = 0.0
        for x, y in val_loader:
            total += (model(x) - y).abs().mean().item()  # flag: VL202
        return total
    """,
    """
    class Trainer:
        def __init__(self, model: nn.Module):
            self.model = model
        def infer(self, x):
            return self.model(x)  # flag: VL201
        def evaluation_step(self, x, training=False):
            self.model.train(training)
            return self.infer(x).argmax(-1)  # flag: VL202
    """,
    """
    class Runner:
        def __init__(self, net: nn.Module, loader):
            self.net, self.loader = net, loader
        def _eval_step(self, x):
            return self.net(x).sum().item()  # flag: VL202
        def _eval_epoch(self):
            self.net.eval()
            for x in self.loader:
                self._eval_step(x)  # flag: VL202
    """,
    """
    net = nn.Linear(4, 4)
    net.eval()
    for x in test_loader:
        print(net(x).sum().item())  # flag: VL202
    """,
    # detached on the way back, the output hands no graph to a caller
    """
    def predict(model: nn.Module, x):
        model.eval()
        out = model(x)  # flag: VL202
        return out.detach().flatten(1)
    """,
    # an object that holds its model in eval mode and trains nowhere: each of its methods evaluates, whatever
    # its name, even one that returns what the model computed
    """
    class ImageEmbedder:
        def __init__(self, model: nn.Module):
            self.model = model
            self.model.eval()
        def get_image_embeddings(self, batches):
            found = []
            for batch in batches:
                found.append(self.model(batch).cpu())  # flag: VL202, VL102
            return torch.cat(found)
    """,
    # the module's mode saved before the evaluation and given back after it: a restore, not training
    """
    class Predictor:
        def __init__(self, model: nn.Module):
            self.model = model
        def batch_predict(self, loader):
            was_training = self.model.training
            self.model.eval()
            preds = []
            for batch in loader:
                preds.append(self.model(batch).argmax(-1))  # flag: VL202
            self.model.train(was_training)
            return preds
    """,
    # switched back to training as the routine's last act: the evaluation hands the module back, it trains nothing
    """
    def evaluate(model: nn.Module, data):
        model.eval()
        total = 0.0
        for x, y in data:
            total += (model(x) - y).abs().mean().item()  # flag: VL202
        model.train()
        return total
    """,
    # a script's model, switched to eval mode by the script itself in a file that trains nowhere: every function
    # calling it evaluates, whatever its name
    """
    from transformers import AutoModel
    model = AutoModel.from_pretrained("bert-base-uncased").cuda().eval()
    def predict(batch):
        return model(**batch).logits.argmax(-1)  # flag: VL202
    def classify(x):
        probs = model(x).softmax(-1)[0]  # flag: VL202
        return {str(i): float(p) for i, p in enumerate(probs)}
    """,
    # a loop over a parameter every caller passes validation or test data to
    """
    def epoch_loss(net: nn.Module, loader):
        total = 0.0
        for x, y in enumerate(loader):
            total += (net(x) - y).abs().mean().item()  # flag: VL202
        return total
    def report(model: nn.Module, loaders):
        print(epoch_loss(model, loaders["val"]), epoch_loss(model, test_loader))
    """,
]

NOT_PROVEN = [
    # the forward is a method judged by its name: the evidence is the name
    """
    def translate(model: nn.Module, src):
        model.eval()
        memory = model.encode(src)  # flag: VL201
        return memory.argmax(-1)
    """,
    # the module's own self(...) inside an inference method of a module
    """
    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
        def forward(self, x):
            return self.proj(x)
        def generate(self, x):
            for _ in range(3):
                x = self(x)  # flag: VL201
            return x.argmax(-1)
    """,
    # named for inference, but nothing in it drives an evaluation: its callers may be anywhere
    """
    model = nn.Linear(4, 4)
    def predict(x):
        return model(x).argmax(dim=-1)  # flag: VL201
    """,
    # a module class of the file that makes no parameter: its forward records nothing of its own
    """
    class Mapper(nn.Module):
        def __init__(self, bits):
            super().__init__()
            self.register_buffer("codes", torch.arange(2 ** bits))
        def forward(self, x):
            return x @ self.codes.float()
    if __name__ == "__main__":
        mapper = Mapper(4)
        mapper.eval()
        out = mapper(torch.randn(3, 16))  # flag: VL201
        print(out.sum().item())
    """,
    # it drives an evaluation but hands the forward's output back as it came: a caller may backpropagate it
    """
    def predict(model: nn.Module, x):
        model.eval()
        out = model(x)  # flag: VL201
        return out
    """,
    # the script's model is trained in the file too: its eval mode is not held
    """
    model = nn.Linear(4, 4)
    model.eval()
    def predict(x):
        return model(x).argmax(-1)  # flag: VL201
    def classify(x):
        return {"p": float(model(x).softmax(-1)[0, 0])}  # flag: VL201
    def finetune(x, opt):
        model.train()
        model(x).sum().backward()
        opt.step()
    """,
    # switched back to training and then trained: only the region between the two switches is an evaluation
    # (reported there, with no decorator fix for the whole function)
    """
    def evaluate(model: nn.Module, data, opt):
        model.eval()
        total = 0.0
        for x, y in data:
            total += (model(x) - y).abs().mean().item()  # flag: VL202
        model.train()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return total
    """,
    # one caller passes training data: the loop is not an evaluation's
    """
    def epoch_loss(net: nn.Module, loader):
        total = 0.0
        for x, y in loader:
            total += (net(x) - y).abs().mean().item()  # flag: VL201
        return total
    def report(model: nn.Module):
        print(epoch_loss(model, val_loader), epoch_loss(model, train_loader))
    """,
    # a parameter of the same name is not the script's model
    """
    model = nn.Linear(4, 4)
    model.eval()
    def predict(model: nn.Module, x):
        return model(x).argmax(-1)  # flag: VL201
    """,
    # moved to the host, the output keeps its graph: `.cpu()` detaches nothing
    """
    def predict(model: nn.Module, x):
        model.eval()
        return model(x).cpu()  # flag: VL201
    """,
]

EVAL_OBJECT_NOT_ENOUGH = [
    # the object trains its model in another method: its eval mode is not held
    """
    class Tuner:
        def __init__(self, model: nn.Module, opt):
            self.model, self.opt = model, opt
            self.model.eval()
        def fit_step(self, x):
            self.model.train()
            loss = self.model(x).sum()
            loss.backward()
            self.opt.step()
        def get_embeddings(self, x):
            return self.model(x)
    """,
    # a model the object is handed, switched to eval where it is used, is judged where it is used
    """
    class Scorer:
        def prepare(self, model: nn.Module):
            model.eval()
        def get_scores(self, model: nn.Module, x):
            return model(x)
    """,
    # a method the object's model is called by (`encode`) is judged by its name: not reported for the object's
    # eval mode alone
    """
    class Retriever:
        def __init__(self, model: nn.Module):
            self.model = model
            self.model.eval()
        def lookup(self, queries):
            return self.model.encode(queries)
    """,
    # a helper the method hands to a library is judged by what calls it, not by the object's eval mode
    """
    class Inference:
        def __init__(self, model: nn.Module):
            self.model = model
            self.model.eval()
        def process_chunks(self, chunks):
            with torch.inference_mode():
                outputs = self.model(chunks)
            def convert(output, conversion: nn.Module):
                return conversion(output).cpu().numpy()  # flag: VL201
            return apply_to_each(convert, outputs, self.conversion)  # flag: VL201
    """,
]

FRAMEWORK_OFF = [
    # fairseq's trainer runs a task's valid_step inside torch.no_grad(), and the helper it calls with it
    """
    from fairseq.tasks import LegacyFairseqTask
    class SpeechTask(LegacyFairseqTask):
        def valid_step(self, sample, model, criterion):
            model.eval()
            out = self.valid_step_with_inference(sample, model)
            return out.item()
        def valid_step_with_inference(self, sample, model):
            for x in sample:
                model(x)
            return model(sample)
    """,
]


@pytest.mark.parametrize("text", PROVEN, ids=[f"proven{i}" for i in range(len(PROVEN))])
def test_a_module_called_in_the_code_that_drives_evaluation_is_proven(text):
    check(HEAD + source(text))


@pytest.mark.parametrize("text", NOT_PROVEN, ids=[f"named{i}" for i in range(len(NOT_PROVEN))])
def test_evidence_resting_on_names_stays_the_preview_check(text):
    check(HEAD + source(text))


@pytest.mark.parametrize("text", EVAL_OBJECT_NOT_ENOUGH, ids=[f"eval-object{i}" for i in range(len(EVAL_OBJECT_NOT_ENOUGH))])
def test_an_objects_eval_mode_proves_only_its_own_methods_direct_forwards(text):
    check(HEAD + source(text))


@pytest.mark.parametrize("text", FRAMEWORK_OFF, ids=[f"framework{i}" for i in range(len(FRAMEWORK_OFF))])
def test_hooks_a_framework_runs_without_grad_are_not_reported(text):
    check(HEAD + source(text))


def test_test_support_code_is_not_reported():
    text = HEAD + source(PROVEN[0])
    assert [f.code for f in lint_source(text, "pkg/testing/asserts.py", preview=True)] == []
    assert [f.code for f in lint_source(text, "tests/test_eval.py", preview=True)] == []
    assert [f.code for f in lint_source(text, "pkg/eval.py", preview=True)] == ["VL202"]


def test_both_codes_are_one_rule_and_only_the_proven_one_is_on_by_default():
    assert BY_CODE["VL201"].rule == BY_CODE["VL202"].rule == "missing-no-grad"
    text = HEAD + source(PROVEN[0])
    assert [f.code for f in lint_source(text, "v.py")] == (["VL202"] if not BY_CODE["VL202"].preview else [])
    assert [f.code for f in lint_source(text, "v.py", select=["missing-no-grad"])] == ["VL202"]


def test_the_proven_finding_offers_the_decorator_fix():
    finding = next(f for f in lint_source(HEAD + source(PROVEN[0]), "v.py", preview=True) if f.code == "VL202")
    assert finding.fixes and finding.fixes[0].title.startswith("Decorate `validate`")


def test_switching_back_to_training_at_the_end_keeps_the_whole_routine_an_evaluation():
    """``model.train()`` as the last act: the decorator fix covers the routine; with training after it, only the
    region between the switches is wrapped."""
    restored = next(t for t in PROVEN if "model.train()\n        return total" in t)
    trained = next(t for t in NOT_PROVEN if "opt.step()" in t and "model.train()" in t)
    titles = [f.fixes[0].title for f in lint_source(HEAD + source(restored), "v.py", preview=True) if f.code == "VL202"]
    assert titles == ["Decorate `evaluate` with @torch.no_grad()"]
    titles = [f.fixes[0].title for f in lint_source(HEAD + source(trained), "v.py", preview=True)
              if f.code == "VL202" and f.fixes]
    assert all(t.startswith("Wrap in `with torch.no_grad():`") for t in titles)
