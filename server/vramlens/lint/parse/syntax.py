"""Small AST helpers shared by the rule families: names, torch aliases, loop shapes."""

from __future__ import annotations

import ast
import re
from functools import lru_cache

SMALL_LOOP_BOUND = 16

_WORD_SPLIT = re.compile(r"_+|(?<=[a-z0-9])(?=[A-Z])")

INFERENCE_WORDS = {
    "predict", "prediction", "predictions", "infer", "inference", "generate", "generation", "evaluate",
    "evaluation", "eval", "validate", "validation", "val", "valid", "test", "testing", "encode", "sample",
    "sampling", "decode", "translate", "beam", "greedy",
}


_DECODING_WORDS = {"generate", "generation", "sample", "sampling", "beam", "greedy", "decode", "search", "prefill"}

# Methods that run once per object: work done there (a dry forward to find shapes) is one-time initialisation.
CONSTRUCTORS = frozenset({"__init__", "__new__", "__post_init__"})


def is_private_decoding_helper(name: str) -> bool:
    """``_sample``, ``_beam_search``: decoding-loop helpers run in the grad mode their public ``generate`` chose.

    (Private validation helpers such as ``_validate`` are still judged on their own: real bugs live there.)
    """
    return name.startswith("_") and not name.startswith("__") and bool(set(name_words(name)) & _DECODING_WORDS)


# Words of iterables that are batches of data or training steps rather than positions in a sequence.
_EVAL_WORDS = frozenset({"val", "valid", "validation", "test", "testing", "eval", "evaluation", "dev", "holdout"})
_DATA_WORDS = _EVAL_WORDS | frozenset({
    "data", "dataset", "datasets", "batch", "batches", "minibatches", "epoch", "epochs", "iter", "iters",
    "iteration", "iterations", "iterator", "train", "training", "sample", "samples", "episode", "episodes",
    "examples", "dl", "queue",
})


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for Name/Attribute chains, else None."""
    kind = type(node)
    if kind is ast.Name:
        return node.id
    if kind is not ast.Attribute:
        return None
    known = node.__dict__.get("_dotted", _UNKNOWN)  # kept on the node: the same chains are asked about again and again
    if known is not _UNKNOWN:
        return known
    parts = []
    chain = node
    while type(chain) is ast.Attribute:
        parts.append(chain.attr)
        chain = chain.value
    name = ".".join(reversed(parts + [chain.id])) if type(chain) is ast.Name else None
    node._dotted = name
    return name


_UNKNOWN = object()


# Fields that never hold a node worth visiting (operators, contexts, plain strings, flags, import aliases).
_SKIPPED_FIELDS = frozenset({
    "ctx", "op", "ops", "id", "attr", "arg", "name", "names", "module", "level", "kind", "conversion", "simple",
    "is_async", "type_comment", "type_ignores",
})
_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.alias)


def _child_fields() -> dict[type, tuple[str, ...]]:
    """Node class -> the fields that may hold child nodes, in ``_fields`` order."""
    table: dict[type, tuple[str, ...]] = {}
    stack = [ast.AST]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if not issubclass(cls, _LEAVES):
            table[cls] = tuple(f for f in getattr(cls, "_fields", ()) if f not in _SKIPPED_FIELDS)
    return table


CHILD_FIELDS = _child_fields()


def flat_elements(node: ast.AST) -> list[ast.AST]:
    """The leaves of a tuple or list, nested and starred ones included: ``a, (b, *c)`` gives a, b, c."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return [e for elt in node.elts for e in flat_elements(elt)]
    if isinstance(node, ast.Starred):
        return flat_elements(node.value)
    return [node]


def iter_nodes(root: ast.AST):
    """Every node under ``root`` (itself included), depth first, leaving out contexts, operators and import
    aliases. Cheaper than ``ast.walk``; use it where the order of the nodes does not matter."""
    fields_of = CHILD_FIELDS
    stack = [root]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        yield node
        for name in fields_of.get(type(node), ()):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if type(item) in fields_of:
                        push(item)
            elif type(value) in fields_of:
                push(value)


_OWN_SCOPE_ENDS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def own_returns(func: ast.AST) -> list[ast.Return]:
    """The return statements of a function with a value: its own, not those of the functions it defines
    (a factory's nested ``def run(): return trace`` does not make the factory return ``trace``)."""
    found = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            if node.value is not None:
                found.append(node)
        elif not isinstance(node, _OWN_SCOPE_ENDS) and isinstance(node, (ast.stmt, ast.excepthandler, ast.match_case)):
            stack.extend(ast.iter_child_nodes(node))
    return found


