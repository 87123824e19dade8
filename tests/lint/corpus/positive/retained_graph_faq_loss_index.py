# source: http://pytorch.org/docs/master/notes/faq.html
# FAQ: total_loss += loss[0] still accumulates history because indexing a tensor keeps it differentiable.


def run(model, criterion, input):
    total_loss = 0
    for i in range(10000):
        output = model(input)
        loss = criterion(output)
        total_loss += loss[0]  # expect: retained-graph
    return total_loss
