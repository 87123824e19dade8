# source: https://github.com/VITA-Group/DeblurGANv2/issues/15
# Trainer._validate runs the generator without torch.no_grad().


class Trainer:
    def __init__(self, netG, criterionG, val_dataset):
        self.netG = netG
        self.criterionG = criterionG
        self.val_dataset = val_dataset

    def _validate(self, epoch):
        self.netG.eval()
        losses = []
        for data in self.val_dataset:
            inputs, targets = data["a"].cuda(), data["b"].cuda()
            outputs = self.netG(inputs)  # expect: missing-no-grad
            losses.append(self.criterionG(outputs, targets).item())
        return sum(losses) / len(losses)
