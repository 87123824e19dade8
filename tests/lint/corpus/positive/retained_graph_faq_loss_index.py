# source: http://pytorch.org/docs/master/notes/faq.html
# FAQ: total_loss += loss[0] still accumulates history because indexing a tensor keeps it differentiable.


def run(model, criterion, input, steps=10000):
    total_loss = 0
    for i in range(steps):
        output = model(input)
        loss = criterion(output)
        total_loss += loss[0]  # expect: retained-graph
    return total_loss
