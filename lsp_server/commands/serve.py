"""`infill serve [--stdio] [--tcp HOST:PORT]`: run the language server.

stdio is the default because that is how editors start language servers; TCP is for attaching a debugger or a
client by hand. Nothing is printed to stdout in stdio mode (it is the protocol channel)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `infill serve --stdio` runs without an argument parser (lsp_server/cli.py)
    import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (default)")
    mode.add_argument("--tcp", metavar="HOST:PORT", help="listen for one LSP client on HOST:PORT")


def parse_host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--tcp expects HOST:PORT (e.g. 127.0.0.1:2087), got {value!r}")
    return host or "127.0.0.1", int(port)


def run(args: argparse.Namespace) -> int:
    if not args.tcp:
        return run_stdio()
    try:
        host, port = parse_host_port(args.tcp)
    except ValueError as exc:
        print(f"infill serve: {exc}", file=sys.stderr)
        return 2
    from lsp_server.server import main_tcp
    from lsp_server.startup import freeze_and_pause

    freeze_and_pause()  # no garbage collection until `initialize` is answered (lsp_server/startup.py says why)
    print(f"infill: listening on {host}:{port}", file=sys.stderr)
    return main_tcp(host, port)


def run_stdio() -> int:
    """`infill serve [--stdio]` (lsp_server/cli.py calls it without parsing arguments)."""
    from lsp_server.server import main_stdio
    from lsp_server.startup import freeze_and_pause

    freeze_and_pause()  # no garbage collection until `initialize` is answered (lsp_server/startup.py says why)
    return main_stdio()
