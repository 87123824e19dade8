# source: https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/pull/141
# The image pool stored generator outputs with their graph (Variables); the fix feeds plain tensors to the pool.
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
            image = torch.unsqueeze(image, 0)
            if self.num_imgs < self.pool_size:
                self.num_imgs += 1
                self.images.append(image)  # expect: retained-graph
                return_images.append(image)
            elif random.uniform(0, 1) > 0.5:
                idx = random.randint(0, self.pool_size - 1)
                return_images.append(self.images[idx].clone())
                self.images[idx] = image  # expect: retained-graph
            else:
                return_images.append(image)
        return torch.cat(return_images, 0)
