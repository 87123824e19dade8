# source: http://pytorch.org/docs/master/notes/faq.html
# FAQ: total_loss += loss[0] still accumulates history because indexing a tensor keeps it differentiable.


def run(model, criterion, optimizer, input):
    total_loss = 0
    for i in range(10000):
        optimizer.zero_grad()
        output = model(input)
        loss = criterion(output)
        loss.backward()
        optimizer.step()
        total_loss += loss[0]  # expect: retained-graph
    return total_loss
