# source: https://github.com/sgadgil6/cnslab_fmri/issues/4
# forward() keeps the LSTM state on self; the next backward then needs retain_graph=True, which runs out of memory.
import torch
import torch.nn as nn


class FMRILSTM(nn.Module):
    def __init__(self, hidden_dim, input_dim):
        super().__init__()
        self.lstm = nn.LSTM(input_dim, hidden_dim, batch_first=True)
        self.linear = nn.Linear(hidden_dim, 1)

    def forward(self, x):
        lstm_out, self.hidden = self.lstm(x)  # expect: retained-graph
        return torch.sigmoid(self.linear(lstm_out[:, -1, :]))


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward(retain_graph=True)  # expect: retain-graph-in-loop
        optimizer.step()
