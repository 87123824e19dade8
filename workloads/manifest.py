"""The corpus: every workload, how it is run, what scales it, and what the confirming runs change.

One entry per recorded capture. A case and its counter-case share a script where the counter is
the same program with one thing changed (the fix, or a batch that fits); the counter then runs
under the case's calibrated cap, so the two differ in that one thing only.

`intent` is the cause the workload was built to show. It is never the ground truth: that is
measured (ground_truth.py), and where the two disagree the measurement wins.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Knob:
    """A numeric argument that scales the work; the confirming runs halve it."""

    flag: str  # as the script spells it: "--batch-size", or nanoGPT's "--batch_size"
    value: int

    @property
    def halved(self) -> int:
        return max(1, self.value // 2)


@dataclass(frozen=True)
class Fix:
    """The one change in the user's code (through an argument) that should prevent the OOM."""

    flag: str
    value: str
    # drop_references: stop keeping tensors from earlier steps (detach, .item(), .cpu(), clear)
    # shrink_working_set: make one step's live set smaller (map_location, a lighter optimizer)
    # release_other_library: make the other library give its device memory back
    kind: str
    text: str


@dataclass(frozen=True)
class Calibration:
    """How the memory cap (or the size) is found on the machine, before any recorded run.

    between: run the baseline and each `fits` configuration without a cap; the cap goes halfway
        between the largest peak reserved of the fits and the baseline's peak allocated (so the
        baseline must run out whatever the allocator does, and the fits have room). A growth case
        lists its halved steps only: its fix keeps nothing across steps, so it needs less.
    headroom: run the baseline without a cap; the cap is its peak allocated / `target`, so a completed run ends
        at that share of the cap (a growth that has not reached the limit yet).
    fragmentation: run the baseline without a cap, then a ladder of caps between its packed peak
        (allocated) and its reserved peak; the highest cap that runs out is kept.
    outside: no cap (the other library fills the real device); one probe run with the other
        library released sizes --batch-size so PyTorch alone needs `target` of the device.
    """

    kind: str
    fits: tuple[tuple[tuple[str, str], ...], ...] = ()  # each: the argument overrides of one configuration
    target: float = 0.0  # outside: PyTorch's share of the device at the calibrated batch
    probe: tuple[tuple[str, str], ...] = ()  # outside: the overrides of the probe run
    probe_batch: int = 0


@dataclass(frozen=True)
class Workload:
    name: str  # the fixture folder: tests/fixtures/realworld/<name>/
    family: str  # the folder the scripts are copied from (under workloads/) ...
    folder: str  # ... and the neutral folder they run from (under the root, e.g. /workspace/<folder>)
    script: str  # inside that folder
    library: str
    intent: str  # the cause it was built to show: working_set | retained_references | fragmentation | outside_allocator | cached_not_leak | no_problem
    story: str  # one sentence: what the program does and why it ends as it does
    args: tuple[str, ...] = ()
    expect: str = "oom"  # oom | completes
    calibration: Calibration | None = None
    cap_from: str | None = None  # a counter-case runs under its case's cap (and calibrated sizes)
    scale: Knob | None = None
    steps: Knob | None = None
    fix: Fix | None = None
    growth_holder: str | None = None  # growth a cache holds by design: library_cache (the library's) | own_cache (the program's KV cache class)
    progress: str = r"^(\[rank\d+\]:\s*)?\[progress\] "  # a line per completed step (torchrun may prefix the rank)
    launcher: str = "python"  # python | torchrun
    alone: bool = False  # uses another library's allocator: nothing else may run meanwhile
    prep: tuple[tuple[str, ...], ...] = ()  # commands run once in the folder before any run
    timeout_s: float = 90.0
    optional: bool = False  # recorded last, skipped first when time runs short
    sized_by: tuple[str, ...] = field(default=())  # arguments set by calibration (outside)
    # The split of the diagnosis benchmark. None: the first round's rule (the name's sha1 ends in 0-4);
    # True: a workload written after the engine was tuned on the corpus, never seen by it.
    held_out: bool | None = None
    round: int = 1  # the recording round that added it (record.py --round N records one round only)
    storing_line: str | None = None  # "file:line" of the statement that keeps the memory: the line a user must change

    @property
    def is_held_out(self) -> bool:
        if self.held_out is not None:
            return self.held_out
        return hashlib.sha1(self.name.encode()).hexdigest()[-1] in "01234"


def _between(*fits: tuple[tuple[str, str], ...]) -> Calibration:
    return Calibration("between", fits=tuple(fits))


def _set(flag: str, value) -> tuple[tuple[str, str], ...]:
    return ((flag, str(value)),)


NANOGPT_ARGS = (
    "--dataset=synthetic", "--compile=False", "--batch_size=32", "--block_size=256", "--n_layer=4",
    "--n_head=8", "--n_embd=512", "--max_iters=6", "--eval_iters=2", "--eval_interval=1000",
    "--log_interval=1", "--gradient_accumulation_steps=1", "--always_save_checkpoint=False",
)

WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "hf_trainer_first_step", "hf_trainer", "hf_trainer", "train_first_step.py", "transformers Trainer",
        "working_set", "Trainer.train() on GPT-2 with a batch too large: the OOM comes in the first training step.",
        args=("--batch-size", "32", "--seq-len", "256", "--max-steps", "3"),
        calibration=_between(_set("--batch-size", 16)),
        scale=Knob("--batch-size", 32), steps=Knob("--max-steps", 3)),
    Workload(
        "hf_trainer_eval_gather", "hf_trainer", "hf_trainer", "evaluate_gather.py", "transformers Trainer",
        "retained_references",
        "Trainer.evaluate() with compute_metrics and eval_accumulation_steps unset keeps every batch's logits on "
        "the GPU until the OOM after several evaluation batches.",
        args=("--eval-samples", "128", "--eval-batch-size", "16", "--seq-len", "96"),
        calibration=_between(_set("--eval-samples", 64)),
        scale=Knob("--eval-batch-size", 16), steps=Knob("--eval-samples", 128),
        fix=Fix("--eval-accumulation-steps", "1", "drop_references",
                "eval_accumulation_steps=1 moves the gathered predictions to the CPU after every step")),
    Workload(
        "hf_trainer_eval_accumulate", "hf_trainer", "hf_trainer", "evaluate_gather.py", "transformers Trainer",
        "no_problem", "The same evaluation with eval_accumulation_steps=1 completes under the same cap.",
        args=("--eval-samples", "128", "--eval-batch-size", "16", "--seq-len", "96", "--eval-accumulation-steps", "1"),
        expect="completes", cap_from="hf_trainer_eval_gather"),
    Workload(
        "hf_generate_kv_cache", "hf_generate", "hf_generate", "generate_kv_cache.py", "transformers generate",
        "working_set",
        "model.generate() on a batch of 256 prompts: the DynamicCache grows by one token per decoding step until "
        "it outgrows the card.",
        args=("--batch-size", "256", "--max-new-tokens", "384"),
        calibration=_between(_set("--max-new-tokens", 192)),
        scale=Knob("--batch-size", 256), steps=Knob("--max-new-tokens", 384), growth_holder="library_cache"),
    Workload(
        "hf_decode_loop_grad", "hf_generate", "hf_generate", "decode_loop_grad.py", "transformers (hand-written loop)",
        "retained_references",
        "A greedy decoding loop with grad mode on keeps every step's logits with its graph until the OOM.",
        args=("--batch-size", "16", "--max-new-tokens", "48"),
        calibration=_between(_set("--max-new-tokens", 24)),
        scale=Knob("--batch-size", 16), steps=Knob("--max-new-tokens", 48),
        fix=Fix("--fixed", "1", "drop_references", "decode under torch.no_grad() and keep copies of the last-token logits")),
    Workload(
        "lightning_val_outputs", "lightning_fit", "lightning_fit", "keep_val_outputs.py", "Lightning",
        "retained_references",
        "A LightningModule appends validation logits to self.val_outputs and never clears it: validation runs out "
        "of memory after several epochs.",
        args=("--batch-size", "16", "--max-epochs", "8", "--val-batches", "4"),
        calibration=_between(_set("--max-epochs", 4)),
        scale=Knob("--batch-size", 16), steps=Knob("--max-epochs", 8),
        fix=Fix("--fixed", "1", "drop_references", "keep predicted ids only and clear self.val_outputs every epoch")),
    Workload(
        "lightning_first_step", "lightning_fit", "lightning_fit", "first_step_too_large.py", "Lightning",
        "working_set", "Trainer.fit() whose first training_step is too large for the card.",
        args=("--batch-size", "48", "--max-steps", "3"),
        calibration=_between(_set("--batch-size", 24)),
        scale=Knob("--batch-size", 48), steps=Knob("--max-steps", 3)),
    Workload(
        "compile_too_large", "compiled", "compiled", "compiled_train.py", "torch.compile",
        "working_set", "A torch.compile'd model at too large a batch: the OOM comes in the first, compiling step.",
        args=("--batch-size", "64", "--steps", "3"),
        calibration=_between(_set("--batch-size", 32)),
        scale=Knob("--batch-size", 64), steps=Knob("--steps", 3), timeout_s=240),
    Workload(
        "compile_fits", "compiled", "compiled", "compiled_train.py", "torch.compile",
        "no_problem", "The same compiled model at half the batch trains to the end under the same cap.",
        args=("--batch-size", "32", "--steps", "3"), expect="completes", cap_from="compile_too_large", timeout_s=240),
    Workload(
        "adamw_first_step", "optimizer", "optimizer", "adamw_first_step.py", "torch.optim.AdamW (transformers Llama)",
        "working_set",
        "Parameters and gradients fit, but AdamW's state (two more copies of the parameters) does not: the OOM "
        "comes inside the first optimizer.step().",
        args=("--layers", "6", "--steps", "2"),
        calibration=_between(_set("--layers", 3), _set("--optimizer", "adafactor")),
        scale=Knob("--layers", 6), steps=Knob("--steps", 2),
        fix=Fix("--optimizer", "adafactor", "shrink_working_set", "Adafactor keeps factored second moments instead of two full copies")),
    Workload(
        "losses_append_graph", "optimizer", "optimizer", "losses_append.py", "transformers GPT-2 (plain loop)",
        "retained_references",
        "A training loop appends a held-out loss with its graph every step: memory grows until the OOM after many steps.",
        args=("--steps", "40"),
        calibration=_between(_set("--steps", 20)),
        scale=Knob("--batch-size", 8), steps=Knob("--steps", 40),
        fix=Fix("--fixed", "1", "drop_references", "append loss.item() instead of the tensor")),
    Workload(
        "checkpoint_gpu_load", "checkpoint", "checkpoint", "load_checkpoint.py", "torch.load (transformers Llama)",
        "working_set",
        "torch.load of a GPU-saved state_dict with the default map_location puts a second copy of the weights "
        "on the GPU beside the model: the OOM comes inside torch.load.",
        calibration=_between(_set("--map-location", "cpu")),
        scale=Knob("--batch-size", 8), steps=Knob("--batches", 4),
        fix=Fix("--map-location", "cpu", "shrink_working_set", "map_location='cpu' reads the checkpoint into host memory"),
        prep=(("save_checkpoint.py",),)),
    Workload(
        "checkpoint_cpu_load", "checkpoint", "checkpoint", "load_checkpoint.py", "torch.load (transformers Llama)",
        "no_problem", "The same load with map_location='cpu' completes under the same cap.",
        args=("--map-location", "cpu"), expect="completes", cap_from="checkpoint_gpu_load"),
    Workload(
        "jax_preallocated", "outside", "outside", "jax_then_torch.py", "JAX + PyTorch",
        "outside_allocator",
        "JAX preallocates 75 % of the device at first use; the PyTorch training step that follows runs out of memory.",
        args=("--width", "1024", "--steps", "2"),
        calibration=Calibration("outside", target=0.36, probe=(("--jax-preallocate", "false"),), probe_batch=65536),
        scale=Knob("--batch-size", 0), steps=Knob("--steps", 2), alone=True, timeout_s=120, sized_by=("--batch-size",),
        fix=Fix("--jax-preallocate", "false", "release_other_library",
                "XLA_PYTHON_CLIENT_PREALLOCATE=false makes JAX allocate what it uses only")),
    Workload(
        "jax_no_preallocate", "outside", "outside", "jax_then_torch.py", "JAX + PyTorch",
        "no_problem", "The same program with XLA_PYTHON_CLIENT_PREALLOCATE=false completes.",
        args=("--width", "1024", "--steps", "2", "--jax-preallocate", "false"), expect="completes",
        cap_from="jax_preallocated", alone=True, timeout_s=120),
    Workload(
        "cupy_pool", "outside", "outside", "cupy_then_torch.py", "CuPy + PyTorch",
        "outside_allocator",
        "CuPy's memory pool keeps the blocks of freed arrays; the PyTorch training step that follows runs out of memory.",
        args=("--width", "1024", "--steps", "2"),
        calibration=Calibration("outside", target=0.36, probe=(("--free-cupy-pool", "1"), ("--cupy-gib", "1")),
                                probe_batch=65536),
        scale=Knob("--batch-size", 0), steps=Knob("--steps", 2), alone=True, timeout_s=120,
        sized_by=("--batch-size", "--cupy-gib"),
        fix=Fix("--free-cupy-pool", "1", "release_other_library",
                "cupy.get_default_memory_pool().free_all_blocks() before training")),
    Workload(
        "dynamic_padding_fragmentation", "fragmentation", "fragmentation", "dynamic_padding.py",
        "transformers BERT + DataCollatorWithPadding",
        "fragmentation",
        "Fine-tuning with dynamic padding under a cap between the packed and the reserved peak: the cache is split "
        "into pieces no request fits.",
        args=("--batch-size", "32", "--steps", "16"),
        calibration=Calibration("fragmentation"),
        scale=Knob("--batch-size", 32), steps=Knob("--steps", 16)),
    Workload(
        "hidden_states_growth", "fragmentation", "fragmentation", "keep_hidden_states.py", "transformers BERT",
        "retained_references",
        "Feature extraction keeps every batch's hidden states on the GPU: live memory grows with every batch, and "
        "the last small request meets a split cache.",
        args=("--batches", "40"),
        calibration=_between(_set("--batches", 20)),
        scale=Knob("--batch-size", 32), steps=Knob("--batches", 40),
        fix=Fix("--fixed", "1", "drop_references", "keep each layer's [CLS] vector on the CPU")),
    Workload(
        "torchvision_cached", "cache", "cache", "torchvision_inference.py", "torchvision",
        "cached_not_leak",
        "ResNet-50 inference on large batches at three resolutions, then everything freed: the run ends with "
        "gigabytes reserved and almost nothing allocated.",
        expect="completes"),
    Workload(
        "timm_healthy", "cache", "cache", "timm_train.py", "timm",
        "no_problem", "A ResNet-18 from timm trained five steps at a batch that fits comfortably.",
        expect="completes"),
    Workload(
        "nanogpt_too_large", "public/nanogpt", "nanogpt", "train.py", "nanoGPT (karpathy/nanoGPT, as published)",
        "working_set", "nanoGPT's train.py with --batch_size too large: the OOM comes in the first iteration.",
        args=NANOGPT_ARGS,
        calibration=_between(_set("--batch_size", 16)),
        scale=Knob("--batch_size", 32), steps=Knob("--max_iters", 6), progress=r"^iter \d+:",
        prep=(("prepare_data.py", "--dataset", "synthetic"),)),
    Workload(
        "nanogpt_fits", "public/nanogpt", "nanogpt", "train.py", "nanoGPT (karpathy/nanoGPT, as published)",
        "no_problem", "The same training at half the batch runs all its iterations under the same cap.",
        args=tuple("--batch_size=16" if arg == "--batch_size=32" else arg for arg in NANOGPT_ARGS),
        expect="completes", cap_from="nanogpt_too_large", progress=r"^iter \d+:"),
    Workload(
        "ddp_too_large", "ddp", "ddp", "ddp_train.py", "torch DistributedDataParallel (torchrun)",
        "working_set", "DDP training through torchrun (one process, one GPU) whose first step is too large.",
        args=("--batch-size", "48", "--steps", "3"),
        calibration=_between(_set("--batch-size", 24)),
        scale=Knob("--batch-size", 48), steps=Knob("--steps", 3), launcher="torchrun", timeout_s=120, optional=True),
    Workload(
        "ddp_fits", "ddp", "ddp", "ddp_train.py", "torch DistributedDataParallel (torchrun)",
        "no_problem", "The same DDP training at half the batch completes under the same cap.",
        args=("--batch-size", "24", "--steps", "3"), expect="completes", cap_from="ddp_too_large",
        launcher="torchrun", timeout_s=120, optional=True),
)

