# source: https://github.com/pytorch/pytorch/issues/45022
# torch.zeros(...).cuda() for every batch inside the training loop takes far too long after the first iteration.
import torch


def train(net, iterators, optimiser, config, pre_channels):
    for tup in zip(*iterators):
        net.zero_grad()
        all_img1 = torch.zeros(config.batch_sz, pre_channels, config.input_sz, config.input_sz).cuda()  # expect: host-tensor-to-device
        all_affine2_to_1 = torch.zeros(config.batch_sz, 2, 3).cuda()  # expect: host-tensor-to-device
        for i, (img1, affine) in enumerate(tup):
            all_img1[i] = img1
            all_affine2_to_1[i] = affine
        loss = net(all_img1, all_affine2_to_1).mean()
        loss.backward()
        optimiser.step()
