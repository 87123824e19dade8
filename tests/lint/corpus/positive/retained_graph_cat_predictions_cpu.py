# source: https://github.com/pytorch/pytorch/issues/13613
# Inference results are concatenated with torch.cat((acc, out.cpu())); GPU memory grows until OOM because .cpu() keeps the graph.
import torch


def predict(model, loader):
    model.eval()
    y_predlabel = torch.empty(0)
    for batch_x in loader:
        batch_y_predlabel = model(batch_x.cuda())  # expect: missing-no-grad
        y_predlabel = torch.cat((y_predlabel, batch_y_predlabel.cpu()))  # expect: retained-graph
    return y_predlabel
