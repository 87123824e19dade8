"""Project-wide facts: what the linted file imports from other files of the project (lint/project/).

Each case is a small project written to tmp_path: the single-file engine gets it wrong (a finding that is
false, or a miss), the project index fixes it, and its twin, where the other file says the opposite, keeps
the single-file verdict.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vramlens.cli import main
from vramlens.lint import ChunkCache, lint_file, lint_source, project_root
from vramlens.lint.project import index as project_index_module
from vramlens.lint.project.index import HOPS, project_index


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def codes(path: Path, root: Path | None) -> list[tuple[int, str]]:
    """Every check's findings, the preview ones too (VL106 is one)."""
    return [(f.line, f.code) for f in lint_file(path, preview=True, root=root) if f.code != "VL000"]


# -- a base class of another file ---------------------------------------------------------------------
LIGHTNING_BASE = """\
import pytorch_lightning as pl


class BaseModule(pl.LightningModule):
    def configure_optimizers(self):
        return None
"""
PLAIN_BASE = """\
from torch import nn


class BaseModule(nn.Module):
    def configure_optimizers(self):
        return None
"""
KEEPS_OUTPUTS = """\
import torch
from .base import BaseModule


class LitModel(BaseModule):
    def __init__(self):
        super().__init__()
        self.model = torch.nn.Linear(4, 4)
        self.val_outputs = []

    def validation_step(self, batch, batch_idx):
        logits = self.model(batch)
        self.val_outputs.append(logits)
        return logits
"""


def test_a_lightning_base_class_in_another_file_makes_validation_step_a_per_batch_hook(tmp_path):
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": LIGHTNING_BASE, "pkg/model.py": KEEPS_OUTPUTS})
    model = root / "pkg" / "model.py"
    assert codes(model, None) == []  # alone, `BaseModule` is an unknown class: the epoch of logits is missed
    assert codes(model, root) == [(13, "VL102")]
    message = next(f.message for f in lint_file(model, root=root, preview=True) if f.code == "VL102")
    assert "Lightning" in message


def test_a_plain_module_base_in_another_file_changes_nothing(tmp_path):
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": PLAIN_BASE, "pkg/model.py": KEEPS_OUTPUTS})
    model = root / "pkg" / "model.py"
    assert codes(model, root) == codes(model, None) == []


def test_a_base_two_files_away_is_seen_and_one_further_is_not(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/root.py": LIGHTNING_BASE.replace("BaseModule", "RootModule"),
        "pkg/base.py": "from .root import RootModule\n\n\nclass BaseModule(RootModule):\n    pass\n",
        "pkg/model.py": KEEPS_OUTPUTS,
    }
    root = write(tmp_path, files)
    model = root / "pkg" / "model.py"
    assert HOPS == 2
    assert codes(model, root) == [(13, "VL102")]
    # A third file in the chain is past the bound: unknown, so nothing is reported.
    write(root, {
        "pkg/root.py": "from .far import FarModule\n\n\nclass RootModule(FarModule):\n    pass\n",
        "pkg/far.py": LIGHTNING_BASE.replace("BaseModule", "FarModule"),
    })
    assert codes(model, root) == []


MODULE_HELPERS = """\
from torch import nn
from .base import BaseNet


class Child(BaseNet):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 4)

    def encode(self, x):
        return self.encoder(x)
"""
MODULE_BASE = "from torch import nn\n\n\nclass BaseNet(nn.Module):\n    pass\n"
PLAIN_WRAPPER = "class BaseNet:\n    pass\n"


def test_a_module_base_in_another_file_makes_the_class_a_module(tmp_path):
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": MODULE_BASE, "pkg/child.py": MODULE_HELPERS})
    child = root / "pkg" / "child.py"
    assert (11, "VL201") in codes(child, None)  # alone, `Child` is no module: `encode` looks like inference
    assert codes(child, root) == []  # a module's own method is part of its forward, not an inference call


