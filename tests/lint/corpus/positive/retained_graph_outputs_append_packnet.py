# source: https://github.com/TRI-ML/packnet-sfm/issues/47
# Each step's output dict (holding the undetached loss) is appended to an epoch-long list, so memory grows all epoch.


def train(model, dataloader, optimizer):
    outputs = []
    for batch in dataloader:
        optimizer.zero_grad()
        output = model(batch)
        output["loss"].backward()
        optimizer.step()
        outputs.append(output)  # expect: retained-graph
    return outputs
