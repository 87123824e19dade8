"""The `vramlens` settings section (docs/lsp-protocol.md), read per workspace folder. Pure (no pygls)."""

from __future__ import annotations

from dataclasses import dataclass, field

ANNOTATION_STYLES = ("inlayHints", "endOfLine", "off")


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


def _count(value, default: int, least: int) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= least else default


def _text(value, default: str = "") -> str:
    return value if isinstance(value, str) else default


def parse_settings(raw: object) -> Settings:
    """Settings from what a client sent; a value of the wrong type falls back to its default."""
    raw = raw if isinstance(raw, dict) else {}
    args = raw.get("args")
    env = raw.get("env")
    timeout = raw.get("timeoutSeconds")
    stacks = raw.get("stacks")
    style = raw.get("annotationStyle")
    lint = raw.get("lint")
    return Settings(
        interpreter=_text(raw.get("interpreter")),
        args=[str(a) for a in args] if isinstance(args, list) else [],
        cwd=_text(raw.get("cwd")),
        env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {},
        memory_limit=_text(raw.get("memoryLimit")),
        timeout_s=float(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else 0.0,
        stacks=stacks if stacks in ("python", "all") else "python",
        annotation_style=style if style in ANNOTATION_STYLES else "inlayHints",
        lint=lint if isinstance(lint, dict) else {},
        processes_per_node=_count(raw.get("processesPerNode"), 0, 0),
        experiment_repeats=_count(raw.get("experimentRepeats"), 3, 1),
    )
