# source: https://github.com/facebookarchive/loop/issues/57
# GPU memory jumps sharply in the validation step and hits OOM inside evaluate().


def evaluate(model, criterion, valid_loader):
    model.eval()
    total = 0.0
    for full_txt, full_feat, spkr in valid_loader:
        output, _ = model(full_txt, spkr, full_feat)  # expect: missing-no-grad
        loss = criterion(output, full_feat)
        total += loss.item()
    return total / len(valid_loader)
