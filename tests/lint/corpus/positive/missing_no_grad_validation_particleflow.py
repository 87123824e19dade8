# source: https://github.com/jpata/particleflow/pull/290
# no_grad was required around the forward pass in the validation loop to allow larger batch sizes without OOM.


def validation_step(model, valid_loader, loss_fn, device):
    model.eval()
    total = 0.0
    for batch in valid_loader:
        batch = batch.to(device)
        ypred = model(batch.X, batch.mask)  # expect: missing-no-grad
        total += float(loss_fn(ypred, batch.ytarget))
    return total / len(valid_loader)
