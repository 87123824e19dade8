# source: https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/404
# The ImagePool stores image.data (no autograd history) in its buffer.
import random

import torch


class ImagePool:
    def __init__(self, pool_size):
        self.pool_size = pool_size
        self.num_imgs = 0
        self.images = []

    def query(self, images):
        return_images = []
        for image in images:
            image = torch.unsqueeze(image.data, 0)
            if self.num_imgs < self.pool_size:
                self.num_imgs += 1
                self.images.append(image)
                return_images.append(image)
            elif random.uniform(0, 1) > 0.5:
                idx = random.randint(0, self.pool_size - 1)
                tmp = self.images[idx].clone()
                self.images[idx] = image
                return_images.append(tmp)
            else:
                return_images.append(image)
        return torch.cat(return_images, 0)
