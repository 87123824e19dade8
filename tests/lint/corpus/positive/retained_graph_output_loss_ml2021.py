# source: https://github.com/pai4451/ML2021/issues/2
# train_loss += output.loss stored the complete computation graph and ran out of 64 GB of RAM.


def train(model, train_loader, optimizer, total_steps):
    train_loss = 0
    step = 0
    while step < total_steps:
        for data in train_loader:
            output = model(input_ids=data[0], labels=data[1])
            train_loss += output.loss  # expect: retained-graph
            output.loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            step += 1
    return train_loss
