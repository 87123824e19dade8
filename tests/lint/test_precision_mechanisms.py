"""The mechanisms that keep retained-graph quiet on state that is not a leak, each with the leak it must still see.

Each source marks the lines that must be reported (``# flag: VL102``); every other line is a look-alike that must
stay silent (mechanisms.py). The constructs are those read in real code's false findings: a hidden state detached
through a library helper handed ``torch.Tensor.detach``, a pool class whose inputs are ids, a submodule's
parameter slot, a cache with a clearing method, state every call re-initialises, per-step outputs collected into
what a module's method returns.
"""

from __future__ import annotations

import pytest

from mechanisms import check, source

HEAD = "import torch\nimport torch.nn as nn\nfrom somewhere import apply_to_tensor, tree_map\n\n"


def cases(*texts: str) -> list[str]:
    return [HEAD + source(t) for t in texts]


def ids(texts: list[str]) -> list[str]:
    return [f"shape{i}" for i in range(len(texts))]


DETACH_HANDED_AS_FUNCTION = cases(
    """
    def detach_hidden(hidden):
        return apply_to_tensor(hidden, torch.Tensor.detach)
    def train(model: nn.Module, chunks, optimizer):
        hidden = None
        for x in chunks:
            if hidden is None:
                out, hidden = model(x)
            else:
                hidden = detach_hidden(hidden)
                out, hidden = model(x, hidden)
            out.mean().backward()
            optimizer.step()
    """,
    """
    def train(model: nn.Module, chunks, optimizer):
        hidden = model.init_state()
        for x in chunks:
            hidden = tree_map(lambda t: t.detach().clone(), hidden)
            out, hidden = model(x, hidden)
            out.mean().backward()
            optimizer.step()
    """,
    """
    def train(model: nn.Module, chunks, optimizer):
        hidden = None
        for x in chunks:
            if hidden is not None:
                print(apply_to_tensor(hidden, torch.Tensor.detach))
            out, hidden = model(x, hidden)  # flag: VL106
            out.mean().backward()
            optimizer.step()
    """,
)


@pytest.mark.parametrize("text", DETACH_HANDED_AS_FUNCTION, ids=ids(DETACH_HANDED_AS_FUNCTION))
def test_a_detach_mapped_over_a_structure_cuts_the_graph(text):
    check(text)


POOL_INPUTS = cases(
    """
    class ImagePool:
        def __init__(self):
            self.images = []
        def query(self, images):
            for image in images:
                image = torch.unsqueeze(image, 0)
                self.images.append(image)  # flag: VL102
            return images
    """,
    """
    class VideoVectorPool:
        def __init__(self):
            self.video_ids = []
            self.vectors = []
        def __call__(self, sample):
            vectors = sample["pooled"].cpu().detach().numpy()
            video_ids = []
            for video_id in sample["video_id"]:
                video_ids.append(video_id)
            self.video_ids.extend(video_ids)
            self.vectors.append(vectors)
    """,
)


@pytest.mark.parametrize("text", POOL_INPUTS, ids=ids(POOL_INPUTS))
def test_a_pool_not_fed_in_the_file_receives_tensors_only_where_it_uses_them_as_tensors(text):
    check(text)


PARAMETER_SLOTS = cases(
    """
    class Fp32Norm(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.bn = nn.BatchNorm1d(n)
        def forward(self, x):
            if self.bn.weight.dtype != torch.float:
                self.bn.weight = self.bn.weight.float()
                self.bn.bias = self.bn.bias.float()
            self.last = self.bn(x.float())  # flag: VL105
            return self.last
    """,
)


@pytest.mark.parametrize("text", PARAMETER_SLOTS, ids=ids(PARAMETER_SLOTS))
def test_a_modules_parameter_slot_keeps_no_graph(text):
    check(text)


