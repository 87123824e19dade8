"""What to try, fitted to the cause and to the allocator settings the run already had.

Allocator knobs are experiments to measure with `vramlens run`, never promised fixes, and
``empty_cache()`` is never offered for a live-memory peak: it only returns unused cache.
"""

from __future__ import annotations

from vramlens.analysis.diagnosis.classify import CONTEXT_ALLOWANCE, effective_limit
from vramlens.analysis.diagnosis.forward_growing import forward_still_growing
from vramlens.analysis.load.interventions import Intervention, tried_knob
from vramlens.analysis.model import Accounting, Action, Diagnosis, LineStat, Recommendation
from vramlens.analysis.load.snapshot import max_split_size
from vramlens.analysis.load.sources import place_of
from vramlens.analysis.recommendations.remedies import library_remedies, measured_fixes
from vramlens.analysis.load.rerun import experiment_command
from vramlens.units import format_bytes as fmt
from vramlens.units import count_of


def _top_user_lines(lines: list[LineStat], count: int = 3) -> list[LineStat]:
    return [line for line in lines if line.path is not None and line.live_bytes > 0][:count]


def _activation_share(acc: Accounting, facts) -> float | None:
    """The share of live memory that no Python object held (activations), when it is most of it."""
    census = getattr(facts, "census", None)
    if census is None or not acc.allocated:
        return None
    share = sum(role.bytes for role in census.roles if role.role == "activations") / acc.allocated
    return share if share >= 0.5 else None


def _by_role(acc: Accounting, facts, levers_given: bool = False) -> list[Recommendation]:
    """Advice that fits what the live memory was, when the census says (issue: roles). With
    ``levers_given`` the working-set advice already names checkpointing and the batch."""
    census = getattr(facts, "census", None)
    if census is None or not acc.allocated:
        return []
    share = {role.role: role.bytes / acc.allocated for role in census.roles}
    recs = []
    if share.get("optimizer_state", 0) >= 0.2:
        recs.append(Recommendation(
            "As an experiment, use an optimizer with lighter state (8-bit Adam states, Adafactor, or SGD with "
            "momentum) or shard it (ZeRO / FSDP), and measure the peak.",
            f"The optimizer state was {fmt(census.optimizer_bytes)} ({share['optimizer_state']:.0%} of the live memory).",
            experiment=True,
        ))
    if share.get("activations", 0) >= 0.5 and not levers_given:
        recs.append(Recommendation(
            "Trade compute for memory where the activations are made: activation checkpointing "
            "(torch.utils.checkpoint, or the library's gradient_checkpointing option), a smaller batch or shorter "
            "sequences.",
            f"Activations saved for backward and temporaries were {share['activations']:.0%} of the live memory: "
            "no Python object held them.",
        ))
    if share.get("parameters", 0) + share.get("gradients", 0) >= 0.5:
        recs.append(Recommendation(
            "Parameters and gradients fill most of the memory: keep the weights in bf16, or shard them (FSDP / ZeRO).",
            f"Parameters and gradients were {share.get('parameters', 0) + share.get('gradients', 0):.0%} of the live memory.",
            experiment=True,
        ))
    return recs


def _unfinished_forward(short: int, levers: str) -> str:
    return (f"Shrink the live working set by far more than the {fmt(short)} the failing allocation lacked: no step had "
            "completed and the forward pass was still saving activations, so its remaining layers and the backward "
            f"need more than that (halving the batch is the usual first measurement): {levers}.")


