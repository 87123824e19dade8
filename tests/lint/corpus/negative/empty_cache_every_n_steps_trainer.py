# source: https://github.com/huggingface/transformers/pull/31530
# Reviewers suggest a toggleable "every n steps" empty_cache instead of one per step.
import torch


def train(model, dataloader, optimizer, empty_cache_steps=100):
    for step, inputs in enumerate(dataloader):
        loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % empty_cache_steps == 0:
            torch.cuda.empty_cache()