CACHES = cases(
    """
    class LocationAttention(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.proj_enc = nn.Linear(d, d)
            self.proj_enc_out = None
        def clear_cache(self):
            self.proj_enc_out = None
        def forward(self, encoder_out, h):
            if self.proj_enc_out is None:
                self.proj_enc_out = self.proj_enc(encoder_out)
            return self.proj_enc_out + h
    """,
    """
    class LocationAttention(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.proj_enc = nn.Linear(d, d)
            self.proj_enc_out = None
        def forward(self, encoder_out, h):
            if self.proj_enc_out is None:
                self.proj_enc_out = self.proj_enc(encoder_out)  # flag: VL105
            return self.proj_enc_out + h
    """,
    """
    class Smoother(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.proj = nn.Linear(d, d)
            self.value = None
        def reset(self):
            self.value = None
        def forward(self, x):
            if self.value is None:
                self.value = self.proj(x)
            else:
                self.value = 0.9 * self.value + 0.1 * self.proj(x)  # flag: VL105
            return self.value
    """,
)


@pytest.mark.parametrize("text", CACHES, ids=ids(CACHES))
def test_a_memo_cache_that_its_class_clears_is_kept_on_purpose(text):
    check(text)


PER_CALL_STATE = cases(
    """
    class Decoder(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.rnn = nn.LSTMCell(d, d)
        def init_states(self, memory):
            self.hidden = memory.data.new(memory.size(0), 4).zero_()
            self.cell = memory.data.new(memory.size(0), 4).zero_()
            self.weights_cum = memory.new_zeros(memory.size(0), 4)
        def decode(self, x):
            self.hidden, self.cell = self.rnn(x, (self.hidden, self.cell))
            self.weights_cum += self.hidden
            return self.hidden
        def forward(self, memory, inputs):
            self.init_states(memory)
            outputs = []
            for x in inputs:
                outputs.append(self.decode(x))
            return torch.stack(outputs)
    """,
    """
    class Decoder(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.layers = nn.ModuleList([nn.LSTM(d, d) for _ in range(3)])
        def init_hidden(self, hidden):
            self.next_hidden = []
            return [None] * 3
        def append_hidden(self, h):
            self.next_hidden.append(h)
        def forward(self, x, hidden):
            hidden = self.init_hidden(hidden)
            for i in range(len(self.layers)):
                x, h = self.layers[i](x, hidden[i])
                self.append_hidden(h)
            return x, torch.cat(self.next_hidden)
    """,
    """
    class Attack:
        def __init__(self, model: nn.Module, optimizer):
            self.model = model
            self.optimizer = optimizer
        def log(self, distance):
            self.log_loss.append(distance)
        def attack(self, batches):
            self.log_loss = []
            for x in batches:
                distance = self.model(x).sum()
                distance.backward()
                self.optimizer.step()
                self.log(distance)  # flag: VL102
    """,
    """
    class Decoder(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.rnn = nn.LSTMCell(d, d)
        def decode(self, x):
            self.hidden = self.rnn(x)[0]  # flag: VL105
            return self.hidden
        def forward(self, inputs):
            return torch.stack([self.decode(x) for x in inputs])
    """,
)


@pytest.mark.parametrize("text", PER_CALL_STATE, ids=ids(PER_CALL_STATE))
def test_state_that_every_call_reinitialises_holds_one_call(text):
    check(text)


RETURNED_RESULTS = cases(
    """
    class Decoder(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.step = nn.Linear(d, d)
        def unroll(self, inputs):
            outputs, gates = [], []
            while len(outputs) < len(inputs):
                y = self.step(inputs[len(outputs)])
                outputs += [y]
                gates += [y.sum()]
            outputs, gates = torch.stack(outputs), torch.stack(gates)
            return outputs, gates
    """,
    """
    class Net(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.lin = nn.Linear(d, d)
        def forward(self, x):
            return self.lin(x)
        def fit(self, loader, optimizer):
            losses = []
            for x in loader:
                loss = self(x).sum()
                loss.backward()
                optimizer.step()
                losses.append(loss)  # flag: VL102
            return losses
    """,
    """
    def embed_all(model: nn.Module, loader):
        outputs = []
        for batch in loader:
            outputs.append(model(batch))  # flag: VL102
        return outputs
    """,
)


@pytest.mark.parametrize("text", RETURNED_RESULTS, ids=ids(RETURNED_RESULTS))
def test_per_step_outputs_a_modules_method_returns_are_its_result(text):
    check(text)


