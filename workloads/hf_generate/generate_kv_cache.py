"""Batched generation with model.generate(): the KV cache outgrows the card while decoding.

transformers' generate() keeps a DynamicCache whose keys and values grow by one token per decoding
step (torch.cat per layer). With a large batch and many new tokens the cache itself no longer fits:
the OOM comes after many decoding steps, and halving --max-new-tokens (or --batch-size) makes it
fit. The growth is the cache doing its job, not a leak.
"""

import argparse

import torch
from transformers import LlamaConfig, LlamaForCausalLM, StoppingCriteria, StoppingCriteriaList


class Progress(StoppingCriteria):
    """Never stops generation; reports each decoded token."""

    def __init__(self):
        self.tokens = 0

    def __call__(self, input_ids, scores, **kwargs):
        self.tokens += 1
        print(f"[progress] token {self.tokens} done", flush=True)
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--prompt-len", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=384)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.prompt_len, args.max_new_tokens = min(args.batch_size, 2), 8, min(args.max_new_tokens, 6)

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=args.layers,
                         num_attention_heads=16, num_key_value_heads=16,
                         max_position_embeddings=args.prompt_len + args.max_new_tokens)
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    model = LlamaForCausalLM(config).to(device=args.device, dtype=dtype).eval()
    prompts = torch.randint(3, config.vocab_size, (args.batch_size, args.prompt_len), device=args.device)
    output = model.generate(
        prompts,
        attention_mask=torch.ones_like(prompts),
        max_new_tokens=args.max_new_tokens,
        min_new_tokens=args.max_new_tokens,
        do_sample=False,
        pad_token_id=0,
        eos_token_id=None,
        stopping_criteria=StoppingCriteriaList([Progress()]),
    )
    print(f"generated {output.shape[1] - args.prompt_len} tokens for {output.shape[0]} prompts", flush=True)


if __name__ == "__main__":
    main()