def _working_set(acc: Accounting, lines: list[LineStat], facts=None) -> list[Recommendation]:
    limit = effective_limit(acc)
    top = _top_user_lines(lines)
    where = ", ".join(f"{l.label} ({fmt(l.live_bytes)})" for l in top) or "the largest allocations"
    # One piece of advice for the shortfall and the levers that close it: they were three before.
    levers = (f"reduce the batch or sequence length feeding {where}, or trade compute for memory with activation "
              "checkpointing (torch.utils.checkpoint, or the library's gradient_checkpointing option) and bf16 autocast")
    why = "These shrink the tensors that are live at the same time, which is what ran out."
    action = f"{levers[:1].upper()}{levers[1:]}."
    if acc.request is not None and limit is not None:
        over = acc.allocated + acc.request - limit
        # Inside a first forward pass the shortfall says little: every layer still to run adds to what it saved.
        unfinished = facts is not None and forward_still_growing(acc.allocated, facts) is not None
        if over > 0 and unfinished:
            action = _unfinished_forward(over, levers)
        elif over > 0:
            action = (f"Shrink the live working set by clearly more than {fmt(over)} (the shortfall for the failing "
                      f"allocation alone under the {fmt(limit)} {'cap' if acc.limit_is_cap else 'limit'}; the rest "
                      f"of the step will likely need more): {levers}.")
            why = f"Live tensors ({fmt(acc.allocated)}) plus the {fmt(acc.request)} request exceed the limit even without any cache."
        else:
            # The request needs one piece: new headroom under the limit, or one cached block.
            usable = max(limit - acc.reserved, acc.largest_free_block or 0, 0)
            action = _unfinished_forward(acc.request - usable, levers) if unfinished else (
                f"Shrink the live working set by clearly more than {fmt(acc.request - usable)} (the "
                f"{fmt(acc.request)} request found at most {fmt(usable)} in one piece under the {fmt(limit)} "
                f"limit; the rest of the step will likely need more): {levers}.")
            why = "Neither the unreserved headroom nor the largest cached block could hold the request."
    activations = _activation_share(acc, facts)
    if activations is not None:
        why += f" Activations saved for backward and temporaries were {activations:.0%} of the live memory."
    recs = [Recommendation(action, why)]
    recs += _by_role(acc, facts, levers_given=True)
    graphs = next((h for h in (getattr(getattr(facts, "census", None), "holders", None) or ())
                   if h.graph_bytes >= 0.2 * max(acc.allocated, 1)), None)
    if graphs is not None:
        where = graphs.stored_at
        recs.insert(0, Recommendation(
            f"Keep .item() or .detach() of what {graphs.root} stores"
            + (f" at {_short(where, facts)}" if where else "") + f": the {count_of(graphs.with_graph or 0, 'tensor')} it holds carry "
            f"their autograd graphs, which keep {fmt(graphs.graph_bytes)} of saved activations alive.",
            "A tensor kept with its graph keeps every tensor that graph saved for backward.",
            actions=[Action("open_line", f"Open {_short(where, facts)}", {"path": where[0], "line": where[1]})] if where else [],
        ))
    no_frame = next((l for l in lines if l.path is None and l.live_bytes > 0 and "autograd" in l.function), None)
    if no_frame and no_frame.share >= 0.2:
        recs.append(Recommendation(
            "Gradients and backward temporaries are a large share: consider gradient accumulation over smaller "
            "micro-batches, or setting optimizer.zero_grad(set_to_none=True).",
            f"{fmt(no_frame.live_bytes)} ({no_frame.share:.0%}) was allocated by the autograd engine with no Python frame.",
        ))
    return recs


def _measured(item: Intervention) -> Recommendation:
    if item.prevented_oom:
        return Recommendation(
            f"Use {item.setting}: measured on this script, it {item.verdict}.",
            f"Measured, not assumed: {item.summary()}.",
        )
    return Recommendation(
        f"Do not rely on {item.setting}: measured on this script, it {item.verdict}.",
        f"Measured: {item.summary()}.",
    )


