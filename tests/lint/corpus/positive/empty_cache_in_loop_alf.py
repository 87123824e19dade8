# source: https://github.com/HorizonRobotics/alf/pull/1231
# Option to call torch.cuda.empty_cache() at the beginning of every training iteration.
import torch


def train(algorithm, num_iterations):
    for it in range(num_iterations):
        torch.cuda.empty_cache()  # expect: empty-cache-in-loop
        algorithm.train_iter()