# Types whose instances hold no tensor: an ``isinstance`` test for one of them says the value has no graph.
_SCALAR_TYPES = frozenset({
    "int", "float", "bool", "str", "bytes", "complex", "np.ndarray", "numpy.ndarray", "np.generic", "np.number",
    "np.integer", "np.floating", "numbers.Number", "Number", "numbers.Real", "Real", "numbers.Integral", "Integral",
})


def scalar_isinstance(test: ast.AST) -> tuple[str, ...]:
    """The names ``test`` proves to hold no tensor where it is true: ``isinstance(x, np.ndarray)``,
    ``isinstance(x, (int, float))``, and the same joined by ``and``."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return tuple(name for value in test.values for name in scalar_isinstance(value))
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" and len(test.args) == 2):
        return ()
    subject, types = test.args
    name = dotted(subject)
    kinds = types.elts if isinstance(types, ast.Tuple) else [types]
    if not name or not kinds or not all(dotted(kind) in _SCALAR_TYPES for kind in kinds):
        return ()
    return (name,)


def statically_false(test: ast.AST) -> bool:
    """A condition that is false whatever runs: ``False``, ``0``, ``None``, or an ``and`` with one of them
    (``if 'slow test' and False:``, a block switched off by hand)."""
    if isinstance(test, ast.Constant):
        return not test.value
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(statically_false(value) for value in test.values)
    return False


def base_dotted(node: ast.AST) -> str | None:
    """The container a store or call goes into: ``self.buf[k]`` -> ``self.buf``."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return dotted(node)


def call_name(call: ast.Call) -> str:
    func = call.func
    if type(func) is ast.Name:
        return func.id
    return dotted(func) or ""


def last_name(name: str) -> str:
    return name.rsplit(".", 1)[-1]


@lru_cache(maxsize=8192)
def name_words(name: str) -> tuple[str, ...]:
    """``loss_fnG`` -> ("loss", "fn", "g"); trailing digits dropped (``conv2`` -> conv)."""
    return tuple(w.lower().rstrip("0123456789") for w in _WORD_SPLIT.split(name) if w)


def names_in(node: ast.AST) -> set[str]:
    """Every plain and dotted name read inside ``node``."""
    found: set[str] = set()
    for child in iter_nodes(node):
        if type(child) is ast.Name:
            found.add(child.id)
        elif type(child) is ast.Attribute:
            name = dotted(child)
            if name:
                found.add(name)
    return found


def is_small_constant_loop(loop: ast.AST) -> bool:
    """``for _ in range(3)`` or a loop over a short literal: it cannot grow without bound."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    it = loop.iter
    if isinstance(it, (ast.Tuple, ast.List, ast.Set)):
        return len(it.elts) <= SMALL_LOOP_BOUND
    if isinstance(it, ast.Call) and call_name(it) == "range" and it.args:
        bound = it.args[1] if len(it.args) > 1 else it.args[0]
        return isinstance(bound, ast.Constant) and isinstance(bound.value, int) and bound.value <= SMALL_LOOP_BOUND
    return False


def is_large_constant_range(loop: ast.AST) -> bool:
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    it = loop.iter
    if isinstance(it, ast.Call) and call_name(it) == "range" and it.args:
        bound = it.args[1] if len(it.args) > 1 else it.args[0]
        return isinstance(bound, ast.Constant) and isinstance(bound.value, int) and bound.value > SMALL_LOOP_BOUND
    return False


def _iterable_words(loop: ast.AST) -> set[str]:
    """The words of the names an iterable is built from (``enumerate(val_loader)`` -> enumerate, val, loader)."""
    return {word for name in names_in(loop.iter) for part in name.split(".") for word in name_words(part)}


def _is_loader(words: set[str]) -> bool:
    return any(word.endswith("loader") for word in words)


_STRUCTURE_WORDS = re.compile(r"layer|block|module|children|stage|head|level|scale|param", re.IGNORECASE)


def iterates_structure(loop: ast.AST) -> bool:
    """``for layer in self.layers``: a walk over the network itself, whose graph is wanted."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    names = names_in(loop.iter)
    return any(_STRUCTURE_WORDS.search(n) for n in names) or any(n.startswith("self.") for n in names)