def _fragmentation(acc: Accounting, settings: dict, expandable_on: bool, tried: list[Intervention],
                   meta: dict) -> list[Recommendation]:
    # PYTORCH_CUDA_ALLOC_CONF is read by every torch since 2.1; PYTORCH_ALLOC_CONF only by recent releases.
    recs = [_measured(item) for item in tried]
    if not expandable_on and not tried_knob(tried, "expandable_segments"):
        command = experiment_command(meta, 'expandable_segments:True')
        recs.append(Recommendation(
            "As an experiment, rerun with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True and measure it: "
            f"`{command}` records both runs.",
            "Expandable segments let the allocator grow one segment instead of leaving unusable holes; "
            "it often helps with fragmentation but is not guaranteed to.",
            experiment=True, command=command,
            actions=[Action("compare", "Try expandable_segments",
                            {"preset": "expandable_segments", "setting": "expandable_segments:True"})],
        ))
    if max_split_size(settings) is None and not tried_knob(tried, "max_split_size"):
        command = experiment_command(meta, 'max_split_size_mb:256')
        recs.append(Recommendation(
            "As another experiment, try PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256 (or a size near your large "
            f"requests) and compare: `{command}`.",
            "It stops big cached blocks from being split for small requests, which can keep large holes usable.",
            experiment=True, command=command,
            actions=[Action("compare", "Try max_split_size_mb:256",
                            {"preset": "max_split_size", "setting": "max_split_size_mb:256"})],
        ))
    recs.append(Recommendation(
        "Allocate large, long-lived buffers once and early (or reuse them), and avoid interleaving "
        "short-lived and long-lived tensors of very different sizes.",
        f"{fmt(acc.cached)} was free inside PyTorch's reserved memory but split into pieces smaller than the request.",
    ))
    return recs


def _retained(lines: list[LineStat], facts) -> list[Recommendation]:
    growing = [l for l in lines if l.growing and l.live_bytes > 0][:3]
    where = ", ".join(f"{l.label} (+{fmt(l.growth_bytes)})" for l in growing) or "the lines that carry the growth"
    find = Recommendation(
        f"Find what keeps the tensors from {where} alive across steps: a list, dict or attribute that stores outputs "
        "or losses, or a library option that gathers outputs on the GPU (e.g. evaluation predictions: move them to "
        "the CPU every few steps).",
        "The floor between steps rose step after step, and tensors allocated in earlier steps were still live.",
        actions=[Action("open_line", f"Open {line.label}", {"path": line.path, "line": line.line}) for line in growing[:2]],
    )
    detach = Recommendation(
        "Store .item() for scalars you log and .detach() (or .detach().cpu()) for tensors you keep, so the "
        "autograd graph of each iteration can be freed.",
        "A kept tensor that requires grad holds its whole graph, including every saved activation.",
    )
    storing = list(getattr(facts, "storing", None) or [])
    holder = _holder_of(facts)
    if storing:
        kept_by = next((h for h in _holders(facts) if h.stored_at == (storing[0].path, storing[0].line)), None)
        fix, with_graph = _storing_fix(storing[0], kept_by, facts), kept_by.with_graph if kept_by else None
    elif holder is not None:
        fix, with_graph = _holder_fix(holder, facts), holder.with_graph
    else:
        fix = with_graph = None
    if fix is not None:
        if with_graph == 0:
            return [fix]  # the census saw the kept tensors: none carries a graph, so grad mode is not the matter
        if facts.mode == "inference" and facts.grad_enabled is not False:
            return [fix, _no_grad(growing, certain=bool(facts.grad_enabled)), detach]
        return [fix, detach]
    if facts is None or facts.mode != "inference" or facts.grad_enabled is False:
        return [find, detach]  # training, not enough evidence, or grad mode was already off
    return [find, _no_grad(growing, certain=bool(facts.grad_enabled)), detach]


def _short(place, facts=None) -> str:
    """``train.py:42``; a notebook cell's line by its cell (``train.ipynb cell 4 line 7``) when the facts know it."""
    return place_of(str(place[0]), place[1], getattr(facts, "cells", None))


