# source: https://github.com/pytorch/pytorch/issues/2198
# Feeding the RNN's hidden state back in for 10000 steps without detaching keeps the whole history in memory.
import torch
import torch.nn as nn

input_size, hidden_size = 32, 64
rnn = nn.RNN(input_size, hidden_size).cuda()
hidden = torch.zeros(1, 16, hidden_size, device="cuda")
for i in range(10000):
    data = torch.rand(1, 16, input_size, device="cuda")
    out, hidden = rnn(data, hidden)  # expect: retained-graph
