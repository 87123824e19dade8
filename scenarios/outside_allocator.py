"""Another process holds most of the GPU, so PyTorch fails with little of its own reserved.

Recorded with: vramlens run scenarios/outside_allocator.py (no cap: the device itself is full)
A leftover worker (think: a forgotten notebook kernel) keeps all but a few GiB of the card.
Expected cause: outside_allocator.
"""

import subprocess
import sys
import time

import torch

HOLDER = """
import sys, time, torch
free, total = torch.cuda.mem_get_info()
held = torch.empty(free - int(sys.argv[1]), dtype=torch.uint8, device="cuda")
print("ready", flush=True)
time.sleep(600)
"""


def start_leftover_worker(leave_free: int) -> subprocess.Popen:
    worker = subprocess.Popen([sys.executable, "-c", HOLDER, str(leave_free)], stdout=subprocess.PIPE, text=True)
    assert worker.stdout.readline().strip() == "ready"
    return worker


def train(batch: int) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096)).cuda()
    x = torch.randn(batch, 4096, device="cuda")  # vramlens: culprit
    loss = model(x).square().mean()  # vramlens: culprit
    loss.backward()


if __name__ == "__main__":
    worker = start_leftover_worker(leave_free=6 * 1024**3)
    try:
        train(batch=262144)
    finally:
        worker.kill()
