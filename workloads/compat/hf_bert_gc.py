"""BERT-large fine-tune with gradient checkpointing and bf16 autocast (transformers, random weights).

The program that stack gathering at frees broke: backward() failed with SystemError under
context="all". Prints its losses (2 decimals) and one `step_ms` line per step."""
import argparse
import time

import torch
from transformers import BertConfig, BertForSequenceClassification

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--reentrant", action="store_true")
args = parser.parse_args()
torch.manual_seed(0)
model = BertForSequenceClassification(BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                                 intermediate_size=4096, num_labels=2)).cuda()
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": args.reentrant})
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
ids = torch.randint(0, 30000, (8, 256), device="cuda")
labels = torch.randint(0, 2, (8,), device="cuda")
for step in range(args.steps):
    torch.cuda.synchronize()
    began = time.perf_counter()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=labels).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print(f"step_ms {1000 * (time.perf_counter() - began):.3f}")
    print(f"step {step} loss finite {bool(torch.isfinite(loss))}")
print("done", args.steps, "steps")
