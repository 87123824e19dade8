"""Batched greedy generation with a small decoder written in plain torch and its own KV cache, the way
gpt-fast-style inference code is written (random weights, token ids made with torch).

Two caches, chosen by --cache:
- static: setup_caches() preallocates keys and values for --max-seq-len positions per layer before
  decoding, and every step writes its token in place. With --max-seq-len set to the model's context
  length rather than what the run needs, that allocation alone does not fit: the OOM comes before
  the first token. --max-seq-len 0 sizes the cache to the prompt plus the new tokens.
- concat: the cache grows by torch.cat of one token per layer per step, as many hand-written loops
  do: it is the working set of the generation by design, and a long enough run outgrows the card.
"""

import argparse

import torch
from torch import nn
from torch.nn import functional as F


class StaticKVCache(nn.Module):
    def __init__(self, batch: int, heads: int, max_len: int, head_dim: int, dtype, device):
        super().__init__()
        shape = (batch, heads, max_len, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)

    def update(self, positions: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        self.k_cache[:, :, positions] = k
        self.v_cache[:, :, positions] = v
        return self.k_cache, self.v_cache


class ConcatKVCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.k_cache = self.v_cache = None

    def update(self, positions: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        if self.k_cache is None:
            self.k_cache, self.v_cache = k, v
        else:
            self.k_cache = torch.cat([self.k_cache, k], dim=2)
            self.v_cache = torch.cat([self.v_cache, v], dim=2)
        return self.k_cache, self.v_cache


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads, self.head_dim = heads, width // heads
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.out = nn.Linear(width, width, bias=False)
        self.kv_cache = None

    def forward(self, x: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = self.kv_cache.update(positions, k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None and length > 1)
        return self.out(y.transpose(1, 2).reshape(batch, length, width))


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.attention_norm, self.ffn_norm = nn.RMSNorm(width), nn.RMSNorm(width)
        self.attention = Attention(width, heads)
        self.up, self.gate, self.down = (nn.Linear(width, 4 * width, bias=False), nn.Linear(width, 4 * width, bias=False),
                                         nn.Linear(4 * width, width, bias=False))

    def forward(self, x, positions, mask):
        x = x + self.attention(self.attention_norm(x), positions, mask)
        h = self.ffn_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Decoder(nn.Module):
    def __init__(self, vocab: int, width: int, heads: int, layers: int, context: int):
        super().__init__()
        self.context = context
        self.embed = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.RMSNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.static = False

    def setup_caches(self, batch: int, max_len: int, kind: str) -> None:
        self.static = kind == "static"
        for layer in self.layers:
            attention = layer.attention
            attention.kv_cache = (StaticKVCache(batch, attention.heads, max_len, attention.head_dim,
                                                self.head.weight.dtype, self.head.weight.device)
                                  if self.static else ConcatKVCache())
        self.max_len = max_len

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        mask = None
        if self.static:  # attend over the whole preallocated cache, up to each query's position
            mask = positions[:, None] >= torch.arange(self.max_len, device=tokens.device)[None, :]
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, positions, mask)
        return self.head(self.norm(x[:, -1:]))


@torch.inference_mode()
def generate(model: Decoder, prompt: torch.Tensor, new_tokens: int) -> torch.Tensor:
    length = prompt.shape[1]
    logits = model(prompt, torch.arange(length, device=prompt.device))
    out = [logits.argmax(-1)]
    for step in range(new_tokens - 1):
        position = torch.tensor([length + step], device=prompt.device)
        logits = model(out[-1], position)
        out.append(logits.argmax(-1))
        print(f"[progress] token {step + 1} done", flush=True)
    return torch.cat(out, dim=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--cache", choices=("static", "concat"), default="static")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--prompt-len", type=int, default=128)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--max-seq-len", type=int, default=0, help="positions of the static cache (0: prompt + new tokens)")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    vocab, width, heads, context = 32000, 1024, 16, 16384
    if args.dry_run:
        vocab, width, heads, context = 256, 32, 2, 64
        args.batch_size, args.prompt_len, args.max_new_tokens, args.layers = 2, 4, min(args.max_new_tokens, 3), 1
        args.max_seq_len = min(args.max_seq_len, context)

    torch.manual_seed(0)
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    model = Decoder(vocab, width, heads, args.layers, context).to(device=args.device, dtype=dtype).eval()
    model.setup_caches(args.batch_size, args.max_seq_len or args.prompt_len + args.max_new_tokens, args.cache)
    prompt = torch.randint(0, vocab, (args.batch_size, args.prompt_len), device=args.device)
    tokens = generate(model, prompt, args.max_new_tokens)
    print(f"generated {tokens.shape[1]} tokens for {tokens.shape[0]} prompts", flush=True)


if __name__ == "__main__":
    main()
