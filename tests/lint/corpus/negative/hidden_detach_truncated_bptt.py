# source: https://github.com/dpressel/dliss-tutorial/issues/1
# Hidden states are detached at every training step and the next batch starts from the old (detached) state.


def train_epoch(model, batches, criterion, optimizer, hidden):
    for x, y in batches:
        h, c = hidden
        hidden = (h.detach(), c.detach())
        optimizer.zero_grad()
        logits, hidden = model(x, hidden)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
    return hidden
