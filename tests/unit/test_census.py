"""The tensor census on the real (CPU) torch, through the code path the agent uses for CUDA.

The device filter accepts CPU tensors here; everything else — the walk over gc's objects, the
roles, the holder search — is what runs inside a user's process at an OOM. Every census is
sent through JSON and the loader's validation, so what the agent writes is what the analysis
can read.
"""

import gc
import importlib.util
import json
import os
import sys
import textwrap
import threading

import pytest

torch = pytest.importorskip("torch")

from vramlens.agent.census import take_census  # noqa: E402
from vramlens.capture.census import validate_census  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def on_cpu(tensor):
    return tensor.device.type == "cpu"


def census(collect=True, **options):
    if collect:
        gc.collect()  # what earlier tests left in reference cycles is not this test's
    options.setdefault("device_filter", on_cpu)
    options.setdefault("budget_s", 30.0)  # a loaded test machine must not cut these short; one test cuts on purpose
    options.setdefault("max_tensors", 10**6)  # other tests may leave thousands of CPU tensors alive: list them all
    taken = take_census(torch, options.pop("moment", "on_demand"), **options)
    return validate_census(json.loads(json.dumps(taken)))


def storage_key(tensor):
    return tensor.untyped_storage().data_ptr()


def storage_of(found, tensor):
    """The census' storage entry of a tensor (by data pointer)."""
    matches = [storage for storage in found["storages"] if storage["ptr"] == storage_key(tensor)]
    assert len(matches) == 1, f"{len(matches)} storages at one pointer"
    return matches[0]