def test_a_plain_base_in_another_file_keeps_the_finding(tmp_path):
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": PLAIN_WRAPPER, "pkg/child.py": MODULE_HELPERS})
    child = root / "pkg" / "child.py"
    assert (11, "VL201") in codes(child, root)
    assert codes(child, root) == codes(child, None)


# -- a function of another file -----------------------------------------------------------------------
ACCUMULATES = """\
import torch
from .losses import batch_loss

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0
for x, y in loader:
    out = model(x)
    loss = torch.nn.functional.mse_loss(out, y)
    loss.backward()
    optimizer.step()
    total += batch_loss(out, y)
"""
RETURNS_GRAPH = """\
import torch


def batch_loss(out, y):
    return torch.nn.functional.mse_loss(out, y)
"""
RETURNS_NUMBER = """\
import torch


def batch_loss(out, y):
    return torch.nn.functional.mse_loss(out, y).item()
"""


def test_an_imported_helper_that_returns_graph_is_a_graph_kept_across_the_loop(tmp_path):
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/losses.py": RETURNS_GRAPH, "pkg/train.py": ACCUMULATES})
    train = root / "pkg" / "train.py"
    assert (12, "VL101") not in codes(train, None)  # alone: what the helper returns is unknown
    assert (12, "VL101") in codes(train, root)


def test_an_imported_helper_that_returns_a_number_adds_no_finding(tmp_path):
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/losses.py": RETURNS_NUMBER, "pkg/train.py": ACCUMULATES})
    train = root / "pkg" / "train.py"
    assert codes(train, root) == codes(train, None)
    assert (12, "VL101") not in codes(train, root)


def test_a_local_name_that_hides_the_import_is_not_the_imported_function(tmp_path):
    hidden = ACCUMULATES.replace("for x, y in loader:", "batch_loss = make_metric()\nfor x, y in loader:")
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/losses.py": RETURNS_GRAPH, "pkg/train.py": hidden})
    train = root / "pkg" / "train.py"
    assert codes(train, root) == codes(train, None)


INHERITED_STEP = """\
import torch
from .base import BaseTrainer


class Trainer(BaseTrainer):
    def run(self, loader):
        scores = 0
        for batch in loader:
            loss = self.model(batch).mean()
            loss.backward()
            self.optimizer.step()
            scores += self.score(batch)
        return scores
"""
BASE_TRAINER = """\
import torch


class BaseTrainer:
    def __init__(self):
        self.model = torch.nn.Linear(4, 4)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def score(self, batch):
        return self.model(batch).mean()
"""


def test_a_method_inherited_from_a_class_of_another_file_is_judged_by_its_summary(tmp_path):
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": BASE_TRAINER, "pkg/trainer.py": INHERITED_STEP})
    trainer = root / "pkg" / "trainer.py"
    facts_free = codes(trainer, None)
    with_project = codes(trainer, root)
    assert (12, "VL101") not in facts_free
    assert (12, "VL101") in with_project  # `score` returns a forward's output with its graph, every batch
    detached = BASE_TRAINER.replace("    def score(self, batch):\n        return self.model(batch).mean()",
                                    "    def score(self, batch):\n        return self.model(batch).mean().item()")
    write(root, {"pkg/base.py": detached})
    assert (12, "VL101") not in codes(trainer, root)


# -- bounds: the root, the cache ----------------------------------------------------------------------
def _reads(monkeypatch) -> list[str]:
    read: list[str] = []
    original = project_index_module.read_source

    def recording(path):
        read.append(os.path.realpath(path))
        return original(path)

    monkeypatch.setattr(project_index_module, "read_source", recording)
    return read