def _storing_fix(storing, holder, facts=None) -> Recommendation:
    """Advice at the line that keeps the memory; the allocation line is the second link."""
    code = f" (`{storing.source}`)" if storing.source else ""
    if storing.kind == "augmented":
        action = (f"Add .item() (or .detach()) to {storing.target} at {storing.label}{code}, not the tensor itself: a "
                  "running sum of tensors keeps every step's autograd graph.")
    elif storing.kind == "concat":
        action = (f"Stop growing {storing.target} by concatenation every step at {storing.label}{code}: allocate it once "
                  "at its final size, keep it on the CPU, or add .detach() of what you need.")
    else:
        name = storing.target if storing.holder.startswith("local ") else storing.holder  # `features`, not its frame
        action = (f"Stop {name} from keeping every step's tensors at {storing.label}{code}: store .item() / "
                  ".detach().cpu() of what you need there, or clear it once it has been used.")
    grown = f", {fmt(storing.growth_bytes)} of it from earlier steps" if storing.growth_bytes else ""
    allocated = f"; what it keeps was allocated at {_short(storing.allocated_at, facts)}" if storing.allocated_at else ""
    graphs = ""
    if holder is not None and holder.with_graph:
        graphs = ("; its one tensor carries an autograd graph" if holder.tensors == 1 else
                  f"; {holder.with_graph} of its tensors {'carries' if holder.with_graph == 1 else 'carry'} an autograd graph")
    actions = [Action("open_line", f"Open {storing.label}", {"path": storing.path, "line": storing.line})]
    if storing.allocated_at and storing.allocated_at[0] and storing.allocated_at != (storing.path, storing.line):
        actions.append(Action("open_line", f"Open {_short(storing.allocated_at, facts)} (allocated here)",
                              {"path": storing.allocated_at[0], "line": storing.allocated_at[1]}))
    return Recommendation(action, f"That line keeps {fmt(storing.bytes)} alive{grown}{allocated}{graphs}.", actions=actions)


def _no_grad(growing: list[LineStat], certain: bool) -> Recommendation:
    lines_named = " and ".join(l.label for l in growing[:2]) or "the code that keeps outputs"
    if certain:
        return Recommendation(
            f"Run the code around {lines_named} under torch.inference_mode() (or torch.no_grad()).",
            "Grad mode was on, the kept tensors carry autograd graphs, and whole iterations ran without a backward "
            "pass or an optimizer step: the graphs (and their saved activations) are kept for nothing.",
        )
    return Recommendation(
        f"If grad mode is on there and nothing needs gradients, run the code around {lines_named} under "
        "torch.inference_mode() (or torch.no_grad()).",
        "Whole iterations ran without a backward pass or an optimizer step; if the kept outputs were made with grad "
        "mode on, each carries its autograd graph (the capture does not say which: a census would).",
    )


def _holders(facts) -> list:
    census = getattr(facts, "census", None)
    return list(census.holders) if census is not None else []


def _holder_of(facts):
    return next((h for h in _holders(facts) if h.kind != "cache" and not h.working_set and h.bytes >= 1 << 20), None)


def _holder_fix(holder, facts=None) -> Recommendation:
    """No statement storing into the holder was found in the user's code: the allocation line, said as such."""
    where = holder.appended_at
    place = f"; what it keeps was allocated at {_short(where, facts)}" if where and where[0] else ""
    return Recommendation(
        f"Stop {holder.root} from keeping every step's tensors: keep what you need as .item() / .detach().cpu(), or "
        "clear it once it has been used.",
        f"It held {count_of(holder.tensors, 'tensor')}, {fmt(holder.bytes)}, at the moment (found by walking the live objects)"
        f"{place}; no statement of your code storing into it was found with confidence.",
        actions=[Action("open_line", f"Open {_short(where, facts)} (allocated here)", {"path": where[0], "line": where[1]})]
        if where and where[0] else [],
    )


def _outside(acc: Accounting) -> list[Recommendation]:
    recs = []
    if acc.other_processes:
        listed = ", ".join(f"PID {pid} {fmt(used)}" for pid, used in acc.other_process_usage[:5])
        recs.append(Recommendation(
            f"Other processes held {fmt(acc.other_processes)} on this GPU{f' ({listed})' if listed else ''}: stop them, "
            "or run on a GPU they do not use (CUDA_VISIBLE_DEVICES).",
            "That memory is invisible to PyTorch's allocator yet counts against the device.",
        ))
    if acc.context_and_libraries and acc.context_and_libraries > CONTEXT_ALLOWANCE:  # more than a CUDA context
        recs.append(Recommendation(
            f"This process held {fmt(acc.context_and_libraries)} outside PyTorch's allocator (CUDA context and other "
            "libraries: CuPy, TensorFlow/JAX preallocation, NCCL, cuDNN/cuBLAS workspaces): release or cap those "
            "libraries' pools before the PyTorch work.",
            "Bytes held by another allocator in the same process are not reusable by PyTorch.",
        ))
    if not recs:
        recs.append(Recommendation(
            f"Find what holds the {fmt(acc.non_pytorch)} outside PyTorch (nvidia-smi lists processes) and free it.",
            "Without that memory the request would have fit.",
        ))
    return recs


