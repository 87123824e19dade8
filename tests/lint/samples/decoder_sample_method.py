# A decoder's sampling loop written as a method of the model: it feeds the model its own output with
# autograd recording, so the graph of every step is kept until the loop ends. One finding is intended.
import torch
from torch import nn
from torch.nn import functional as F


class TinyDecoder(nn.Module):
    def __init__(self, vocab, width):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.body = nn.TransformerEncoderLayer(width, nhead=4, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        return self.head(self.body(self.embed(tokens)))

    def generate(self, tokens, steps, temperature=1.0):
        for _ in range(steps):
            scores = self(tokens)[:, -1, :] / temperature
            choice = torch.multinomial(F.softmax(scores, dim=-1), num_samples=1)
            tokens = torch.cat([tokens, choice], dim=1)
        return tokens