# Round 3: a fresh held-out set, written after the engine was tuned on the workloads above. Other code
# and other libraries for the same kinds of causes, each family with its counter-case.
ROUND3 = dict(held_out=True, round=3)

HELD_OUT_ROUND3: tuple[Workload, ...] = (
    Workload(
        "accelerate_long_context", "accelerate_loop", "accelerate_loop", "finetune.py", "accelerate (transformers Llama)",
        "working_set",
        "An Accelerator loop (bf16, gradient accumulation) fine-tuning a Llama-style model at a sequence length too "
        "long for the card: the OOM comes inside the first micro-batch.",
        args=("--seq-len", "2048", "--micro-batch", "2", "--accumulation", "2", "--steps", "3"),
        calibration=_between(_set("--seq-len", 1024)),
        scale=Knob("--seq-len", 2048), steps=Knob("--steps", 3), **ROUND3),
    Workload(
        "accelerate_eval_total_loss", "accelerate_loop", "accelerate_loop", "finetune.py", "accelerate (transformers Llama)",
        "retained_references",
        "The same Accelerator loop evaluates with model.eval() but without torch.no_grad() and sums "
        "`total_loss += loss`: the running sum keeps every evaluation batch's graph until the OOM.",
        args=("--seq-len", "512", "--steps", "2", "--eval-batches", "16", "--eval-batch-size", "4", "--eval-seq-len", "256"),
        calibration=_between(_set("--eval-batches", 8)),
        scale=Knob("--eval-batch-size", 4), steps=Knob("--eval-batches", 16),
        fix=Fix("--fixed", "1", "drop_references", "sum loss.item() instead of the loss tensor"), **ROUND3),
    Workload(
        "timm_vit_autocast_batch", "timm_vit", "timm_vit", "finetune_vit.py", "timm (ViT, torch.autocast)",
        "working_set",
        "A timm ViT fine-tuned under torch.autocast (bf16) with Mixup and AdamW at a batch too large: the OOM comes "
        "in the first step's forward/backward.",
        args=("--batch-size", "256", "--steps", "3"),
        calibration=_between(_set("--batch-size", 128), _set("--grad-checkpointing", 1)),
        scale=Knob("--batch-size", 256), steps=Knob("--steps", 3),
        fix=Fix("--grad-checkpointing", "1", "shrink_working_set",
                "model.set_grad_checkpointing() keeps each block's input only and recomputes the rest in backward"),
        **ROUND3),
    Workload(
        "timm_vit_grad_checkpointing", "timm_vit", "timm_vit", "finetune_vit.py", "timm (ViT, torch.autocast)",
        "no_problem", "The same ViT fine-tuning at the same batch with gradient checkpointing on completes under the same cap.",
        args=("--batch-size", "256", "--steps", "3", "--grad-checkpointing", "1"), expect="completes",
        cap_from="timm_vit_autocast_batch", **ROUND3),
    Workload(
        "timm_embed_cached", "timm_vit", "timm_vit", "embed_images.py", "timm (ConvNeXt, inference_mode)",
        "cached_not_leak",
        "Image embeddings with a timm ConvNeXt under inference_mode at three resolutions, every batch's features "
        "moved to the CPU: the run ends with gigabytes reserved and only the weights allocated.",
        args=("--batch-size", "256"), expect="completes", **ROUND3),
    Workload(
        "kv_cache_static_too_long", "kv_cache", "kv_cache", "generate.py", "torch (hand-written decoder, static KV cache)",
        "working_set",
        "A hand-written decoder preallocates its static KV cache for the model's whole context (16384 positions) "
        "when the run needs 256: the OOM comes in setup_caches(), before the first token.",
        args=("--cache", "static", "--batch-size", "32", "--max-seq-len", "16384", "--max-new-tokens", "128"),
        calibration=_between(_set("--batch-size", 16), _set("--max-seq-len", 0)),
        scale=Knob("--batch-size", 32), steps=Knob("--max-new-tokens", 128),
        fix=Fix("--max-seq-len", "0", "shrink_working_set", "size the static cache to the prompt plus the new tokens"),
        **ROUND3),
    Workload(
        "kv_cache_sized", "kv_cache", "kv_cache", "generate.py", "torch (hand-written decoder, static KV cache)",
        "no_problem", "The same generation with the static cache sized to the prompt plus the new tokens completes under the same cap.",
        args=("--cache", "static", "--batch-size", "32", "--max-seq-len", "0", "--max-new-tokens", "128"),
        expect="completes", cap_from="kv_cache_static_too_long", **ROUND3),
    Workload(
        "kv_cache_concat_growth", "kv_cache", "kv_cache", "generate.py", "torch (hand-written decoder, torch.cat KV cache)",
        "working_set",
        "The same decoder with a KV cache grown by torch.cat one token per layer per step: 128 prompts times 1024 new "
        "tokens outgrow the card part-way through decoding.",
        args=("--cache", "concat", "--batch-size", "128", "--max-new-tokens", "1024"),
        calibration=_between(_set("--max-new-tokens", 512)),
        scale=Knob("--batch-size", 128), steps=Knob("--max-new-tokens", 1024), growth_holder="own_cache",
        # Recorded as held out; its first analysis (retained_references, 0.90) led to the census-based cache
        # check in attribution/growth.py, so it is in-sample from then on.
        held_out=False, round=3),
    Workload(
        "lightning_train_outputs", "lightning_fit", "lightning_fit", "keep_train_outputs.py", "Lightning (bf16-mixed)",
        "retained_references",
        "A LightningModule appends each training_step's full logits to self.training_step_outputs for an epoch-end "
        "metric: one batch of logits more every step until the OOM in the middle of the epoch.",
        args=("--batch-size", "8", "--train-batches", "24"),
        calibration=_between(_set("--train-batches", 12)),
        scale=Knob("--batch-size", 8), steps=Knob("--train-batches", 24),
        fix=Fix("--fixed", "1", "drop_references", "append the detached predicted ids and clear the list every epoch"),
        **ROUND3),
    Workload(
        "segmentation_multiscale", "segmentation", "segmentation", "train_multiscale.py", "torchvision DeepLabV3",
        "fragmentation",
        "DeepLabV3 trained with multi-scale resizing and batches padded to their largest image, under a cap between "
        "the packed and the reserved peak: every step has its own shape and the cache splits.",
        args=("--batch-size", "4", "--steps", "16", "--base-size", "256"),
        calibration=Calibration("fragmentation"),
        scale=Knob("--batch-size", 4), steps=Knob("--steps", 16),
        fix=Fix("--crop-size", "320", "shrink_working_set", "crop every image to 320 x 320 after the resize: one shape every step"),
        **ROUND3),
    Workload(
        "segmentation_fixed_crop", "segmentation", "segmentation", "train_multiscale.py", "torchvision DeepLabV3",
        "no_problem", "The same training with every image cropped to 320 x 320 after the resize completes under the same cap.",
        args=("--batch-size", "4", "--steps", "16", "--base-size", "256", "--crop-size", "320"), expect="completes",
        cap_from="segmentation_multiscale", **ROUND3),
)