def test_a_module_outside_the_root_is_never_read(tmp_path, monkeypatch):
    # Each of these would add a finding if it were read.
    outside = write(tmp_path / "outside", {"losses.py": RETURNS_GRAPH, "pkg/losses.py": RETURNS_GRAPH})
    root = tmp_path / "project"
    climbing = ACCUMULATES.replace("from .losses import batch_loss", "from ...outside.pkg.losses import batch_loss")
    linked = ACCUMULATES.replace("from .losses import", "from losses import")
    write(root, {"train.py": linked, "pkg/__init__.py": "", "pkg/train.py": climbing})
    (root / "losses.py").symlink_to(outside / "losses.py")  # a link inside the root to a file outside it
    venv = write(root / ".venv" / "lib" / "site-packages", {"helpers.py": RETURNS_GRAPH.replace("batch_loss", "helper")})
    installed = ACCUMULATES.replace("from .losses import batch_loss", "from helpers import helper as batch_loss")
    write(root, {"installed.py": installed})
    read = _reads(monkeypatch)
    for name in ("train.py", "pkg/train.py", "installed.py"):
        assert codes(root / name, root) == codes(root / name, None)
    assert not [path for path in read if not path.startswith(os.path.realpath(root) + os.sep)]
    assert not [path for path in read if str(os.path.realpath(venv)) in path]


def _accumulating_project(tmp_path: Path) -> Path:
    return write(tmp_path, {"pkg/__init__.py": "", "pkg/losses.py": RETURNS_GRAPH, "pkg/train.py": ACCUMULATES})


def test_the_cache_is_reused_and_refreshed_when_the_other_file_changes(tmp_path, monkeypatch):
    root = _accumulating_project(tmp_path)
    train = root / "pkg" / "train.py"
    read = _reads(monkeypatch)
    text = train.read_text()
    cache = ChunkCache()  # as the language server keeps one per document
    # VL101 is a preview check (held-out gate): the project index serves every check alike
    first = [f.code for f in lint_source(text, str(train), cache=cache, root=root, preview=True)]
    assert "VL101" in first and len(read) == 1
    assert [f.code for f in lint_source(text, str(train), cache=cache, root=root, preview=True)] == first
    assert len(read) == 1  # unchanged: the summary is reused, the file not read again
    (root / "pkg" / "losses.py").write_text(RETURNS_NUMBER)
    again = [f.code for f in lint_source(text, str(train), cache=cache, root=root, preview=True)]
    assert "VL101" not in again and len(read) == 2


def test_the_editor_lints_again_when_an_imported_file_changes(tmp_path):
    from pygls.workspace import TextDocument

    from vramlens.lsp.lint_features import DocumentLinter

    root = _accumulating_project(tmp_path)
    train = root / "pkg" / "train.py"
    linter = DocumentLinter(root_of=lambda document: str(root))
    alone = DocumentLinter()  # no workspace folder: this file alone
    linter.settings.preview = alone.settings.preview = True  # VL101 is a preview check (held-out gate)
    document = TextDocument(train.as_uri(), train.read_text())
    assert "VL101" in [f.code for f in linter.findings(document)]
    assert "VL101" not in [f.code for f in alone.findings(document)]
    (root / "pkg" / "losses.py").write_text(RETURNS_NUMBER)
    assert "VL101" not in [f.code for f in linter.findings(document)]


def test_the_command_line_reads_the_project_of_its_paths(tmp_path, capsys):
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": LIGHTNING_BASE, "pkg/model.py": KEEPS_OUTPUTS})
    assert project_root([root / "pkg" / "model.py"]) == os.path.realpath(root)  # up to the folder with no __init__
    assert project_root([root]) == os.path.realpath(root)
    assert main(["lint", "--preview", str(root / "pkg" / "model.py")]) == 1  # the base class of base.py is read
    assert "VL102" in capsys.readouterr().out


def test_without_a_root_nothing_else_is_read(tmp_path, monkeypatch):
    root = _accumulating_project(tmp_path)
    read = _reads(monkeypatch)
    lint_file(root / "pkg" / "train.py")
    assert read == []
    assert project_index(root).dependency_stamps(str(root / "nothing.py")) == ()


