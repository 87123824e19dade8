# source: https://github.com/rballester/tntorch/pull/19
# loss_history kept the full loss tensors; after 1000 iterations a 12 GB machine froze.
import torch


def optimize(tensors, loss_function, lr=1e-3, max_iter=1000):
    optimizer = torch.optim.Adam(tensors, lr=lr)
    loss_history = []
    for i in range(max_iter):
        optimizer.zero_grad()
        loss = loss_function(*tensors)
        loss.backward()
        optimizer.step()
        loss_history.append(loss)  # expect: retained-graph
    return loss_history
