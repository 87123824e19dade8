"""Checks, on the machine that records, that the census can read saved tensors without unpacking them.

    PYTHONPATH=server python3 workloads/probe_graph_walk.py

Prints the torch version, whether its SavedTensor binding has the ``data`` and ``unpack_hook``
properties the graph walk reads, and what a census finds for a list of losses kept with their
graphs beside a checkpointed graph whose unpack hook must never run. Exit 1 if a hook ran.
"""

import json
import sys

import torch
from torch.utils.checkpoint import checkpoint

from vramlens.agent.census import take_census
from vramlens.agent.census.autograd_graphs import _SavedReader

device = "cuda" if torch.cuda.is_available() else "cpu"
calls = []
kept = {}


def main() -> int:
    layer = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(device)
    kept["losses"] = [layer(torch.randn(512, 1024, device=device)).pow(2).mean() for _ in range(4)]

    def pack(tensor):
        return tensor.shape

    def unpack(shape):
        calls.append(shape)
        raise RuntimeError("an unpack hook ran")

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        kept["hooked"] = [layer(torch.randn(512, 1024, device=device)).exp().sum()]
    kept["checkpointed"] = [checkpoint(layer, torch.randn(512, 1024, device=device, requires_grad=True),
                                       use_reentrant=False).sum()]
    census = take_census(torch, "on_demand", budget_s=5.0,
                         device_filter=(lambda t: t.is_cuda) if device == "cuda" else (lambda t: True))
    graphs = census.get("graphs") or {}
    owners = [{k: owner[k] for k in ("role", "owner", "roots", "nodes", "bytes", "exclusive_bytes")}
              for owner in graphs.get("owners", [])]
    print(json.dumps({"torch": torch.__version__, "python": sys.version.split()[0], "device": device,
                      "saved_tensor_properties": _SavedReader(torch).usable, "mechanism": graphs.get("mechanism"),
                      "unpack_hook_calls": len(calls), "hooked": graphs.get("hooked"), "empty": graphs.get("empty"),
                      "owners": owners, "skipped": census.get("skipped"), "duration_s": census.get("duration_s")},
                     indent=1))
    return 1 if calls else 0


if __name__ == "__main__":
    sys.exit(main())