@pytest.mark.parametrize("text", ["def broken(:\n", "\xff\xfe not text"])
def test_an_unparsable_module_is_unknown(tmp_path, text):
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/train.py": ACCUMULATES})
    (root / "pkg" / "losses.py").write_bytes(text.encode("latin-1"))
    assert codes(root / "pkg" / "train.py", root) == codes(root / "pkg" / "train.py", None)


def test_a_call_passing_what_the_summary_does_not_cover_stays_unknown(tmp_path):
    # What ``batch_loss`` does with what lands in ``**options`` its summary does not say.
    through_kwargs = RETURNS_GRAPH.replace("def batch_loss(out, y):", "def batch_loss(out, y=None, **options):")
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/losses.py": through_kwargs,
                            "pkg/train.py": ACCUMULATES.replace("batch_loss(out, y)", "batch_loss(out, y, reduction='mean')")})
    train = root / "pkg" / "train.py"
    assert codes(train, root) == codes(train, None)
    write(root, {"pkg/train.py": ACCUMULATES})
    assert (12, "VL101") in codes(train, root)  # the same function, called with named parameters only


SEARCH = """\
def batch_knn(query_enc, embeds):
    for q in query_enc:
        yield (q @ embeds.T).topk(2).indices, q
"""
RETRIEVES = """\
import torch
from search import batch_knn

model = torch.nn.Linear(4, 4)


def retrieve(query, embeds):
    query_enc = model(query)
    return next(batch_knn(query_enc, embeds))
"""


def test_an_imported_generator_stays_unknown(tmp_path):
    # Its walk sees no ``return``: "returns nothing" would make `retrieve` an inference call whose result
    # holds no graph (VL201), while what it yields is the query's encoding, graph and all.
    root = write(tmp_path, {"search.py": SEARCH, "train.py": RETRIEVES})
    assert codes(root / "train.py", root) == codes(root / "train.py", None) == []


def test_a_notebook_in_the_editor_reads_the_project_too(tmp_path):
    from vramlens.lsp.notebook_lint import lint_cells

    root = write(tmp_path, {"losses.py": RETURNS_GRAPH})
    cells = [("cell-1", ACCUMULATES.replace("from .losses import", "from losses import"))]
    notebook = str(root / "explore.ipynb")
    assert "VL101" not in [f.code for f in lint_cells(cells, notebook, preview=True)["cell-1"]]
    assert "VL101" in [f.code for f in lint_cells(cells, notebook, preview=True, root=str(root))["cell-1"]]


EVALUATES = """\
from models import Net


def evaluate(loader):
    model = Net()
    outs = []
    for x, y in loader:
        outs.append(model(x))
    return outs
"""
NET = """\
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
"""
SCORER = """\
class Net:
    def __call__(self, x):
        return float(x.sum())
"""


def test_a_module_class_of_another_file_builds_a_module(tmp_path):
    root = write(tmp_path, {"models.py": NET, "evaluate.py": EVALUATES})
    evaluate = root / "evaluate.py"
    assert codes(evaluate, None) == []  # alone, `Net()` is some object: its outputs are unknown
    assert (8, "VL102") in codes(evaluate, root)


def test_a_plain_class_of_another_file_builds_no_module(tmp_path):
    root = write(tmp_path, {"models.py": SCORER, "evaluate.py": EVALUATES})
    evaluate = root / "evaluate.py"
    assert codes(evaluate, root) == codes(evaluate, None) == []


def test_a_module_class_of_another_file_whose_forward_runs_without_grad_makes_no_graph(tmp_path):
    inference = NET.replace("import nn\n", "import nn\nimport torch\n").replace(
        "    def forward(self, x):", "    @torch.inference_mode()\n    def forward(self, x):")
    root = write(tmp_path, {"models.py": inference, "evaluate.py": EVALUATES})
    evaluate = root / "evaluate.py"
    assert "VL201" not in [code for _, code in codes(evaluate, root)]  # nothing to switch off: it is off


