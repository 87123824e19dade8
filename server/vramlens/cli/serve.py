"""`vramlens serve`: run the language server over stdio (argparse adapter only)."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("serve", help="run the VRAM Lens language server (stdio)")
    parser.set_defaults(handler=run_server)


def run_server(args: argparse.Namespace) -> int:
    from vramlens.lsp.app import serve  # imported late: pygls is only needed here

    return serve()
