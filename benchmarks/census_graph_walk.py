"""What the census' autograd-graph walk adds to the census' time, side by side with the census without it.

    PYTHONPATH=server python benchmarks/census_graph_walk.py [--layers 12] [--kept 16] [--repeats 5]

A 12-block MLP-and-attention-like stack on the CPU (the walk is Python over graph nodes; the device does
not matter), a list of --kept losses kept with their graphs, and the step in progress' graph: the census is
taken --repeats times with the walk and as many times without it (the two phases replaced by nothing),
alternating, and the medians are printed with the graph facts the walk found.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from vramlens.agent.census import autograd_graphs, take, take_census


class Block(torch.nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        attention = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        x = x + self.proj(attention @ v)
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--kept", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", type=float, default=1.0, help="the census' time budget (the agent's: 1 s)")
    options = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Block(128) for _ in range(options.layers)])
    kept = [model(torch.randn(4, 64, 128)).pow(2).mean() for _ in range(options.kept)]
    loss = model(torch.randn(4, 64, 128)).pow(2).mean()  # the step in progress
    on_cpu = lambda tensor: tensor.device.type == "cpu"  # noqa: E731
    real = (autograd_graphs.walk_graphs, autograd_graphs.inside_claimed_graphs)
    timings = {"with the graph walk": [], "without": []}
    walk_seconds = []

    def timed(*args):
        started = time.perf_counter()
        try:
            return real[0](*args)
        finally:
            walk_seconds.append(time.perf_counter() - started)

    facts = None
    for _ in range(options.repeats):
        for label in timings:
            if label == "without":
                take.autograd_graphs.walk_graphs = lambda *args: None
                take.autograd_graphs.inside_claimed_graphs = lambda *args: set()
            else:
                take.autograd_graphs.walk_graphs = timed
            started = time.perf_counter()
            census = take_census(torch, "on_demand", device_filter=on_cpu, budget_s=options.budget)
            timings[label].append(time.perf_counter() - started)
            take.autograd_graphs.walk_graphs, take.autograd_graphs.inside_claimed_graphs = real
            if label != "without":
                facts = census.get("graphs")
    for label, values in timings.items():
        print(f"census {label:20s} median {statistics.median(values) * 1000:7.1f} ms  (of {len(values)})")
    ratio = statistics.median(timings["with the graph walk"]) / statistics.median(timings["without"])
    print(f"the walk itself (walk_graphs) median {statistics.median(walk_seconds) * 1000:.1f} ms")
    print(f"ratio {ratio:.2f}; graph facts: {facts['nodes']} nodes, {facts['saved']} saved tensors read, "
          f"{facts['totals']['storages']} storages kept, owners {[(o['role'], o['roots'], o['passes']) for o in facts['owners']]}")
    del kept, loss


if __name__ == "__main__":
    main()