def test_a_module_class_of_another_file_without_parameters_stays_unknown(tmp_path):
    backend = """\
from torch import nn


class Net(nn.Module):
    def __init__(self, session=None):
        super().__init__()
        self.session = session

    def forward(self, x):
        return self.session.run(None, {"input": x.numpy()})
"""
    root = write(tmp_path, {"models.py": backend, "evaluate.py": EVALUATES})
    evaluate = root / "evaluate.py"
    assert codes(evaluate, root) == codes(evaluate, None) == []  # another runtime behind it, perhaps


def test_a_class_of_another_file_with_a_forward_but_no_module_base_stays_unknown(tmp_path):
    # Alone, models.py's `Net` is a module by its `forward` (its base is unknown there); the project shows the
    # base is a plain abstract class, so `Net()` is some object with a forward method, not proven a module.
    runtime = NET.replace("from torch import nn\n", "from torch import nn\nfrom base import Backend\n").replace(
        "class Net(nn.Module):", "class Net(Backend):").replace("        super().__init__()\n", "")
    files = {"base.py": "from abc import ABC\n\n\nclass Backend(ABC):\n    pass\n", "models.py": runtime,
             "evaluate.py": EVALUATES}
    root = write(tmp_path, files)
    evaluate = root / "evaluate.py"
    assert codes(evaluate, root) == codes(evaluate, None) == []


# -- a routine of another file that trains ----------------------------------------------------------------
EVALUATOR = """\
import torch
from pkg.{module} import {callee}


class Evaluator:
    def __init__(self, model):
        self.model = model
        self.model.eval()

    def score(self, batch):
        return self.model(batch).argmax(-1).tolist()  # the evaluation itself: reported either way

    def refresh(self, batch, loader):
        labels = self.model(batch).argmax(-1)
        {call}
        return labels.tolist()
"""
TRAINS_ELSEWHERE = {
    "trainer": ("ModelTrainer", "ModelTrainer(self.model, loader).fit()", """\
import torch


class ModelTrainer:
    def __init__(self, model, loader):
        self.model, self.loader = model, loader
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def fit(self):
        for x, y in self.loader:
            self.step(x, y)

    def step(self, x, y):
        loss = torch.nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.step()
"""),
    "function": ("finetune", "finetune(self.model, loader)", """\
import torch


def finetune(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        _step(model, optimizer, x, y)


def _step(model, optimizer, x, y):
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
"""),
}
EVALUATES_ELSEWHERE = """\
def finetune(model, loader):
    return sum(1 for _ in loader)
"""


@pytest.mark.parametrize("kind", sorted(TRAINS_ELSEWHERE))
def test_a_method_that_hands_the_model_to_another_files_training_is_no_evaluation(tmp_path, kind):
    callee, call, trainer = TRAINS_ELSEWHERE[kind]
    text = EVALUATOR.format(module="training", callee=callee, call=call)
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/training.py": trainer, "pkg/evaluate.py": text})
    path = root / "pkg" / "evaluate.py"
    refresh = text.splitlines().index("        labels = self.model(batch).argmax(-1)") + 1
    assert (refresh, "VL202") in codes(path, None)  # alone: the object holds its model in eval mode, trains nowhere
    found = codes(path, root)
    assert (refresh, "VL202") not in found
    assert (11, "VL202") in found  # its other methods are still evaluations: the class trains nowhere itself


def test_a_routine_of_another_file_that_does_not_train_keeps_the_finding(tmp_path):
    text = EVALUATOR.format(module="training", callee="finetune", call="finetune(self.model, loader)")
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/training.py": EVALUATES_ELSEWHERE, "pkg/evaluate.py": text})
    refresh = text.splitlines().index("        labels = self.model(batch).argmax(-1)") + 1
    assert (refresh, "VL202") in codes(root / "pkg" / "evaluate.py", root)


