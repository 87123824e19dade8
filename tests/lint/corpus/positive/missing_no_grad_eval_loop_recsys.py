# source: https://github.com/meta-recsys/generative-recommenders/pull/387
# eval_loop ran the model with gradient tracking on; wrapping it in no_grad reduces GPU memory.


def eval_loop(model, eval_data_loader, device, metrics):
    model.eval()
    for row in eval_data_loader:
        seq = row["seq"].to(device)
        target = row["target"].to(device)
        top_k_ids, top_k_scores = model(seq)  # expect: missing-no-grad
        metrics.update(top_k_ids.cpu(), target.cpu())
    return metrics.compute()
