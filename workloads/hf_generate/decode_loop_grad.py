"""A hand-written greedy decoding loop that forgot torch.no_grad() and keeps every step's logits.

Each step runs the whole sequence through the model with autograd on and appends that step's
last-token logits to a module-level list, all_logits. The slice is a view of the full [batch, tokens, vocab] logits, and it
carries the step's autograd graph, so every step's activations stay alive: memory grows step after
step until the OOM. --fixed 1 decodes under torch.no_grad() and keeps a copy of the last-token
logits only.
"""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel


all_logits = []  # every decoded step's last-token logits, for scoring afterwards


def decode(model, prompts: torch.Tensor, new_tokens: int, fixed: bool) -> torch.Tensor:
    tokens = prompts
    for step in range(new_tokens):
        with torch.no_grad() if fixed else torch.enable_grad():
            logits = model(tokens).logits[:, -1, :]
        all_logits.append(logits.clone() if fixed else logits)
        tokens = torch.cat([tokens, logits.argmax(dim=-1, keepdim=True)], dim=1)
        print(f"[progress] token {step + 1} done", flush=True)
    return tokens


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--prompt-len", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--fixed", type=int, default=0, help="1: decode under torch.no_grad() and keep copies")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, for a check on the CPU")
    args = parser.parse_args()
    if args.dry_run:
        args.batch_size, args.prompt_len, args.max_new_tokens = min(args.batch_size, 2), 4, min(args.max_new_tokens, 4)

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=32000, n_positions=args.prompt_len + args.max_new_tokens, n_embd=512, n_layer=2, n_head=8,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).to(args.device).eval()
    prompts = torch.randint(0, config.vocab_size, (args.batch_size, args.prompt_len), device=args.device)
    decode(model, prompts, args.max_new_tokens, bool(args.fixed))
    scores = torch.stack([logits.max(dim=-1).values for logits in all_logits], dim=1)
    print(f"decoded {len(all_logits)} tokens; mean top score {scores.mean().item():.3f}", flush=True)


if __name__ == "__main__":
    main()
