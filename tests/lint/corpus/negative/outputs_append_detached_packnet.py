# source: https://github.com/TRI-ML/packnet-sfm/pull/51
# "Detach loss before appending it to the training output list."


def train(model, dataloader, optimizer):
    outputs = []
    for batch in dataloader:
        optimizer.zero_grad()
        output = model(batch)
        output["loss"].backward()
        optimizer.step()
        outputs.append({"loss": output["loss"].detach()})
    return outputs