def module_from(tmp_path, name, source):
    """A real module, imported from a file: its globals are what a script's globals are."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def cleanup_modules():
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def holder_at(found, path):
    matches = [holder for holder in found["holders"] if holder["path"] == path]
    assert matches, f"no holder {path}; holders: {[holder['path'] for holder in found['holders']]}; {found['skipped']} {found['holder_search']}"
    return matches[0]


# -- parameters, buffers, gradients ----------------------------------------------------
class CensusBlock(torch.nn.Module):
    def __init__(self, shared):
        super().__init__()
        self.fc = torch.nn.Linear(16, 32)
        self.norm = torch.nn.BatchNorm1d(32)  # buffers: running_mean, running_var, num_batches_tracked
        self.shared = shared


class CensusNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        shared = torch.nn.Linear(32, 32)
        self.embed = torch.nn.Embedding(50, 16)
        self.blocks = torch.nn.ModuleList([CensusBlock(shared), CensusBlock(shared)])
        self.inner = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Sequential(torch.nn.Linear(16, 16)))
        self.head = torch.nn.Linear(16, 50, bias=False)
        self.head.weight = self.embed.weight  # tied


def root_entry(found, class_name):
    matches = [entry for entry in found["modules"] if entry["class"] == class_name]
    assert len(matches) == 1
    return matches[0]


def test_parameters_and_buffers_by_path_from_the_root_with_the_models_bytes():
    model = CensusNet()
    found = census(extra_roots={"model": model})
    entry = root_entry(found, "CensusNet")
    assert entry["python_module"] == __name__ and entry["bound_to"] == ["model"]
    names = {item["name"] for item in entry["parameters"]["listed"]}
    assert names == {name for name, _ in model.named_parameters()}  # shared and tied ones named once
    assert "blocks.0.shared.weight" in names and "blocks.1.shared.weight" not in names
    assert "head.weight" not in names and entry["aliases"] == 1  # the tied weight; the shared module is walked once
    expected = sum(p.numel() * p.element_size() for p in model.parameters())
    assert entry["parameters"]["bytes"] == expected
    assert entry["parameters"]["count"] == len(list(model.parameters()))
    buffers = {item["name"] for item in entry["buffers"]["listed"]}
    assert buffers == {name for name, _ in model.named_buffers()}
    assert entry["buffers"]["bytes"] == sum(b.numel() * b.element_size() for b in model.buffers())
    # The submodules are no roots of their own.
    assert not [e for e in found["modules"] if e["class"] in ("CensusBlock", "Linear") and e["bound_to"] == ["model"]]
    tensors = found["tensors"]
    for item in entry["parameters"]["listed"]:
        parameter = model.get_parameter(item["name"])
        record = tensors[item["tensor"]]
        assert record["shape"] == list(parameter.shape) and record["dtype"] == "float32" and record["leaf"]
        assert found["storages"][record["storage"]]["role"] == "parameter"


def test_gradients_are_the_parameters_grad_and_adamw_state_is_twice_the_parameters():
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(4, 64)).pow(2).mean().backward()
    optimizer.step()
    found = census(extra_roots={"model": model, "optimizer": optimizer})
    parameter_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    entry = next(e for e in found["modules"] if e["bound_to"] == ["model"])
    assert entry["gradients"]["bytes"] == parameter_bytes
    assert {item["name"] for item in entry["gradients"]["listed"]} == {name for name, _ in model.named_parameters()}
    [adamw] = [o for o in found["optimizers"] if o["bound_to"] == ["optimizer"]]
    assert adamw["class"] == "AdamW" and adamw["python_module"] == "torch.optim.adamw" and adamw["step"] == 1
    assert adamw["params"] == {"count": 4, "bytes": parameter_bytes}
    by_key = adamw["state"]["by_key"]
    assert by_key["exp_avg"] + by_key["exp_avg_sq"] == 2 * parameter_bytes
    assert by_key["exp_avg"] == by_key["exp_avg_sq"] == parameter_bytes
    names = {name for name, _ in model.named_parameters()}
    listed = adamw["state"]["listed"]
    assert {item["param"] for item in listed} == names
    assert {item["key"] for item in listed} == {"exp_avg", "exp_avg_sq", "step"}
    module_index = found["modules"].index(entry)
    for item in listed:
        assert item["module"] == module_index
        storage = found["storages"][found["tensors"][item["tensor"]]["storage"]]
        assert storage["role"] == "optimizer_state" and found["optimizers"][storage["owner"]] is adamw


# -- holders ---------------------------------------------------------------------------
def test_a_module_global_list_is_named_as_the_holder_with_its_length(tmp_path, cleanup_modules):
    script = module_from(tmp_path, "census_script_globals", """
        import torch
        all_logits = []
        for step in range(138):
            all_logits.append(torch.randn(8, 10))
    """)
    for source_root in (str(tmp_path), None):  # the user's module, then a library's
        found = census(source_root=source_root)
        holder = holder_at(found, "census_script_globals.all_logits")
        assert holder["container"] == {"kind": "list", "type": "list", "length": 138, "module": None,
                                       "function": None, "filename": None, "line": None, "thread": None}
        assert holder["tensors"]["count"] == 138
        assert holder["tensors"]["bytes"] == 138 * 8 * 10 * 4
        assert holder["chain"][0]["edge"] == "global" and holder["chain"][0]["module"] == "census_script_globals"
        assert holder["found_by"] == "walk"
        assert {storage_of(found, t)["role"] for t in script.all_logits} == {"held"}


def test_an_attribute_holder_is_named_by_its_object_and_attribute(tmp_path, cleanup_modules):
    module_from(tmp_path, "census_script_attr", """
        import torch
        class Classifier:
            def __init__(self):
                self.val_outputs = [torch.randn(4, 4) for _ in range(12)]
                self.note = "not a tensor"
        clf = Classifier()
    """)
    found = census(source_root=str(tmp_path))
    holder = holder_at(found, "census_script_attr.clf.val_outputs")
    assert [step["edge"] for step in holder["chain"]] == ["global", "attribute"]
    assert holder["chain"][0]["type"] == "census_script_attr.Classifier"
    assert holder["chain"][1]["name"] == "val_outputs"
    assert holder["container"]["length"] == 12 and holder["tensors"]["bytes"] == 12 * 64


def test_a_traceback_kept_alive_names_the_frame_that_holds_the_tensor(tmp_path, cleanup_modules):
    module = module_from(tmp_path, "census_script_tb", """
        import torch
        def evaluate():
            activations = torch.randn(256, 64)
            raise RuntimeError("CUDA out of memory")
        def run():
            try:
                evaluate()
            except RuntimeError as error:
                return error
    """)
    kept = module.run().__traceback__
    previous = getattr(sys, "last_traceback", None)
    sys.last_traceback = kept
    try:
        found = census(source_root=str(tmp_path))
    finally:
        sys.last_traceback = previous
    [holder] = [h for h in found["holders"] if h["container"].get("function") == "evaluate"]
    assert holder["container"]["kind"] == "frame" and holder["container"]["filename"].endswith("census_script_tb.py")
    assert holder["names"] == ["activations"] and holder["tensors"]["bytes"] == 256 * 64 * 4
    assert holder["chain"][0] == dict(holder["chain"][0], edge="global", module="sys", name="last_traceback")
    assert holder["chain"][-1]["edge"] == "tb_frame" and holder["chain"][-1]["function"] == "evaluate"
    assert holder["path"].startswith("sys.last_traceback") and holder["path"].endswith(".tb_frame")


def test_extra_roots_name_what_they_hold():
    kept = {3: [torch.randn(32, 32), torch.randn(32, 32)]}
    last = torch.randn(100)
    found = census(extra_roots={"Out": kept, "_": last})
    holder = holder_at(found, "Out")
    assert holder["chain"][0]["edge"] == "extra_root" and holder["tensors"]["count"] == 2
    direct = [h for h in found["holders"] if h["container"]["kind"] == "extra_roots"]
    assert direct and "_" in direct[0]["names"] and direct[0]["tensors"]["bytes"] == 400


def test_a_tensor_only_a_reference_cycle_holds_is_said_to_have_no_root():
    gc.disable()  # the cycle must still be there when the census looks
    try:
        cycle = [torch.randn(64)]
        cycle.append(cycle)
        del cycle
        found = census(collect=False)
    finally:
        gc.enable()
    [holder] = [h for h in found["holders"] if h["container"]["length"] == 2 and h["tensors"]["bytes"] == 256]
    assert holder["chain"] is None and holder["path"] is None
    assert holder["found_by"] == "referrers" and holder["search"] == "no_root"


def test_views_of_one_storage_are_counted_once():
    base = torch.randn(1024)
    views = {"views": [base[:10], base[100:], base.view(32, 32), base]}
    found = census(extra_roots={"kept": views})
    storage = storage_of(found, base)
    assert storage["bytes"] == 4096 and storage["tensors"] == 4 and storage["role"] == "held"
    holder = holder_at(found, "kept['views']")
    assert holder["tensors"]["count"] == 4 and holder["tensors"]["bytes"] == 4096
    offsets = sorted(found["tensors"][i]["offset"] for i in holder["tensors"]["listed"])
    assert offsets == [0, 0, 0, 100]
    assert len([s for s in found["storages"] if s["ptr"] == storage_key(base)]) == 1


def test_roles_add_up_to_every_storage_once():
    model = torch.nn.Linear(8, 8)
    found = census(extra_roots={"model": model, "extra": [torch.randn(5)]})
    assert sum(role["bytes"] for role in found["roles"].values()) == found["totals"]["bytes"]
    assert sum(role["storages"] for role in found["roles"].values()) == found["totals"]["storages"]
    listed = sum(storage["bytes"] for storage in found["storages"])
    assert listed + found["unlisted"]["bytes"] == found["totals"]["bytes"]


def test_the_user_frames_locals_are_named_with_their_function():
    batch = {"input_ids": torch.zeros(4, 128, dtype=torch.int64), "labels": torch.zeros(4, dtype=torch.int64)}
    inputs = torch.randn(4, 3, 32, 32)
    found = census(source_root=HERE)
    mine = {entry["name"]: entry for entry in found["frame_locals"]
            if entry["function"] == "test_the_user_frames_locals_are_named_with_their_function"}
    assert mine["inputs"]["container"] == "tensor" and mine["inputs"]["tensors"]["bytes"] == 4 * 3 * 32 * 32 * 4
    assert mine["batch"]["container"] == "dict" and mine["batch"]["length"] == 2
    assert mine["batch"]["tensors"]["bytes"] == 4 * 128 * 8 + 4 * 8
    assert mine["inputs"]["filename"] == __file__ and mine["inputs"]["thread"] == "MainThread"
    assert storage_of(found, inputs)["role"] == "frame_local"


def test_on_another_thread_it_says_so_and_gives_the_main_threads_stack():
    results = {}
    worker = threading.Thread(target=lambda: results.update(found=census()), name="census-worker")
    worker.start()
    worker.join()
    found = results["found"]
    assert found["thread"] == {"name": "census-worker", "main": False}
    functions = [frame["name"] for frame in found["main_stack"]]
    assert "test_on_another_thread_it_says_so_and_gives_the_main_threads_stack" in functions
    assert functions[-1] in ("join", "_wait_for_tstate_lock", "wait")  # innermost last: blocked in join
    assert not any("vramlens/agent" in frame["filename"] for frame in found["main_stack"])
    assert found["grad_mode"] == {"grad_enabled": True, "inference_mode": False}


def test_grad_mode_is_the_census_threads():
    with torch.no_grad():
        assert census()["grad_mode"]["grad_enabled"] is False
    with torch.inference_mode():
        assert census()["grad_mode"]["inference_mode"] is True


# -- caches ------------------------------------------------------------------------------
class LayerStore:  # a layer object of the cache below: a cache by its module's name
    __module__ = "somelib.cache_utils"

    def __init__(self, length):
        self.keys = torch.zeros(2, 4, length, 8)
        self.values = torch.zeros(2, 4, length, 8)


class LayeredCache:
    def __init__(self, layers, length):
        self.layers = [LayerStore(length) for _ in range(layers)]
        self.seen_tokens = length


class EmbeddingTableCache:
    def __init__(self):
        self.table = {"user": torch.zeros(100, 4)}


def test_a_cache_holds_its_layers_tensors_once():
    cache = LayeredCache(3, 16)
    found = census(extra_roots={"past_key_values": cache, "lookup": EmbeddingTableCache()})
    mine = [entry for entry in found["caches"] if entry["class"] == "LayeredCache"]
    assert len(mine) == 1 and mine[0]["kind"] == "cache" and mine[0]["bound_to"] == ["past_key_values"]
    assert not [entry for entry in found["caches"] if entry["class"] == "LayerStore"]  # inside the outer one
    [table] = [entry for entry in found["caches"] if entry["class"] == "EmbeddingTableCache"]
    assert table["tensors"]["bytes"] == 1600 and table["kind"] == "cache"
    assert mine[0]["tensors"]["count"] == 6 and mine[0]["tensors"]["bytes"] == 6 * 2 * 4 * 16 * 8 * 4
    assert storage_of(found, cache.layers[1].values)["role"] == "cache"


def test_a_cache_kept_as_a_submodule_is_a_cache_not_buffers():
    class KVCache(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("k_cache", torch.zeros(1, 2, 64, 8))
            self.register_buffer("v_cache", torch.zeros(1, 2, 64, 8))

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)
            self.kv_cache = KVCache()

    model = torch.nn.ModuleList([Attention(), Attention()])
    found = census(extra_roots={"model": model})
    entry = next(e for e in found["modules"] if e["bound_to"] == ["model"])
    assert entry["buffers"]["count"] == 0
    caches = sorted((c for c in found["caches"] if c["class"].endswith("KVCache")), key=lambda c: c["module"]["path"])
    assert [c["module"]["path"] for c in caches] == ["0.kv_cache", "1.kv_cache"]
    assert all(c["kind"] == "kv_cache" and c["tensors"]["bytes"] == 2 * 1024 * 4 for c in caches)


# -- bounded, and never a failure -------------------------------------------------------
def test_a_tiny_budget_cuts_it_short_and_says_so(tmp_path, cleanup_modules):
    module_from(tmp_path, "census_script_many", """
        import torch
        crowd = [{"i": i, "items": [i, str(i)]} for i in range(300_000)]
        deep = {"a": {"b": {"c": {"d": [torch.randn(10)]}}}}
    """)
    found = census(budget_s=0.0005)
    assert found["complete"] is False and found["skipped"]
    assert found["duration_s"] < 5


def test_tensor_subclasses_and_hostile_objects_do_not_break_it():
    calls = []

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(func)
            raise RuntimeError("user code ran")

    class Wrapper(torch.Tensor):  # no storage of its own, as DTensor or a fake tensor
        @staticmethod
        def __new__(cls, inner):
            return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype)

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            calls.append(func)
            raise RuntimeError("user code ran")

    class Hostile:
        def __getattribute__(self, name):
            raise RuntimeError("user code ran")

        def __eq__(self, other):
            raise RuntimeError("user code ran")

        __hash__ = object.__hash__

        def __repr__(self):
            raise RuntimeError("user code ran")

    class SneakyList(list):
        def __iter__(self):
            raise RuntimeError("user code ran")

        def __len__(self):
            raise RuntimeError("user code ran")

    class SneakyDict(dict):
        def items(self):
            raise RuntimeError("user code ran")

    class Slotted:
        __slots__ = ("tensor", "empty")

    logged = torch.randn(6).as_subclass(Logged)
    calls.clear()
    slotted = Slotted()
    slotted.tensor = torch.randn(7)
    hostile = Hostile()
    object.__setattr__(hostile, "kept", torch.randn(9))
    roots = {"logged": logged, "wrapper": Wrapper(torch.randn(3)), "hostile": hostile,
             "sneaky": SneakyList([torch.randn(11)]), "keyed": SneakyDict({Hostile(): torch.randn(13)}),
             "slotted": slotted, "cycle": []}
    roots["cycle"].append(roots["cycle"])
    found = census(extra_roots=roots)
    assert calls == []  # no __torch_function__, __torch_dispatch__ or other user code ran
    assert found["complete"] is True
    assert "test_tensor_subclasses_and_hostile_objects_do_not_break_it.<locals>.Wrapper" in "".join(found["without_storage"])
    held = {holder["path"]: holder["tensors"]["bytes"] for holder in found["holders"]}
    assert held["sneaky"] == 44 and held["hostile"] == 36 and held["slotted"] == 28
    assert held["keyed"] == 52
    subclass = [t for t in found["tensors"] if (t["class"] or "").endswith("Logged")]
    assert len(subclass) == 1 and subclass[0]["shape"] == [6]


def test_it_never_raises_even_when_torch_is_broken():
    class Broken:
        Tensor = torch.Tensor

        def __getattr__(self, name):
            raise RuntimeError("broken torch")

    kept = torch.randn(3)
    found = validate_census(json.loads(json.dumps(take_census(Broken(), "end", device_filter=on_cpu))))
    assert found["moment"] == "end" and found["grad_mode"] == {"grad_enabled": None, "inference_mode": None}
    assert found["totals"]["tensors"] >= 1 and storage_of(found, kept)["bytes"] == 12  # what did work is kept


def test_a_census_that_fails_while_listing_still_has_every_table(monkeypatch):
    from vramlens.agent.census import encode

    def broken(*args):
        raise RuntimeError("listing failed")

    monkeypatch.setattr(encode, "modules", broken)
    kept = [torch.randn(4)]
    found = census(extra_roots={"kept": kept})
    assert found["complete"] is False and any("listing failed" in sentence for sentence in found["skipped"])
    assert found["tensors"] == [] and found["holders"] == [] and found["totals"]["bytes"] == 0
    assert found["main_stack"] and found["objects_scanned"] > 0  # what came before the listing is kept


@pytest.mark.parametrize("own_dict", [True, False])
def test_beyond_the_walks_depth_the_referrer_search_joins_the_chain(tmp_path, cleanup_modules, own_dict):
    module = module_from(tmp_path, "census_script_deep", f"""
        import torch
        class Evaluator:
            pass
        evaluator = Evaluator()
        evaluator.val_outputs = [torch.randn(16) for _ in range(3)]
        if {own_dict}:
            evaluator.__dict__  # the attributes now live in a dict of their own, as before Python 3.11
        deep = [evaluator]
        for level in range(9):
            deep = [deep]
        del evaluator  # reachable only through deep, ten levels down: past the walk's depth
    """)
    found = census(source_root=str(tmp_path))
    [holder] = [h for h in found["holders"] if h["tensors"]["bytes"] == 3 * 64]
    assert holder["found_by"] == "referrers" and holder["search"] == "rooted"
    attribute = ".__dict__['val_outputs']" if own_dict or sys.version_info < (3, 11) else ".val_outputs"
    assert holder["path"] == "census_script_deep.deep" + "[0]" * 10 + attribute
    assert holder["chain"][-1]["name"] == "val_outputs"
    assert module.deep


def test_tensors_without_memory_behind_them_count_none():
    fake = torch.empty(1024, 1024, device="meta")  # as a fake tensor on a pretend device
    found = census(extra_roots={"fake": fake}, device_filter=lambda t: t.device.type in ("cpu", "meta"))
    assert not [s for s in found["storages"] if s["ptr"] == 0 and s["bytes"]]
    assert found["without_storage"]["torch.Tensor"] >= 1


def test_a_class_attribute_is_found_through_the_class(tmp_path, cleanup_modules):
    module_from(tmp_path, "census_script_class", """
        import torch
        class Config:
            table = torch.randn(50, 10)
    """)
    found = census(source_root=str(tmp_path))
    holder = holder_at(found, "census_script_class.Config.__dict__")
    assert holder["names"] == ["table"] and holder["tensors"]["bytes"] == 2000 and holder["search"] == "rooted"


def test_odd_keys_and_names_still_make_a_census_the_loader_reads():
    odd = {float("nan"): [torch.randn(2)], float("inf"): torch.randn(3), 10**40: torch.randn(4), ("a", 1): torch.randn(5)}
    found = census(extra_roots={"odd": odd, "x" * 10_000: torch.randn(6)})
    assert holder_at(found, "odd['nan']")["tensors"]["bytes"] == 8  # JSON has no nan: the key is named as text
    keyed = holder_at(found, "odd")
    assert {"inf", "<tuple>"} <= set(keyed["names"]) and keyed["tensors"]["bytes"] == 4 * (3 + 4 + 5)
    [roots] = [h for h in found["holders"] if h["container"]["kind"] == "extra_roots"]
    assert roots["names"] == ["x" * 200]  # names are cut at 200 characters
