# source: https://github.com/huggingface/transformers/issues/31372
# torch.cuda.empty_cache() added to every training step slowed training down; it was removed in PR 31530.
import torch


def train(model, dataloader, optimizer):
    for step, inputs in enumerate(dataloader):
        loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.cuda.empty_cache()  # expect: empty-cache-in-loop
