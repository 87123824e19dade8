"""Facts about the run that only its command line shows: precision, batch size, input length.

Read from the script's argv flags (``--batch-size 64``, ``--bs=64``, ``--seq-len 2048``,
``--precision bf16``, ``--amp``); anything not there is reported as unknown, never guessed.
"""

from __future__ import annotations

_FLAGS = {
    "batch_size": ("--batch-size", "--batch_size", "--bs", "--per-device-batch-size", "--micro-batch-size", "--batch"),
    "input_length": ("--seq-len", "--seq_len", "--seq-length", "--seq_length", "--max-length", "--max_length",
                     "--max-seq-len", "--max_seq_len", "--context-length", "--block-size", "--block_size", "--tokens",
                     "--input-length"),
    "precision": ("--precision", "--dtype", "--amp-dtype", "--mixed-precision", "--mixed_precision"),
}
_SWITCHES = {"--amp": "amp (autocast)", "--bf16": "bf16", "--fp16": "fp16", "--half": "fp16", "--fp32": "fp32",
             "--tf32": "tf32"}


def run_settings(argv: list[str] | None) -> dict[str, str | None]:
    """{"batch_size", "input_length", "precision"} as written on the command line, or None."""
    found: dict[str, str | None] = {name: None for name in _FLAGS}
    args = list(argv or [])[1:]
    for position, arg in enumerate(args):
        flag, has_value, inline = arg.partition("=")
        for name, names in _FLAGS.items():
            if flag in names:
                value = inline if has_value else (args[position + 1] if position + 1 < len(args) else None)
                if value is not None and not value.startswith("--"):
                    found[name] = value
        if flag in _SWITCHES and not has_value and found["precision"] is None:
            found["precision"] = _SWITCHES[flag]
    return found