def iterates_data(loop: ast.AST) -> bool:
    if isinstance(loop, ast.While):
        return True
    if iterates_structure(loop):
        return False
    words = _iterable_words(loop)
    return bool(words & _DATA_WORDS) or _is_loader(words) or is_large_constant_range(loop) or _shows_progress(loop.iter)


# Progress bars: what a loop walks through one of them is long enough to watch.
_PROGRESS_BARS = frozenset({"tqdm", "trange", "track", "progress_bar", "progressbar"})


def _shows_progress(iterable: ast.AST) -> bool:
    """``for batch in tqdm(images)``, ``enumerate(tqdm(...))``."""
    while isinstance(iterable, ast.Call):
        name = dotted(iterable.func) or ""
        if name.rsplit(".", 1)[-1] in _PROGRESS_BARS:
            return True
        if name != "enumerate" or not iterable.args:
            return False
        iterable = iterable.args[0]
    return False


def iterates_eval_data(loop: ast.AST) -> bool:
    return isinstance(loop, (ast.For, ast.AsyncFor)) and bool(_iterable_words(loop) & _EVAL_WORDS)


def names_eval_data(expr: ast.AST) -> bool:
    """``val_loader``, ``self.test_set``, ``dataloaders["valid"]``: an expression named for validation or test data."""
    words = {word for name in names_in(expr) for part in name.split(".") for word in name_words(part)}
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, str):
        words |= set(name_words(expr.slice.value))
    return bool(words & _EVAL_WORDS)


def assigned_names(stores: list[ast.stmt], calls: list[ast.Call]) -> set[str]:
    """Names (re)bound, cleared or detached in place by these statements and calls."""
    found: set[str] = set()
    for node in [*stores, *calls]:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in iter_nodes(target):
                    if isinstance(sub, (ast.Name, ast.Attribute)) and isinstance(sub.ctx, ast.Store):
                        name = dotted(sub)
                        if name:
                            found.add(name)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"clear", "detach_", "zero_"}:
                name = dotted(node.func.value)
                if name:
                    found.add(name)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                name = base_dotted(target)
                if name:
                    found.add(name)
    return found


def method_name(call: ast.Call) -> str:
    """The last name of the callee, even on a call chain: ``scaler.scale(loss).backward`` -> ``backward``."""
    func = call.func
    kind = type(func)
    if kind is ast.Attribute:
        return func.attr
    return func.id if kind is ast.Name else ""


def receiver_name(call: ast.Call) -> str:
    func = call.func
    return (dotted(func.value) or "") if isinstance(func, ast.Attribute) else ""


def is_backward_call(call: ast.Call) -> bool:
    short = method_name(call)
    if short in {"backward", "manual_backward"}:
        return True
    return short == "grad" and "autograd" in call_name(call)


_OPTIMIZER_RECEIVER = re.compile(r"optim|^opt|_opt|opt_|scaler|solver", re.IGNORECASE)


def sets_keyword(call: ast.Call, names) -> bool:
    """One of the keywords ``names`` is given anything but a literal false (``retain_graph=True``,
    ``create_graph=flag``): what it switches on may be in force."""
    return any(k.arg in names and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in call.keywords)


def is_optimizer_step(call: ast.Call) -> bool:
    return method_name(call) == "step" and bool(_OPTIMIZER_RECEIVER.search(last_name(receiver_name(call))))


# Methods of adversarial-attack objects (torchattacks, advertorch, a project's own ``Attack`` classes): they take
# gradients of the model's loss with respect to its input, so they need recording on.
_ATTACK_METHODS = frozenset({"attack", "perturb"})


def is_adversarial_attack(call: ast.Call) -> bool:
    """``attack.attack(images, labels)``, ``adversary.perturb(x, y)``: gradient work on the inputs."""
    return isinstance(call.func, ast.Attribute) and call.func.attr in _ATTACK_METHODS


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def annotation_words(annotation: ast.AST) -> set[str]:
    """The type names an annotation is made of: ``Optional[torch.device]`` -> {Optional, torch, device};
    a string annotation's identifiers; ``None`` as the word "None"."""
    words: set[str] = set()
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                words.update(_IDENTIFIER.findall(node.value))
            elif node.value is None:
                words.add("None")
    return words


def leading_indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def class_bases(cls: ast.ClassDef) -> list[str]:
    return [dotted(base) or "" for base in cls.bases]


def is_autograd_function_class(cls: ast.ClassDef) -> bool:
    return any(last_name(b) == "Function" for b in class_bases(cls))
