# source: https://github.com/jokester-zzz/SSA-SC/issues/2
# Per-key losses are accumulated as tensors (loss[key] instead of loss[key].item()), so GPU memory keeps rising.


def train_epoch(model, loader, optimizer):
    epoch_loss = {}
    for batch in loader:
        scores = model(batch)
        loss = model.compute_loss(scores, batch)
        optimizer.zero_grad()
        loss["total"].backward()
        optimizer.step()
        for key in loss:
            if key not in epoch_loss:
                epoch_loss[key] = 0
            epoch_loss[key] += loss[key]  # expect: retained-graph
    return epoch_loss
