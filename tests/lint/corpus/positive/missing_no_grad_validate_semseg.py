# source: https://github.com/hszhao/semseg/issues/60
# The validation loop calls the model without torch.no_grad(), and training runs out of memory after validation.


def validate(val_loader, model, criterion):
    model.eval()
    for i, (input, target) in enumerate(val_loader):
        input = input.cuda(non_blocking=True)
        target = target.cuda(non_blocking=True)
        output = model(input)  # expect: missing-no-grad
        loss = criterion(output, target)
        print(i, loss.item())