def test_an_import_is_looked_up_in_each_folder_above_the_importer(tmp_path):
    """A repository whose top folder is a package itself (an ``__init__.py`` beside ``setup.py``): the program
    runs from that folder, so ``import pkg.training`` resolves there, not at the root above it."""
    callee, call, trainer = TRAINS_ELSEWHERE["function"]
    text = EVALUATOR.format(module="training", callee=callee, call=call)
    repo = tmp_path / "repo"
    write(repo, {"__init__.py": "", "pkg/__init__.py": "", "pkg/training.py": trainer, "pkg/sub/__init__.py": "",
                 "pkg/sub/evaluate.py": text})
    path = repo / "pkg" / "sub" / "evaluate.py"
    assert project_root([repo]) == os.path.realpath(tmp_path)
    refresh = text.splitlines().index("        labels = self.model(batch).argmax(-1)") + 1
    assert (refresh, "VL202") not in codes(path, tmp_path)


# -- a meter of another file, re-exported by a star import ---------------------------------------------
METER_TRAIN = """\
import torch
from torch import nn
from metrics import Accuracy


def train(net: nn.Module, loader, optimizer):
    meter = Accuracy()
    for x, y in loader:
        out = net(x)
        loss = nn.functional.cross_entropy(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        meter.update(y, out)
    return meter
"""
REDUCING_METER = """\
import torch


class Accuracy:
    def __init__(self):
        self.correct = 0

    def update(self, labels, preds):
        self.correct += torch.sum(preds.argmax(1) == labels).item()
"""
KEEPING_METER = """\
class Accuracy:
    def __init__(self):
        self.preds = []

    def update(self, labels, preds):
        self.preds.append(preds)
"""


@pytest.mark.parametrize("meter, expected", [(REDUCING_METER, []), (KEEPING_METER, [(14, "VL101")])],
                         ids=["reduces-to-item", "keeps-the-tensor"])
def test_a_meter_of_another_file_is_judged_by_its_own_update(tmp_path, meter, expected):
    """``meter = Accuracy()`` with ``Accuracy`` defined in a file that ``metrics/__init__.py`` re-exports with a
    star import: an ``update`` that reduces to ``.item()`` keeps no graph, so the meter is no accumulator; one
    that appends the tensor is reported as before."""
    root = write(tmp_path, {"train.py": METER_TRAIN, "metrics/__init__.py": "from .classification import *\n",
                            "metrics/classification.py": meter})
    assert codes(root / "train.py", None) == [(14, "VL101")]  # the file alone: the meter's class is unknown
    assert codes(root / "train.py", root) == expected


# -- layers of another file whose parameters are all frozen ---------------------------------------------
FROZEN_LAYERS = """\
import torch
import torch.nn as nn


class Layer(nn.Module):
    def __init__(self):
        super().__init__()


class Convolution(Layer):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.weights = nn.Parameter(torch.rand(out_channels, in_channels, kernel_size, kernel_size), requires_grad=False)

    def forward(self, x):
        return nn.functional.conv2d(x, self.weights)
"""
SPIKING_EXPERIMENT = """\
import torch
import torch.nn as nn
from models.layer import Convolution


class Experiment(object):
    def __init__(self, configs, loader):
        self.layers = nn.ModuleList([Convolution(**c) for c in configs])
        self.loader = loader

    def forward(self, spikes):
        for i, layer in enumerate(self.layers):
            spikes = nn.functional.max_pool2d(layer(spikes).sign(), 2)
        return spikes

    def evaluate(self):
        winners = []
        for spikes, target in self.loader:
            out = self.forward(spikes)
            winners.append(out.argmax().item())
        return winners
"""


