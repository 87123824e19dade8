"""The model the checkpoint scripts share: a Llama-style causal LM built from its config."""

from transformers import LlamaConfig, LlamaForCausalLM


def build_model(layers: int = 4, small: bool = False) -> LlamaForCausalLM:
    hidden, intermediate = (64, 128) if small else (2048, 5504)
    config = LlamaConfig(vocab_size=8192, hidden_size=hidden, intermediate_size=intermediate,
                         num_hidden_layers=layers, num_attention_heads=16, num_key_value_heads=16,
                         max_position_embeddings=256)
    return LlamaForCausalLM(config)
