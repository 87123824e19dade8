# source: https://github.com/allenai/OLMo/pull/164
# The fix: generate() runs under torch.no_grad().
import torch


class Olmo:
    def __init__(self, model):
        self.model = model

    @torch.no_grad()
    def generate(self, input_ids, max_steps=100):
        tokens = input_ids
        for _ in range(max_steps):
            logits = self.model(tokens)
            next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            tokens = torch.cat([tokens, next_token], dim=1)
        return tokens