WORKLOADS = WORKLOADS + HELD_OUT_ROUND3

BY_NAME = {workload.name: workload for workload in WORKLOADS}

# Round 4: retention families where the line to change is the line that *stores* (storing_line, "file:line" of
# the statement a user must change), a completed run that grows, one that ends near the limit, and one forward-
# and one backward-pass OOM of real models. Held out: the name's sha1("round4:" + name) ends in 0-7 (the rule
# in README.md, fixed before any of these was recorded).


def _round4(name: str) -> dict:
    return dict(round=4, held_out=hashlib.sha1(f"round4:{name}".encode()).hexdigest()[-1] in "01234567")


def _headroom(target: float) -> Calibration:
    return Calibration("headroom", target=target)


ROUND4: tuple[Workload, ...] = (
    Workload(
        "hook_features_append", "retention", "features", "hook_features.py", "torchvision ResNet-50 (forward hook)",
        "retained_references",
        "A forward hook on layer3 appends every batch's feature map to a global list during no_grad feature "
        "extraction: the list grows by a batch of features per batch until the OOM.",
        args=("--batch-size", "128", "--batches", "40"),
        calibration=_between(_set("--batches", 20)),
        scale=Knob("--batch-size", 128), steps=Knob("--batches", 40),
        fix=Fix("--fixed", "1", "drop_references", "keep the pooled features on the CPU"),
        storing_line="hook_features.py:17", **_round4("hook_features_append")),
    Workload(
        "eval_outputs_kept", "retention", "evaluation", "eval_keep_outputs.py", "transformers GPT-2 (evaluation loop)",
        "retained_references",
        "An evaluation loop without torch.no_grad() appends every batch's logits to a list: each keeps its forward "
        "pass's graph, and the list outgrows the card part-way through the evaluation.",
        args=("--batch-size", "8", "--batches", "16"),
        calibration=_between(_set("--batches", 8)),
        scale=Knob("--batch-size", 8), steps=Knob("--batches", 16),
        fix=Fix("--fixed", "1", "drop_references", "append the predicted ids on the CPU"),
        storing_line="eval_keep_outputs.py:36", **_round4("eval_outputs_kept")),
    Workload(
        "eval_outputs_fixed", "retention", "evaluation", "eval_keep_outputs.py", "transformers GPT-2 (evaluation loop)",
        "no_problem",
        "The same evaluation with its fix (the predicted ids appended on the CPU) completes under the same cap: the "
        "after half of a before/after pair.",
        args=("--batch-size", "8", "--batches", "16", "--fixed", "1"), expect="completes", cap_from="eval_outputs_kept",
        **_round4("eval_outputs_fixed")),
    Workload(
        "metrics_dict_outputs", "retention", "train_metrics", "metrics_dict.py", "transformers GPT-2 (training loop)",
        "retained_references",
        "A training loop stores each step's whole model output in `metrics[step] = out`: one batch of vocabulary-sized "
        "logits more per step until the OOM.",
        args=("--batch-size", "8", "--steps", "30"),
        calibration=_between(_set("--steps", 15)),
        scale=Knob("--batch-size", 8), steps=Knob("--steps", 30),
        fix=Fix("--fixed", "1", "drop_references", "keep out.loss.item()"),
        storing_line="metrics_dict.py:39", **_round4("metrics_dict_outputs")),
    Workload(
        "module_history_attr", "retention", "encoder", "module_history.py", "torch (nn.TransformerEncoder)",
        "retained_references",
        "A model's forward does `self.history += [h]` with its hidden states on the GPU: the module's list grows every "
        "step until the OOM.",
        args=("--batch-size", "64", "--seq-len", "512", "--steps", "60"),
        calibration=_between(_set("--steps", 30)),
        scale=Knob("--batch-size", 64), steps=Knob("--steps", 60),
        fix=Fix("--fixed", "1", "drop_references", "record a detached CPU summary"),
        storing_line="module_history.py:29", **_round4("module_history_attr")),
    Workload(
        "feature_bank_cat", "retention", "contrastive", "feature_bank.py", "torchvision ResNet-18 (memory bank)",
        "retained_references",
        "A contrastive memory bank grown by `self.feats = torch.cat([self.feats, f.detach()])` is never trimmed: it "
        "grows by a batch of embeddings per step until the OOM.",
        args=("--batch-size", "256", "--steps", "60"),
        calibration=_between(_set("--steps", 30)),
        scale=Knob("--batch-size", 256), steps=Knob("--steps", 60),
        fix=Fix("--fixed", "1", "drop_references", "keep a queue of the newest entries only"),
        storing_line="feature_bank.py:22", **_round4("feature_bank_cat")),
    Workload(
        "ema_snapshots_kept", "retention", "ema", "ema_snapshots.py", "transformers GPT-2 (EMA)",
        "retained_references",
        "Training with an EMA of the weights copies the EMA's state into a list every step: one model's weights more "
        "per step on the GPU until the OOM.",
        args=("--batch-size", "8", "--steps", "30"),
        calibration=_between(_set("--steps", 15)),
        scale=Knob("--batch-size", 8), steps=Knob("--steps", 30),
        fix=Fix("--fixed", "1", "drop_references", "keep the snapshots on the CPU"),
        storing_line="ema_snapshots.py:54", **_round4("ema_snapshots_kept")),
    Workload(
        "val_losses_completes", "retention", "classifier", "val_losses_complete.py", "torchvision ResNet-34",
        "retained_references",
        "A training loop appends a validation loss tensor (with its graph) every step; memory climbs every step but "
        "the run is short enough to complete: growth before the limit.",
        args=("--batch-size", "16", "--steps", "12"), expect="completes",
        calibration=_headroom(0.75),
        scale=Knob("--batch-size", 16), steps=Knob("--steps", 12),
        fix=Fix("--fixed", "1", "drop_references", "append loss.item()"),
        storing_line="val_losses_complete.py:42", **_round4("val_losses_completes")),
    Workload(
        "embed_grad_near_limit", "retention", "embeddings", "embed_without_no_grad.py", "timm ViT-S/16 (inference)",
        "retained_references",
        "Inference without torch.no_grad() keeps every batch's embeddings with their graphs; the run completes at "
        "about 93 % of the cap: one batch more would not fit.",
        args=("--batch-size", "16", "--batches", "8"), expect="completes",
        calibration=_headroom(0.93),
        scale=Knob("--batch-size", 16), steps=Knob("--batches", 8),
        fix=Fix("--fixed", "1", "drop_references", "run the loop under torch.no_grad()"),
        storing_line="embed_without_no_grad.py:33", **_round4("embed_grad_near_limit")),
    Workload(
        "torch_load_cuda", "retention", "resume", "load_to_cuda.py", "torch.load (map_location='cuda')",
        "working_set",
        "A checkpoint read with torch.load(..., map_location='cuda') beside the model built on the GPU: the second "
        "copy of the weights stays referenced, and the first step's optimizer state no longer fits.",
        args=("--batch-size", "512", "--steps", "2"),
        calibration=_between(_set("--map-location", "cpu")),
        scale=Knob("--batch-size", 512), steps=Knob("--steps", 2),
        fix=Fix("--map-location", "cpu", "shrink_working_set", "map_location='cpu' reads the checkpoint into host memory"),
        prep=(("save_state.py",),), storing_line="load_to_cuda.py:33", timeout_s=120, **_round4("torch_load_cuda")),
    Workload(
        "lightning_seg_val_outputs", "retention", "segmentation_val", "segment.py", "Lightning (segmentation)",
        "retained_references",
        "A LightningModule's validation_step appends each batch's per-pixel logits to self.val_outputs: validation "
        "runs out of memory part-way through the epoch.",
        args=("--batch-size", "8", "--val-batches", "24"),
        calibration=_between(_set("--val-batches", 12)),
        scale=Knob("--batch-size", 8), steps=Knob("--val-batches", 24),
        fix=Fix("--fixed", "1", "drop_references", "keep the detached class map on the CPU and clear the list"),
        storing_line="segment.py:41", **_round4("lightning_seg_val_outputs")),
    Workload(
        "hf_trainer_mlm_eval", "retention", "mlm_eval", "evaluate_mlm.py", "transformers Trainer (BERT MLM)",
        "retained_references",
        "Trainer.evaluate() with compute_metrics and eval_accumulation_steps unset gathers every batch's "
        "vocabulary-sized prediction scores on the GPU until the OOM.",
        args=("--eval-samples", "256", "--eval-batch-size", "16"),
        calibration=_between(_set("--eval-samples", 128)),
        scale=Knob("--eval-batch-size", 16), steps=Knob("--eval-samples", 256),
        fix=Fix("--eval-accumulation-steps", "1", "drop_references",
                "eval_accumulation_steps=1 moves the gathered predictions to the CPU after every step"),
        storing_line="evaluate_mlm.py:52", **_round4("hf_trainer_mlm_eval")),
    Workload(
        "vit_forward_oom", "retention", "vit_train", "vit_forward.py", "timm ViT-B/16 (float32)",
        "working_set",
        "A ViT-B/16 trained in float32 at a batch too large: the saved activations outgrow the card inside the first "
        "forward pass.",
        args=("--batch-size", "64", "--steps", "3"),
        calibration=_between(_set("--batch-size", 32)),
        scale=Knob("--batch-size", 64), steps=Knob("--steps", 3), **_round4("vit_forward_oom")),
    Workload(
        "gpt2_backward_oom", "retention", "gpt2_train", "gpt2_backward.py", "transformers GPT-2 (24 layers)",
        "working_set",
        "The first step of a 24-layer GPT-2: the forward pass fits, and the backward pass runs out of memory when the "
        "parameters' gradients are created beside the saved activations.",
        args=("--batch-size", "2", "--seq-len", "512", "--steps", "2"),
        calibration=_between(_set("--forward-only", 1)),
        scale=Knob("--batch-size", 2), steps=Knob("--steps", 2), **_round4("gpt2_backward_oom")),
)