GRADIENTS_WITH_GRAPH = cases(
    """
    def step(model: nn.Module, x, targets, optimizer):
        x.requires_grad_(True)
        out = model(x)
        penalty = 0
        for pred in out.unbind(-1):
            penalty = penalty + torch.autograd.grad(pred.sum(), x, create_graph=True)[0].relu().mean()
        loss = out.mean() + penalty
        loss.backward()
        optimizer.step()
    def train(model: nn.Module, loader, optimizer):
        for x, y in loader:
            step(model, x, y, optimizer)
    """,
    """
    def train(model: nn.Module, loader, optimizer):
        for x in loader:
            loss = model(x).mean()
            loss.backward(create_graph=True)  # flag: VL301
            optimizer.step()
    """,
    """
    def train(model: nn.Module, loader, optimizer):
        for x in loader:
            x.requires_grad_(True)
            out = model(x).sum()
            grads = torch.autograd.grad(out, x, create_graph=True, retain_graph=True)  # flag: VL301
            optimizer.step()
    """,
)


@pytest.mark.parametrize("text", GRADIENTS_WITH_GRAPH, ids=ids(GRADIENTS_WITH_GRAPH))
def test_gradients_taken_with_create_graph_are_meant_to_be_differentiated(text):
    check(text)


# Where the loop backpropagates, the value is detached before it is kept; where it keeps graphs, nothing in the
# loop backpropagates and the local list is summed into what the function returns: the caller's loss.
DETACHED_WHERE_BACKPROPAGATED = cases(
    """
    class ChunkedLoss(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model
        def calculate_loss(self, reps, with_backward=False):
            losses = []
            for begin in range(0, len(reps), 8):
                chunk_loss = self.model(reps[begin:begin + 8]).sum()
                if with_backward:
                    chunk_loss.backward()
                    chunk_loss = chunk_loss.detach()
                losses.append(chunk_loss)
            return sum(losses)
    """,
    """
    def train(model: nn.Module, loader, optimizer):
        losses = []
        for batch in loader:
            loss = model(batch).sum()
            loss.backward()
            optimizer.step()
            losses.append(loss)  # flag: VL102
        return sum(losses)
    """,
    """
    def train(model: nn.Module, loader, optimizer, flag):
        losses = []
        for batch in loader:
            loss = model(batch).sum()
            if flag:
                loss.backward()
                loss = loss.detach()
            else:
                loss.backward()
            losses.append(loss)  # flag: VL102
        return losses
    """,
    """
    def evaluate(model: nn.Module, loader, with_backward=False):
        losses = []
        for batch in loader:
            loss = model(batch).sum()
            if with_backward:
                loss.backward()
                loss = loss.detach()
            losses.append(loss)  # flag: VL102
        return len(losses)
    """,
)


@pytest.mark.parametrize("text", DETACHED_WHERE_BACKPROPAGATED, ids=ids(DETACHED_WHERE_BACKPROPAGATED))
def test_graphs_kept_only_where_the_loop_does_not_backpropagate_are_the_callers_loss(text):
    check(text)


HELD_TORCH_MODULE = cases(
    """
    class Estimator:
        def __init__(self, model: nn.Module):
            self.torch = torch
            self.model = model
            self.masks, self.losses = [], []
        def score(self, loader, opt):
            for batch in loader:
                out = self.model(batch)
                loss = out.mean()
                loss.backward()
                opt.step()
                self.masks.append(self.torch.zeros(out.size(0)))
                self.losses.append(self.torch.cat([out, out]))  # flag: VL102
    """,
)


@pytest.mark.parametrize("text", HELD_TORCH_MODULE, ids=ids(HELD_TORCH_MODULE))
def test_a_tensor_made_by_the_torch_module_an_object_holds_is_new(text):
    """BenchPress keeps ``self.torch = torch``: ``self.torch.zeros(...)`` is a factory like ``torch.zeros`` (a new
    tensor), ``self.torch.cat(...)`` an operation like ``torch.cat`` (keeps what it joins)."""
    check(text)
