# source: https://github.com/chrischoy/FCGF/issues/15
# Validation computes features with autograd on; wrapping it in no_grad cuts memory and time.


def _valid_epoch(model, val_data_loader, evaluate_hit_ratio):
    model.eval()
    hit_ratios = []
    for batch in val_data_loader:
        F0 = model(batch["sinput0"])  # expect: missing-no-grad
        F1 = model(batch["sinput1"])
        hit_ratios.append(float(evaluate_hit_ratio(F0, F1, batch["pairs"])))
    return sum(hit_ratios) / len(hit_ratios)