WORKLOADS = WORKLOADS + ROUND4

# Round 5: a fresh held-out round for the storing line, the holder and the cause (workloads/README.md,
# "Round 5"), written with its truth (benchmarks/storing_truth_round5.json) after round 4's changes and before
# any of it was recorded. Every workload of the round is held out.
def _round5() -> dict:
    return dict(round=5, held_out=True)


ROUND5: tuple[Workload, ...] = (
    Workload(
        "val_loss_history_dict", "retention", "loss_history", "loss_history.py", "plain torch (TransformerEncoder)",
        "retained_references",
        "A training loop logs a validation loss tensor every step in a dict of lists, without torch.no_grad(): each "
        "kept loss holds its validation pass's saved activations until the OOM.",
        args=("--batch-size", "8", "--seq-len", "256", "--steps", "24"),
        calibration=_between(_set("--steps", 12)),
        scale=Knob("--batch-size", 8), steps=Knob("--steps", 24),
        fix=Fix("--fixed", "1", "drop_references", "log the validation loss as a float"),
        storing_line="loss_history.py:57", **_round5()),
    Workload(
        "eval_running_total", "retention", "running_total", "running_total.py", "torchvision ResNet-50 (evaluation)",
        "retained_references",
        "An evaluation without torch.no_grad() sums its losses with `total = total + loss`: the running total's graph "
        "keeps every batch's activations until the OOM part-way through the evaluation.",
        args=("--batch-size", "16", "--batches", "20"),
        calibration=_between(_set("--batches", 10)),
        scale=Knob("--batch-size", 16), steps=Knob("--batches", 20),
        fix=Fix("--fixed", "1", "drop_references", "add loss.item() to the total"),
        storing_line="running_total.py:26", **_round5()),
    Workload(
        "collector_extend_rows", "retention", "collector", "prediction_collector.py", "plain torch (language model)",
        "retained_references",
        "A metric helper extends its list with the rows of every step's softmax: each row is a view of the whole "
        "vocabulary-sized tensor, so the list keeps a batch of distributions per step until the OOM.",
        args=("--batch-size", "8", "--seq-len", "256", "--steps", "32"),
        calibration=_between(_set("--steps", 16)),
        scale=Knob("--batch-size", 8), steps=Knob("--steps", 32),
        fix=Fix("--fixed", "1", "drop_references", "keep the argmax ids on the CPU"),
        storing_line="prediction_collector.py:25", **_round5()),
    Workload(
        "dataset_cache_on_gpu", "retention", "dataset_cache", "dataset_gpu_cache.py", "torch DataLoader (dataset cache)",
        "retained_references",
        "A Dataset memoises every decoded sample on the GPU in a dict: the first epoch adds a batch of "
        "full-resolution images per step until the OOM.",
        args=("--batch-size", "16", "--steps", "40"),
        calibration=_between(_set("--steps", 20)),
        scale=Knob("--batch-size", 16), steps=Knob("--steps", 40),
        fix=Fix("--fixed", "1", "drop_references", "cache the samples in host memory"),
        storing_line="dataset_gpu_cache.py:31", **_round5()),
    Workload(
        "generate_scores_kept", "retention", "generate_scores", "generate_scores.py", "transformers GPT-2 (generate)",
        "retained_references",
        "Batch generation with output_scores=True keeps every batch's per-token score tensors in a list on the GPU "
        "until the OOM.",
        args=("--batch-size", "16", "--batches", "40"),
        calibration=_between(_set("--batches", 20)),
        scale=Knob("--batch-size", 16), steps=Knob("--batches", 40),
        fix=Fix("--fixed", "1", "drop_references", "keep only the chosen tokens' scores, on the CPU"),
        storing_line="generate_scores.py:38", **_round5()),
    Workload(
        "grad_log_completes", "retention", "grad_log", "grad_log_complete.py", "plain torch (MLP)",
        "retained_references",
        "A training loop keeps every step's gradient tensors in a list; the run completes at about 70 % of its cap: "
        "a longer one would not.",
        args=("--batch-size", "64", "--steps", "12"), expect="completes",
        calibration=_headroom(0.7),
        scale=Knob("--batch-size", 64), steps=Knob("--steps", 12),
        fix=Fix("--fixed", "1", "drop_references", "log each gradient's norm as a float"),
        storing_line="grad_log_complete.py:40", **_round5()),
    Workload(
        "attention_maps_batch_oom", "retention", "attention_maps", "attention_maps_overwritten.py",
        "plain torch (vision transformer)", "working_set",
        "A ViT-style model keeps its last attention maps on each block (overwritten every forward) and is trained at "
        "too large a batch: the first forward pass runs out of memory.",
        args=("--batch-size", "32", "--steps", "3"),
        calibration=_between(_set("--batch-size", 16)),
        scale=Knob("--batch-size", 32), steps=Knob("--steps", 3), **_round5()),
)
WORKLOADS = WORKLOADS + ROUND5


