"""What the linter knows about libraries: which callables build modules, which run without autograd.

These tables are the only place where names of other projects' APIs decide anything; each entry is a
documented behaviour of that library (docs/lint.md lists them). Everything else is judged from the file.
"""

from __future__ import annotations

from dataclasses import dataclass

# Base classes whose subclasses are nn.Modules (the last name of the base, as written in ``class X(Base)``).
MODULE_BASES = frozenset({
    "Module", "Sequential", "ModuleList", "ModuleDict",  # torch.nn
    "PreTrainedModel", "PretrainedModel",  # transformers
    "LightningModule", "HyperparametersMixin",  # lightning
    "ModelMixin",  # diffusers
    "BaseModel", "BaseDetector", "BaseModule", "BaseSegmentor",  # mmengine / mmdet / mmseg (nn.Module subclasses)
})

# Calls that return a module (besides constructors of nn.Module subclasses): ``last name`` -> owners allowed
# (None: any owner). ``timm.create_model``, ``torchvision.models.resnet50`` and the like are handled by prefix.
MODULE_FACTORIES = frozenset({
    "create_model",  # timm
    "DistributedDataParallel", "DataParallel", "FullyShardedDataParallel", "FSDP", "DDP",
    "AveragedModel", "ModelEma", "ModelEmaV2", "ModelEmaV3",  # torch.optim.swa_utils, timm
    "get_peft_model", "PeftModel",  # peft
    "build_model", "build_detector", "build_backbone", "build_segmentor",  # detectron2 / mmdet / mmseg builders
    "compile", "script", "trace",  # torch.compile / torch.jit.script / torch.jit.trace of a module
    "deepcopy",  # copy.deepcopy of a module
    "unwrap_model",  # accelerate / transformers: the module inside a wrapper
    "convert_sync_batchnorm",
})
# Of those, the ones whose names other libraries use for other things: a module only when they are torch's.
TORCH_ONLY_FACTORIES = frozenset({"compile", "script", "trace"})
# Factories that only make a module when their first argument is one.
MODULE_PASS_THROUGH = frozenset({
    "compile", "script", "trace", "deepcopy", "unwrap_model", "convert_sync_batchnorm", "DistributedDataParallel",
    "DataParallel", "FullyShardedDataParallel", "FSDP", "DDP", "AveragedModel", "get_peft_model", "PeftModel",
    "ModelEma", "ModelEmaV2", "ModelEmaV3",
})
# Dotted prefixes whose lower-case callables build models: ``torchvision.models.resnet50()``.
MODULE_FACTORY_PREFIXES = ("models.", "torchvision.models.", "timm.models.", "torch.hub.load", "hub.load", "torch.jit.load")
# ``X.from_pretrained`` builds a module when X names a model class (not a tokenizer, config or processor).
PRETRAINED_MODEL_OWNER_WORDS = ("Model", "For", "Net", "Transformer", "Encoder", "Decoder", "UNet", "VAE", "Adapter")
# transformers' and diffusers' JAX and TensorFlow classes (``FlaxUNet2DConditionModel``, ``TFBertModel``) are not torch modules.
PRETRAINED_OTHER_FRAMEWORK_PREFIXES = ("Flax", "TF")
PRETRAINED_NOT_MODEL_OWNER_WORDS = ("Tokenizer", "Config", "Processor", "FeatureExtractor", "Scheduler", "Pipeline", "ImageProcessor")

# Objects whose call runs its own forward under torch.no_grad / inference_mode (documented behaviour):
# transformers ``pipeline(...)`` objects, diffusers pipelines (``__call__`` is decorated with no_grad),
# detectron2's DefaultPredictor, ultralytics' YOLO (predict under inference mode).
NO_GRAD_CALLABLE_CONSTRUCTORS = frozenset({"pipeline", "DefaultPredictor", "YOLO", "RTDETR", "SAM"})
NO_GRAD_CALLABLE_SUFFIXES = ("Pipeline",)  # StableDiffusionPipeline.from_pretrained(...), DiffusionPipeline(...)
# Methods only diffusers pipelines have: a callable with them is a pipeline (whose call runs without grad),
# even when it also has ``.to(device)`` like a module.
PIPELINE_METHODS = frozenset({
    "set_progress_bar_config", "enable_model_cpu_offload", "enable_sequential_cpu_offload", "enable_attention_slicing",
    "enable_vae_slicing", "enable_vae_tiling", "load_lora_weights", "unload_lora_weights", "fuse_lora", "unfuse_lora",
    "set_adapters", "enable_freeu",
})
# Methods of a model that switch recording off themselves: transformers ``generate`` is decorated with
# no_grad, sentence-transformers ``encode`` runs under inference_mode.
NO_GRAD_METHODS = frozenset({"generate"})

