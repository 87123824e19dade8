"""The `vramlens` settings section (docs/lsp-protocol.md), read per workspace folder. Pure (no pygls).

A value of the wrong type falls back to its default; a number outside its sane range does too,
and is named in ``problems`` with one sentence, which the commands that use it answer with
instead of running (processesPerNode 10**12 would start that many processes)."""

from __future__ import annotations

from dataclasses import dataclass, field

ANNOTATION_STYLES = ("inlayHints", "endOfLine", "off")
MAX_PROCESSES_PER_NODE = 64  # more than any machine has GPUs: torchrun would only start them to fail
MAX_TIMEOUT_S = 30 * 24 * 3600.0
MAX_REPEATS = 20


@dataclass(frozen=True)
class Settings:
    interpreter: str = ""
    args: list[str] = field(default_factory=list)
    cwd: str = ""
    env: dict[str, str] = field(default_factory=dict)
    memory_limit: str = ""
    timeout_s: float = 0.0
    stacks: str = "python"
    annotation_style: str = "inlayHints"
    lint: dict = field(default_factory=dict)
    processes_per_node: int = 0  # > 1: diagnose through torchrun, one capture per rank
    experiment_repeats: int = 3  # runs per variant of "Compare interventions"
    problems: dict[str, str] = field(default_factory=dict)  # setting -> why its value was not used


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def checked_count(value, name: str, least: int, most: int) -> tuple[int | None, str | None]:
    """(the value, None) when it is a whole number in [least, most]; else (None, the sentence why not)."""
    if _number(value) and (isinstance(value, int) or value.is_integer()) and least <= value <= most:
        return int(value), None
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return None, f"vramlens.{name} must be a whole number from {least} to {most}, not {shown}."


def _count(raw: dict, name: str, default: int, least: int, most: int, problems: dict) -> int:
    if raw.get(name) is None:
        return default
    value, problem = checked_count(raw[name], name, least, most)
    if problem:
        problems[name] = problem
        return default
    return value


def _seconds(raw: dict, name: str, problems: dict) -> float:
    value = raw.get(name)
    if value is None or value == 0:
        return 0.0
    if _number(value) and 0 < value <= MAX_TIMEOUT_S:  # compared, never converted: 10**400 is no float
        return float(value)
    problems[name] = f"vramlens.{name} must be a number of seconds from 0 to {MAX_TIMEOUT_S:.0f}."
    return 0.0


def _text(value, default: str = "") -> str:
    return value if isinstance(value, str) else default


def parse_settings(raw: object) -> Settings:
    """Settings from what a client sent; a value of the wrong type falls back to its default."""
    raw = raw if isinstance(raw, dict) else {}
    problems: dict[str, str] = {}
    args = raw.get("args")
    env = raw.get("env")
    stacks = raw.get("stacks")
    style = raw.get("annotationStyle")
    lint = raw.get("lint")
    return Settings(
        interpreter=_text(raw.get("interpreter")),
        args=[str(a) for a in args] if isinstance(args, list) else [],
        cwd=_text(raw.get("cwd")),
        env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {},
        memory_limit=_text(raw.get("memoryLimit")),
        timeout_s=_seconds(raw, "timeoutSeconds", problems),
        stacks=stacks if stacks in ("python", "all") else "python",
        annotation_style=style if style in ANNOTATION_STYLES else "inlayHints",
        lint=lint if isinstance(lint, dict) else {},
        processes_per_node=_count(raw, "processesPerNode", 0, 0, MAX_PROCESSES_PER_NODE, problems),
        experiment_repeats=_count(raw, "experimentRepeats", 3, 1, MAX_REPEATS, problems),
        problems=problems,
    )