def test_layers_of_another_file_with_frozen_parameters_record_nothing(tmp_path):
    # An STDP network (round O): its layers' weights are nn.Parameter(..., requires_grad=False) in another file.
    root = write(tmp_path, {"models/__init__.py": "", "models/layer.py": FROZEN_LAYERS, "experiment.py": SPIKING_EXPERIMENT})
    experiment = root / "experiment.py"
    assert (19, "VL201") in codes(experiment, None)  # alone: the layers are modules of unknown parameters
    assert (19, "VL201") not in codes(experiment, root)
    trainable = FROZEN_LAYERS.replace(", requires_grad=False)", ")")
    write(root, {"models/layer.py": trainable})
    assert (19, "VL201") in codes(experiment, root)


# -- what a model class of another file returns ------------------------------------------------------------
CAPTION_DECODER = """\
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 4)
        self.fc = nn.Linear(4, 10)

    def forward(self, images, captions, lengths):
        out, _ = self.rnn(images)
        decode_lengths = (lengths - 1).tolist()
        return self.fc(out), captions, decode_lengths
"""
CAPTION_TRAIN = """\
import torch
from model import Decoder
from meters import AverageMeter


def evaluate(loader, decoder, criterion):
    losses = AverageMeter()
    kept = AverageMeter()
    for images, captions, lengths in loader:
        scores, targets, decode_lengths = decoder(images, captions, lengths)
        loss = criterion(scores, targets)
        losses.update(loss.item(), sum(decode_lengths))
        kept.update(scores.sum(), sum(decode_lengths))
    return losses.avg


if __name__ == "__main__":
    decoder = Decoder()
    optimizer = torch.optim.SGD(decoder.parameters(), lr=0.1)
    for images, captions, lengths in loader:
        scores, targets, decode_lengths = decoder(images, captions, lengths)
        loss = criterion(scores, targets)
        loss.backward()
        optimizer.step()
    evaluate(loader, decoder, criterion)
"""
METERS = """\
class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, value, n=1):
        self.sum += value * n
        self.count += n
"""
CRF_LAYER = """\
import torch
from torch import nn


class CRF(nn.Module):
    def __init__(self, tags):
        super().__init__()
        self.transitions = nn.Parameter(torch.randn(tags, tags))

    def decode(self, emissions):
        best = []
        for row in emissions.argmax(-1):
            best.append([tag.item() for tag in row])
        return best
"""
TAGGER = """\
import torch
from torch import nn
from crf import CRF


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 4)
        self.crf = CRF(4)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.crf.decode(out)
"""
TAGGING = """\
import torch
from tagger import Tagger

model = Tagger()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
preds = []
for x, y in loader:
    loss = model.lstm(x)[0].sum()
    loss.backward()
    optimizer.step()
    preds += model(x)
"""


def test_a_position_of_another_files_forward_that_holds_ints_carries_nothing(tmp_path):
    # Round N: ``sum(decode_lengths)`` of the lengths a decoder's forward returns as a list, beside ``loss.item()``.
    root = write(tmp_path, {"model.py": CAPTION_DECODER, "meters.py": METERS, "train.py": CAPTION_TRAIN})
    train = root / "train.py"
    alone, project = codes(train, None), codes(train, root)
    assert (12, "VL101") in alone  # alone: every position of a forward's tuple may carry graph
    assert (12, "VL101") not in project  # the decoder passed in is the Decoder main() builds
    assert (13, "VL101") in project  # the scores beside it still do


def test_a_forward_of_another_file_that_returns_decoded_ints_carries_nothing(tmp_path):
    # Round N: a tagger's forward returns ``self.crf.decode(...)``, lists of ints built with ``.item()``.
    root = write(tmp_path, {"crf.py": CRF_LAYER, "tagger.py": TAGGER, "tag.py": TAGGING})
    tag = root / "tag.py"
    assert (11, "VL101") in codes(tag, None)
    assert (11, "VL101") not in codes(tag, root)
    write(root, {"crf.py": CRF_LAYER.replace("emissions.argmax(-1)", "emissions").replace("[tag.item() for tag in row]", "row")})
    assert (11, "VL101") in codes(tag, root)
