"""Modules whose parameters are all switched off: calling one records no graph of its own."""

from __future__ import annotations

import ast

from ..parse.syntax import call_name, dotted, iter_nodes, last_name
from .file_facts import FileFacts

# Calls that switch a module's parameters back on after it was frozen (LoRA adapters, PEFT).
_UNFREEZING = frozenset({"add_adapter", "enable_adapters", "load_lora_adapter", "get_peft_model", "inject_adapter_in_model", "prepare_model_for_kbit_training"})


def frozen_names(facts: FileFacts) -> set[str]:
    """Names whose parameters are all switched off (``vae.requires_grad_(False)``, or a loop setting
    ``p.requires_grad = False`` over its parameters) and never switched back on, trained or given
    adapters anywhere in the file."""
    freezing_loops = {
        id(loop.iter) for scope in [facts.tree, *facts.scopes] for loop in facts.loops_inside(scope)
        if isinstance(loop, (ast.For, ast.AsyncFor)) and _sets_requires_grad_false(loop)
    }
    frozen: set[str] = set()
    thawed: set[str] = set()
    for call in facts.all_calls:
        func = call.func
        if not isinstance(func, ast.Attribute):
            if last_name(call_name(call)) in _UNFREEZING and call.args:
                name = dotted(call.args[0])
                if name:
                    thawed.add(name)
            continue
        receiver = dotted(func.value)
        if receiver is None:
            continue
        if func.attr == "requires_grad_":
            flag = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "requires_grad"), None)
            if isinstance(flag, ast.Constant) and flag.value is False:
                frozen.add(receiver)
            else:
                thawed.add(receiver)
        elif func.attr in _UNFREEZING:
            thawed.add(receiver)
        elif func.attr == "parameters":
            if id(call) in freezing_loops:
                frozen.add(receiver)
            else:
                thawed.add(receiver)  # handed to an optimizer, or counted: assume it may train
    return frozen - thawed


def _sets_requires_grad_false(loop: ast.For) -> bool:
    for stmt in loop.body:
        for node in iter_nodes(stmt):
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets)
                and isinstance(node.value, ast.Constant) and node.value.value is False
            ):
                return True
    return False
