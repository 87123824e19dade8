"""The census' walk of autograd graphs on the real (CPU) torch: what a held tensor's graph keeps,
charged to its holder, read without unpacking anything (no saved-tensor hook ever runs)."""

import gc
import json
import os

import pytest

torch = pytest.importorskip("torch")

from vramlens.agent.census import take_census  # noqa: E402
from vramlens.agent.census.autograd_graphs import _SavedReader  # noqa: E402
from vramlens.capture.census import validate_census  # noqa: E402

needs_saved_data = pytest.mark.skipif(not _SavedReader(torch).usable,
                                      reason="this torch's SavedTensor has no data/unpack_hook properties")
KEPT = {}  # module-level holder: the census names it, as it would a user's global list


def census(**options):
    gc.collect()
    taken = take_census(torch, "on_demand", device_filter=lambda t: t.device.type == "cpu", budget_s=30.0,
                        max_tensors=10**6, **options)
    return validate_census(json.loads(json.dumps(taken)))


def holder_position(found, name):
    for position, holder in enumerate(found["holders"]):
        if holder["path"] and holder["path"].endswith(f"['{name}']"):
            return position
    raise AssertionError(f"no holder {name}: {[h['path'] for h in found['holders']]}")


def owner_of(found, role, owner):
    matches = [entry for entry in found["graphs"]["owners"] if entry["role"] == role and entry["owner"] == owner]
    assert len(matches) == 1
    return matches[0]


def mlp_loss(width=512, batch=256):
    # torch.exp inside the graph saves its output: a tensor no Python name refers to
    layer = torch.nn.Linear(width, width)
    x = torch.randn(batch, width)
    return layer(x).exp().sum(), layer


@needs_saved_data
def test_a_list_of_losses_is_charged_the_activations_their_graphs_saved():
    KEPT.clear()
    layer = torch.nn.Linear(512, 512)
    KEPT["losses"] = [layer(torch.randn(256, 512)).exp().sum() for _ in range(3)]
    found = census()
    graphs = found["graphs"]
    assert graphs["mechanism"] == "saved_tensor_data"
    entry = owner_of(found, "held", holder_position(found, "losses"))
    assert entry["roots"] == 3
    one_activation = 256 * 512 * 4  # each graph: exp's saved output (and the linear's input, 256 x 512 floats)
    assert entry["bytes"] >= 3 * one_activation
    assert entry["exclusive_bytes"] >= 3 * one_activation
    # the weights every graph saved are the model's, never the holder's
    weight_ptr = layer.weight.untyped_storage().data_ptr()
    assert all(storage["ptr"] != weight_ptr for storage in graphs["storages"])
    KEPT.clear()


@needs_saved_data
def test_a_tensor_shared_by_two_graphs_is_counted_once_and_marked_shared():
    KEPT.clear()
    base = torch.randn(256, 512, requires_grad=True)
    hidden = base.exp()  # saved by exp (its output) and by both sins (their input)
    KEPT["first"] = [hidden.sin().sum()]
    KEPT["second"] = [hidden.cos().sum()]
    del hidden
    found = census()
    first = owner_of(found, "held", holder_position(found, "first"))
    second = owner_of(found, "held", holder_position(found, "second"))
    shared = [storage for storage in found["graphs"]["storages"] if storage["shared"]]
    assert any(storage["bytes"] == 256 * 512 * 4 for storage in shared)
    assert first["bytes"] - first["exclusive_bytes"] >= 256 * 512 * 4
    assert second["bytes"] - second["exclusive_bytes"] >= 256 * 512 * 4
    assert found["graphs"]["totals"]["bytes"] < first["bytes"] + second["bytes"]  # listed once in the table
    KEPT.clear()


@needs_saved_data
def test_a_checkpointed_graph_is_walked_without_its_unpack_hook_ever_running():
    from torch.utils.checkpoint import checkpoint
    KEPT.clear()
    calls = []

    def pack(tensor):
        return ("packed", tensor.shape)  # keeps no tensor, as a recomputation or an offload does

    def unpack(packed):
        calls.append(packed)
        raise AssertionError("the census ran an unpack hook")

    layer = torch.nn.Linear(256, 256)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        KEPT["hooked"] = [layer(torch.randn(64, 256)).exp().sum()]
    KEPT["checkpointed"] = [checkpoint(lambda x: layer(x).exp(), torch.randn(64, 256, requires_grad=True),
                                       use_reentrant=False).sum()]
    found = census()
    assert calls == []
    graphs = found["graphs"]
    assert graphs["hooked"] >= 3
    assert owner_of(found, "held", holder_position(found, "hooked"))["bytes"] == 0
    KEPT.clear()


@needs_saved_data
def test_a_graph_freed_by_backward_keeps_nothing():
    KEPT.clear()
    layer = torch.nn.Linear(512, 512)
    loss = layer(torch.randn(256, 512)).exp().sum()
    loss.backward()
    KEPT["after_backward"] = [loss]
    del loss
    found = census()
    entry = owner_of(found, "held", holder_position(found, "after_backward"))
    assert entry["bytes"] == 0
    assert found["graphs"]["empty"] >= 1
    KEPT.clear()