# Lightning hooks the trainer runs with recording off (validation, test and predict loops use inference_mode).
LIGHTNING_NO_GRAD_HOOKS = frozenset({
    "validation_step", "test_step", "predict_step", "on_validation_batch_end", "on_test_batch_end",
    "on_predict_batch_end", "on_validation_epoch_end", "on_test_epoch_end", "validation_epoch_end", "test_epoch_end",
})
# Framework base classes whose driver runs these methods of a subclass with recording off (documented behaviour):
# ultralytics' BasePredictor.stream_inference and BaseValidator.__call__ are decorated with smart_inference_mode
# and call these hooks; fairseq's Trainer.valid_step calls a task's valid_step inside torch.no_grad(), and
# FairseqTask.inference_step generates under it; torchtnt's evaluate() and predict() loops (also those fit() runs)
# are decorated with torch.no_grad() / run under inference_mode and call eval_step / predict_step; Lightning's
# hooks are above.
_FAIRSEQ_TASK_HOOKS = frozenset({"valid_step", "inference_step"})
_TORCHTNT_HOOKS = {
    "EvalUnit": frozenset({"eval_step"}),
    "PredictUnit": frozenset({"predict_step"}),
    "AutoUnit": frozenset({"eval_step", "predict_step"}),
    "AutoPredictUnit": frozenset({"predict_step"}),
}
_TORCHTNT_MODULES = {"EvalUnit": "unit", "PredictUnit": "unit", "AutoUnit": "auto_unit", "AutoPredictUnit": "auto_unit"}
FRAMEWORK_NO_GRAD_HOOKS: dict[str, frozenset[str]] = {
    **{f"torchtnt.framework.{name}": hooks for name, hooks in _TORCHTNT_HOOKS.items()},
    **{f"torchtnt.framework.{_TORCHTNT_MODULES[name]}.{name}": hooks for name, hooks in _TORCHTNT_HOOKS.items()},
    "fairseq.tasks.FairseqTask": _FAIRSEQ_TASK_HOOKS,
    "fairseq.tasks.LegacyFairseqTask": _FAIRSEQ_TASK_HOOKS,
    "fairseq.tasks.fairseq_task.FairseqTask": _FAIRSEQ_TASK_HOOKS,
    "fairseq.tasks.fairseq_task.LegacyFairseqTask": _FAIRSEQ_TASK_HOOKS,
    "ultralytics.engine.predictor.BasePredictor": frozenset({"preprocess", "inference", "postprocess", "write_results"}),
    "ultralytics.engine.validator.BaseValidator": frozenset({
        "preprocess", "postprocess", "init_metrics", "update_metrics", "get_stats", "finalize_metrics", "gather_stats",
        "print_results", "plot_predictions", "plot_val_samples",
    }),
}
# nn.Module hook registration: the hook's parameters after the module receive the activations.
FORWARD_HOOK_REGISTRATIONS = frozenset({"register_forward_hook", "register_forward_pre_hook"})
# Methods whose returned value the framework backpropagates (Lightning's training_step, transformers'
# Trainer.compute_loss).
BACKPROPAGATED_RETURNS = frozenset({"training_step", "compute_loss", "training_step_end"})
# Packages whose metric objects take what ``update()`` is given without recording a graph (documented behaviour):
# torchmetrics runs ``update`` with grad disabled unless asked, ignite's metrics update under no_grad.
NO_GRAD_UPDATE_PACKAGES = ("torchmetrics", "ignite.metrics", "ignite.contrib.metrics")


# Per-batch hooks of frameworks, whose outputs kept on ``self`` pile up across batches (docs/lint.md, "Framework
# knowledge"). Each entry: the framework, the base classes (last name as written), the hooks, whether the framework
# runs them with autograd on, and the framework's own remedy, quoted in the finding.
@dataclass(frozen=True)
class PerBatchHooks:
    framework: str
    bases: frozenset[str]
    hooks: frozenset[str]
    grad: bool
    remedy: str


PER_BATCH_HOOKS: tuple[PerBatchHooks, ...] = (
    PerBatchHooks("Lightning", frozenset({"LightningModule"}),
                  frozenset({"validation_step", "test_step", "predict_step"}), False,
                  "keep `.detach().cpu()` copies or a reduced figure (or update a torchmetrics metric), and clear the "
                  "list in on_validation_epoch_end / on_test_epoch_end"),
    PerBatchHooks("Lightning", frozenset({"LightningModule"}), frozenset({"training_step"}), True,
                  "keep `.detach()` copies (Lightning backpropagates only the returned loss), and clear the list in "
                  "on_train_epoch_end"),
    PerBatchHooks("transformers", frozenset({"Trainer", "Seq2SeqTrainer"}), frozenset({"prediction_step"}), False,
                  "return the outputs instead (the Trainer gathers and moves them by eval_accumulation_steps)"),
    PerBatchHooks("transformers", frozenset({"Trainer", "Seq2SeqTrainer"}), frozenset({"compute_loss", "training_step"}), True,
                  "keep `.detach()` copies or `.item()` figures"),
)
