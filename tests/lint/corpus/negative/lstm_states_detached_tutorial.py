# source: https://github.com/yunjey/pytorch-tutorial/issues/90
# The language-model tutorial detaches the LSTM states at every step (truncated BPTT), so history does not pile up.
import torch


def detach(states):
    return [state.detach() for state in states]


def train(model, ids, criterion, optimizer, num_layers, batch_size, hidden_size, seq_length):
    states = (torch.zeros(num_layers, batch_size, hidden_size),
              torch.zeros(num_layers, batch_size, hidden_size))
    for i in range(0, ids.size(1) - seq_length, seq_length):
        inputs = ids[:, i:i + seq_length]
        targets = ids[:, (i + 1):(i + 1) + seq_length]
        states = detach(states)
        outputs, states = model(inputs, states)
        loss = criterion(outputs, targets.reshape(-1))
        model.zero_grad()
        loss.backward()
        optimizer.step()
