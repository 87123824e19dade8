# source: https://github.com/BatsResearch/labelmodels/issues/4
# running_loss sums non-detached loss tensors, so every batch's graph stays alive until the GPU runs out.
import torch


def fit(model, batches, epochs, lr=0.01):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        running_loss = 0.0
        for batch in batches:
            optimizer.zero_grad()
            loss = model(batch).sum()
            loss.backward()
            optimizer.step()
            running_loss += loss  # expect: retained-graph
        print(epoch, running_loss)
