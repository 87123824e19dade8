# source: https://github.com/jlamprou/Infini-Attention/issues/3
# Backpropagating per segment needed retain_graph=True, which used more memory; detaching the compressive memory removed the need.


def train_step(model, segments, optimizer):
    memory, norm = None, None
    for segment in segments:
        out, memory, norm = model(segment, memory, norm)  # expect: retained-graph
        loss = out.loss
        loss.backward(retain_graph=True)  # expect: retain-graph-in-loop
    optimizer.step()
    optimizer.zero_grad()
