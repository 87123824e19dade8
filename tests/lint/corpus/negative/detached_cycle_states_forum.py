# source: https://discuss.pytorch.org/t/training-rnn-with-detached-states/29868
# Each cycle backpropagates its own loss; the states handed to the next cycle come out of the model already detached.


def train_cycles(model, loss_function, optimizer, x, target, inputs, total_cycles=5):
    for cycle in range(total_cycles):
        y, outputs = model(x, inputs)
        loss = loss_function(target, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        inputs = [o.detach() for o in outputs]
    return inputs
