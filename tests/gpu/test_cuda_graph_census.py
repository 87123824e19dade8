"""A census and a snapshot taken while the program captures a CUDA graph change nothing it does.

The peak census runs on the agent's live-status thread, whenever memory has grown: it may land in
the middle of a `torch.cuda.graph` capture on the main thread. During a capture any CUDA call that
synchronises (an `.item()` of a CUDA tensor, a copy to the host) invalidates the capture, and the
program's `with torch.cuda.graph(...)` raises. The census reads metadata only (the capturable
optimizer's step count, a CUDA tensor, is left unread); this test makes the two meet on purpose and
checks that every capture still replays and trains.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

SCRIPT = r"""
import json, threading, time, torch
from torch import nn
from vramlens.agent.census import take_census


def train_by_replay(counting: bool) -> dict:
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512))
                            for _ in range(24)]).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, capturable=True)  # its step count lives on the GPU
    x, y = torch.randn(64, 512, device="cuda"), torch.randn(64, 512, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as the CUDA-graph docs ask
        for _ in range(3):
            optimizer.zero_grad(set_to_none=False)
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    census_windows, capture_windows, errors, scanned = [], [], [], []
    stop = threading.Event()

    def keep_counting():
        while not stop.is_set():
            began = time.perf_counter()
            try:
                census = take_census(torch, "peak", budget_s=0.5, device=0)
                torch.cuda.memory._snapshot()
                torch.cuda.memory_allocated(0)
                scanned.append(census.get("objects_scanned", 0))
            except Exception as error:
                errors.append(repr(error))
            census_windows.append((began, time.perf_counter()))

    counter = threading.Thread(target=keep_counting, daemon=True)
    if counting:
        counter.start()
    graphs, overlaps = [], 0
    for attempt in range(60):  # the same number of captures with and without the census
        graph = torch.cuda.CUDAGraph()
        began = time.perf_counter()
        with torch.cuda.graph(graph):
            optimizer.zero_grad(set_to_none=False)
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        capture_windows.append((began, time.perf_counter()))
        graphs.append((graph, loss))
    stop.set()
    if counting:
        counter.join(timeout=30)
    overlaps = sum(1 for c0, c1 in census_windows for g0, g1 in capture_windows if c0 < g1 and g0 < c1)
    graph, loss = graphs[-1]
    losses = []
    for _ in range(30):
        graph.replay()
        losses.append(float(loss))
    return {"overlaps": overlaps, "censuses": len(scanned), "least_scanned": min(scanned) if scanned else 0,
            "errors": errors, "losses": losses}


print(json.dumps({"counted": train_by_replay(True), "alone": train_by_replay(False)}))
"""


def test_a_census_during_a_capture_leaves_the_graph_working(tmp_path):
    script = tmp_path / "capture_while_counting.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "server"))
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=400)
    assert run.returncode == 0, run.stderr[-3000:]
    facts = json.loads(run.stdout.strip().splitlines()[-1])
    counted, alone = facts["counted"], facts["alone"]
    assert counted["overlaps"] >= 10, counted  # the censuses really ran during captures
    assert counted["errors"] == [] and counted["least_scanned"] > 0, counted
    # The captured step trains, and exactly as it does with no census beside it.
    assert counted["losses"][-1] < counted["losses"][0], counted["losses"]
    assert counted["losses"] == pytest.approx(alone["losses"], rel=1e-4), (counted["losses"], alone["losses"])
