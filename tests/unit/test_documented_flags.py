"""The README's command-line synopsis names exactly the options each subcommand accepts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vramlens.cli import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"
FLAG = re.compile(r"(?<![\w-])(--?[a-z][a-z-]*)")


def documented() -> dict[str, set[str]]:
    """Subcommand -> the flags its synopsis rows name (a row starting `vramlens NAME`, and the rows under it)."""
    text = README.read_text()
    block = text.split("## The command line", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    flags: dict[str, set[str]] = {}
    current = None
    for row in block.splitlines():
        row = row.split("#", 1)[0]
        head = re.match(r"\s*vramlens (\w+)", row)
        if head:
            current = head.group(1)
            row = row[head.end():]
        if current:
            flags.setdefault(current, set()).update(FLAG.findall(row))
    return flags


def accepted() -> dict[str, set[str]]:
    parser = build_parser()
    subparsers = next(action for action in parser._actions if action.__class__.__name__ == "_SubParsersAction")
    return {name: {option for action in sub._actions for option in action.option_strings} - {"-h", "--help"}
            for name, sub in subparsers.choices.items()}


def test_every_subcommand_has_a_synopsis():
    assert set(documented()) == set(accepted())


@pytest.mark.parametrize("command", sorted(accepted()))
def test_the_synopsis_names_every_option_and_only_real_ones(command):
    # `--torchrun [TORCHRUN OPTIONS]` is run's: the options after it are torchrun's own.
    shown, real = documented()[command], accepted()[command]
    assert shown - real == set(), f"documented but not accepted by `vramlens {command}`"
    assert real - shown == set(), f"accepted by `vramlens {command}` but not documented"
