# source: https://github.com/axolotl-ai-cloud/axolotl/pull/3240
# Review: the no_grad block ends before the dataloader loop, so every model.generate call in the sampling loop builds graphs.
import torch


def generate_samples(unwrapped_model, dataloader, tokenizer, generation_config, num_samples):
    generations = []
    with torch.no_grad():
        samples_collected = 0

    for batch in dataloader:
        prompt_ids = batch["input_ids"]
        generated_ids = unwrapped_model.generate(prompt_ids, **generation_config)  # expect: missing-no-grad
        generations.append(tokenizer.decode(generated_ids[0]))
        samples_collected += 1
        if samples_collected >= num_samples:
            break
    return generations
