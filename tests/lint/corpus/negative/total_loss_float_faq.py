# source: http://xrefandroid.com/android-16.0.0_r2/xref/external/pytorch/docs/source/notes/faq.rst
# FAQ fix for accumulating history: write total_loss += float(loss).


def train(model, criterion, optimizer, input, steps=10000):
    total_loss = 0
    for i in range(steps):
        optimizer.zero_grad()
        output = model(input)
        loss = criterion(output)
        loss.backward()
        optimizer.step()
        total_loss += float(loss)
    return total_loss