@needs_saved_data
def test_a_custom_functions_saved_tensors_and_ctx_attributes_are_found_and_its_code_never_runs():
    runs = []

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mask = torch.ones(128, 512)  # kept as an attribute, not through save_for_backward
            ctx.save_for_backward(x * 2)
            return x * 3

        @staticmethod
        def backward(ctx, grad):
            runs.append("backward")
            return grad * 3

    KEPT.clear()
    KEPT["custom"] = [Scale.apply(torch.randn(128, 512, requires_grad=True)).sum()]
    found = census()
    entry = owner_of(found, "held", holder_position(found, "custom"))
    assert entry["bytes"] >= 128 * 512 * 4  # the saved x * 2
    assert entry["named_elsewhere"] >= 1  # ctx.mask: reached, and charged to the ctx object that holds it
    assert runs == []
    KEPT.clear()


def test_the_walk_keeps_no_reference_after_the_census():
    import weakref
    KEPT.clear()
    layer = torch.nn.Linear(64, 64)
    hidden = layer(torch.randn(8, 64))
    KEPT["weak"] = [hidden.exp().sum()]
    saved = weakref.ref(hidden)  # saved by exp's node (its input)
    del hidden
    found = census()
    assert found["graphs"]["owners"]
    KEPT.clear()
    gc.collect()
    assert saved() is None


def test_without_the_saved_tensor_properties_nothing_saved_is_read(monkeypatch):
    import vramlens.agent.census.autograd_graphs as walk

    class NoProperties(walk._SavedReader):
        def __init__(self, torch):
            super().__init__(torch)
            self.usable = False

        def read(self, saved):
            raise AssertionError("a saved tensor was read under the producer mechanism")

    monkeypatch.setattr(walk, "_SavedReader", NoProperties)
    KEPT.clear()
    base = torch.randn(256, 512, requires_grad=True)
    hidden = base.exp()  # Python-visible once, then kept only by the graph
    KEPT["producer"] = [hidden.sin().sum()]
    del hidden
    found = census()
    assert found["graphs"]["mechanism"] == "producer"
    entry = owner_of(found, "held", holder_position(found, "producer"))
    assert entry["bytes"] >= 256 * 512 * 4
    KEPT.clear()


@needs_saved_data
def test_a_running_sum_of_losses_counts_the_forward_passes_its_one_graph_holds():
    KEPT.clear()
    layer = torch.nn.Linear(256, 256)
    total = 0
    for _ in range(4):
        total = total + layer(torch.randn(32, 256)).exp().sum()
    KEPT["total"] = [total]
    KEPT["one"] = [layer(torch.randn(32, 256)).exp().sum()]
    del total
    found = census()
    assert owner_of(found, "held", holder_position(found, "total"))["passes"] == 4
    assert owner_of(found, "held", holder_position(found, "one"))["passes"] == 1
    KEPT.clear()


@needs_saved_data
def test_saved_activations_inside_a_local_lists_graphs_are_left_to_the_graph_walk_not_sought_as_holders():
    # the inventory is every CPU tensor of the process: what earlier tests left alive is sought too,
    # so the figure that counts is what this test's graphs add to a census taken just before
    before = census(source_root=os.path.dirname(os.path.abspath(__file__)))["holder_search"] or {}
    layer = torch.nn.Linear(256, 256)
    outputs = []
    for _ in range(3):
        hidden = layer(torch.randn(32, 256))  # a Python wrapper once, then only the graph keeps it
        outputs.append(hidden.exp())
        del hidden
    found = census(source_root=os.path.dirname(os.path.abspath(__file__)))  # this file is the user's code
    entry = [local for local in found["frame_locals"] if local["name"] == "outputs"]
    assert entry, "the local list is a frame local"
    owner = owner_of(found, "frame_local", found["frame_locals"].index(entry[0]))
    assert owner["passes"] == 3 and owner["exclusive_bytes"] >= 3 * 32 * 256 * 4
    assert found["holder_search"]["inside_graphs"] >= 3
    added = found["holder_search"]["sought"] - before.get("sought", 0)
    # the three activations live only inside the list's graphs: sought as holders, they would add three
    assert added < 3, f"{added} more tensors sought although the new ones sit inside graphs or the list"


@needs_saved_data
def test_a_census_read_on_its_own_charges_a_collections_graphs_to_its_holder_and_the_rest_to_saved_activations():
    from vramlens.analysis.attribution.roles import join_census
    layer = torch.nn.Linear(512, 512)
    outputs = []
    for _ in range(3):
        hidden = layer(torch.randn(64, 512))
        outputs.append(hidden.exp().sum())
        del hidden
    step = layer(torch.randn(64, 512)).exp().sum()  # the step in progress: one graph, one pass
    found = census(source_root=os.path.dirname(os.path.abspath(__file__)))
    allocated = found["totals"]["bytes"] + found["graphs"]["totals"]["not_python_visible_bytes"]
    found["device"] = {"index": 0, "allocated": allocated, "reserved": allocated}  # what a CUDA census records
    joined = join_census(found, None, None, None)  # no snapshot of the same moment: the census' own sizes
    kept = next(holder for holder in joined.holders if holder.root.startswith("local outputs"))
    assert kept.graph_bytes >= 3 * 64 * 512 * 4
    assert all(share.role != "other" for share in joined.roles)
    saved = next(share for share in joined.roles if share.role == "activations")
    assert saved.bytes >= 64 * 512 * 4  # the step's own exp output and linear input
    del step
