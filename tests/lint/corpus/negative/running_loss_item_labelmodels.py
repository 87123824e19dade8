# source: https://github.com/BatsResearch/labelmodels/issues/4
# The fix: accumulate loss.item() so the running total holds no graph.
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
            running_loss += loss.item()
        print(epoch, running_loss)
