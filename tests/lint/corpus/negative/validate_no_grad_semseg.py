# source: https://github.com/hszhao/semseg/issues/60
# The suggested fix: run the validation forward pass under torch.no_grad().
import torch


def validate(val_loader, model, criterion):
    model.eval()
    for i, (input, target) in enumerate(val_loader):
        input = input.cuda(non_blocking=True)
        target = target.cuda(non_blocking=True)
        with torch.no_grad():
            output = model(input)
            loss = criterion(output, target)
        print(i, loss.item())