def _round6() -> dict:
    return dict(round=6, held_out=True)


# Round 6: written after round 5's mechanism fixes (holders charged through graphs, backward grads followed to
# their store, kept-across-calls, first-forward-at-limit) and the measured fix, with their storing lines in
# benchmarks/storing_truth_round6.json, before any of it was recorded; every workload held out.
ROUND6: tuple[Workload, ...] = (
    Workload(
        "activation_grads_hooked", "retention", "grad_hooks", "grad_hook_store.py", "plain torch (residual MLP blocks)",
        "retained_references",
        "Tensor hooks on every block's output store each incoming gradient in a dict of lists from inside a "
        "closure: every step adds one activation-sized gradient per block until the OOM.",
        args=("--batch-size", "16", "--seq-len", "512", "--steps", "40"),
        calibration=_between(_set("--steps", 20)),
        scale=Knob("--batch-size", 16), steps=Knob("--steps", 40),
        fix=Fix("--fixed", "1", "drop_references", "store each gradient's norm as a float"),
        storing_line="grad_hook_store.py:46", **_round6()),
    Workload(
        "eval_pairs_with_graph", "retention", "eval_pairs", "eval_pairs.py", "torchvision ResNet-18 (evaluation)",
        "retained_references",
        "An evaluation in eval mode but with autograd on keeps (logits, labels) tuples to score at the end: every "
        "batch's logits keep their forward pass's saved activations until the OOM.",
        args=("--batch-size", "32", "--batches", "16"),
        calibration=_between(_set("--batches", 8)),
        scale=Knob("--batch-size", 32), steps=Knob("--batches", 16),
        fix=Fix("--fixed", "1", "drop_references", "keep detached logits"),
        storing_line="eval_pairs.py:35", **_round6()),
    Workload(
        "bank_cat_with_graph", "retention", "embedding_bank", "embedding_bank.py", "plain torch (TransformerEncoder)",
        "retained_references",
        "A retrieval bank grown by `bank = torch.cat([bank, embeddings])` in a helper, with autograd on: the bank's "
        "graph reaches every batch's encoder pass and keeps its saved activations until the OOM.",
        args=("--batch-size", "32", "--seq-len", "256", "--batches", "16"),
        calibration=_between(_set("--batches", 8)),
        scale=Knob("--batch-size", 32), steps=Knob("--batches", 16),
        fix=Fix("--fixed", "1", "drop_references", "concatenate detached embeddings"),
        storing_line="embedding_bank.py:32", **_round6()),
    Workload(
        "hf_hidden_states_kept", "retention", "hidden_states", "hidden_states_kept.py", "transformers BERT (features)",
        "retained_references",
        "Feature extraction keeps every batch's `outputs.hidden_states` (thirteen tensors) in a list, with autograd "
        "on: each batch's hidden states and their graph stay on the GPU until the OOM.",
        args=("--batch-size", "8", "--seq-len", "256", "--batches", "12"),
        calibration=_between(_set("--batches", 6)),
        scale=Knob("--batch-size", 8), steps=Knob("--batches", 12),
        fix=Fix("--fixed", "1", "drop_references", "keep the last layer's states on the CPU"),
        storing_line="hidden_states_kept.py:36", **_round6()),
    Workload(
        "running_max_batch_oom", "retention", "running_max", "running_max_batch.py", "plain torch (TransformerEncoder)",
        "working_set",
        "Counter-case: an inference pass under no_grad keeps an element-wise running maximum (replaced every batch, "
        "nothing grows) at too large a batch: the first forward pass runs out of memory.",
        args=("--batch-size", "256", "--seq-len", "1024", "--batches", "4"),
        calibration=_between(_set("--batch-size", 128)),
        scale=Knob("--batch-size", 256), steps=Knob("--batches", 4), **_round6()),
)

WORKLOADS = WORKLOADS + ROUND6

BY_NAME = {workload.name: workload for workload in WORKLOADS}
