"""The `vramlens` command line: argparse adapters over the engine, one module per subcommand.

Each subcommand module exposes ``add_parser(subparsers)``; the parser it adds carries a
``handler(args) -> int`` default. Modules are imported here so a missing optional piece
(for example the language server's dependencies) never breaks the other subcommands.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from vramlens import __version__

SUBCOMMANDS = ("run", "experiment", "analyze", "diff", "report", "lint", "serve")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand; with ``argv`` naming one, of that one only (the others' modules,
    lint's engine and the runner among them, take a third of a second to import)."""
    parser = argparse.ArgumentParser(
        prog="vramlens",
        description="Why did my GPU run out of memory, and which line of my code is responsible?",
    )
    parser.add_argument("--version", action="version", version=f"vramlens {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = _chosen_subcommand(argv)
    for name in SUBCOMMANDS if chosen is None else (chosen,):
        try:
            module = importlib.import_module(f"vramlens.cli.{name}")
        except ModuleNotFoundError as error:
            if error.name and not error.name.startswith("vramlens."):
                continue  # its third-party dependency is absent here (e.g. pygls on a GPU box)
            if error.name == f"vramlens.cli.{name}":
                continue  # subcommand not built into this copy
            raise
        module.add_parser(subparsers)
    return parser


def _chosen_subcommand(argv: list[str] | None) -> str | None:
    """The subcommand ``argv`` names first, when it is one (options before it are the top level's)."""
    for word in argv or ():
        if not word.startswith("-"):
            return word if word in SUBCOMMANDS else None
    return None


def main(argv: list[str] | None = None) -> int:
    _encode_safely()
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except KeyboardInterrupt:
        print("vramlens: interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`vramlens analyze … | head`): nothing more to say
        _silence_stdout()
        return 141


def _encode_safely() -> None:
    """Text from a capture may hold what no encoding can write (a lone surrogate from JSON, a file
    name that is not UTF-8): it is written out as an escape, never a UnicodeEncodeError mid-output."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def _silence_stdout() -> None:
    """Python flushes stdout once more at exit; to a closed pipe that would print a second error."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
