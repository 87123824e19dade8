# source: https://github.com/google/brax/pull/152
# The PyTorch training example summed the loss tensor into a running total; the fix uses float(loss).
import torch


def train(agent, env, optimizer, num_steps):
    total_loss = 0
    for step in range(num_steps):
        optimizer.zero_grad()
        observation = env.reset()
        loss = agent.loss(observation)
        loss.backward()
        optimizer.step()
        total_loss += loss  # expect: retained-graph
    return total_loss / num_steps