def _cached(acc: Accounting) -> list[Recommendation]:
    return [
        Recommendation(
            "Nothing to fix: the gap between reserved and allocated memory is PyTorch's cache, reused by later allocations.",
            "nvidia-smi shows reserved memory as used, which looks like a leak but is not one.",
        ),
        Recommendation(
            "Only if another process must use that memory, call torch.cuda.empty_cache() after the phase that needed it.",
            "It returns unused cache to the driver; it frees no live tensor and costs new cudaMalloc calls later.",
        ),
    ]


def recommend(
    diagnosis: Diagnosis, acc: Accounting, lines: list[LineStat], settings: dict, expandable_on: bool,
    tried: list[Intervention] | None = None, meta: dict | None = None, facts=None,
) -> list[Recommendation]:
    """``meta`` (capture.json) gives the command an experiment reruns; ``facts`` (RunFacts) the step
    model, the growth and whether the run trained (advice about grad mode needs evidence of inference)."""
    recs = _for_cause(diagnosis, acc, lines, settings, expandable_on, tried or [], meta or {}, facts)
    # The library's own remedy, then (before both) a fix a confirming run measured on this script.
    recs = measured_fixes(meta or {}, getattr(facts, "storing", None)) + library_remedies(diagnosis.cause, lines, facts, getattr(facts, "sources", None)) + recs
    plan = diagnosis.confirm
    if plan is None:
        return recs
    close = bool(diagnosis.alternative or diagnosis.confidence < 0.75)
    # A confident verdict is checked, not questioned: the either-or is for a close runner-up.
    confirm = Recommendation(
        f"Measure before choosing the fix ({plan.question}): `{plan.command}`." if close
        else f"Check the diagnosis by measurement: `{plan.command}`.",
        plan.expectation, experiment=True, command=plan.command,
        actions=[Action("confirm", "Confirm the diagnosis", {})],
    )
    # When the runner-up is close, deciding comes first; otherwise it is a check after the advice.
    return [confirm] + recs if close else recs + [confirm]


def _for_cause(diagnosis: Diagnosis, acc: Accounting, lines: list[LineStat], settings: dict, expandable_on: bool,
               tried: list[Intervention], meta: dict, facts) -> list[Recommendation]:
    cause = diagnosis.cause
    if cause == "working_set":
        # A live working set is not changed by allocator knobs; a failed experiment confirms it.
        growth = getattr(facts, "growth", None)
        cache = [_kv_cache(growth, meta)] if growth is not None and growth.intended_cache else []
        return cache + _working_set(acc, lines, facts) + [_measured(item) for item in tried]
    if cause == "fragmentation":
        return _fragmentation(acc, settings, expandable_on, tried, meta)
    if cause == "retained_references":
        return _retained(lines, facts)
    if cause == "outside_allocator":
        return _outside(acc)
    if cause == "cached_not_leak":
        return _cached(acc)
    return []


def _kv_cache(growth, meta: dict) -> Recommendation:
    return Recommendation(
        f"Size the cache for the whole generation: it grows by {fmt(growth.rate)} per decoding step, so fewer "
        "sequences per batch or fewer new tokens shrink it in proportion; a quantized or offloaded cache "
        "(transformers: cache_implementation=\"quantized\" or \"offloaded\") or a static cache allocated once are "
        "the other levers.",
        f"The cache held {fmt(growth.cache)} of what accumulated when the memory ran out, and it was still growing.",
    )
