"""A model server that dumps its own snapshot (no vramlens involved), as a production service would.

Recorded with: python server_dump.py OUT.pickle   (run from another folder, e.g. /srv/app)
Its response cache keeps every result with its autograd graph: memory grows per request.
Analyzed with: vramlens analyze OUT.pickle --source-root scenarios --total-memory <GPU memory>
"""

import sys

import torch
from torch import nn

torch.cuda.memory._record_memory_history(max_entries=100000)

model = nn.Sequential(nn.Linear(1024, 4096), nn.Tanh(), nn.Linear(4096, 256)).cuda()
responses = {}


def handle(request_id: int):
    features = torch.randn(2048, 1024, device="cuda")  # vramlens: culprit
    responses[request_id] = model(features)  # vramlens: culprit


for request_id in range(40):
    handle(request_id)
torch.cuda.memory._dump_snapshot(sys.argv[1])
print("dumped", len(responses))
