# source: https://discuss.pytorch.org/t/gpu-memory-increase-while-i-wanna-to-backward-with-accumulative-loss/43284
# Summing per-sequence losses and calling backward once on the sum; the poster found the growth came from elsewhere.


def train_step(criterion, model, sequences, targets, optimizer):
    optimizer.zero_grad()
    loss = 0
    for seq, target in zip(sequences, targets):
        loss_part = criterion(model(seq), target)
        loss += loss_part
    loss.backward()
    optimizer.step()
    return loss.item()
