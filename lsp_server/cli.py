"""The `infill` command. Each subcommand lives in `lsp_server/commands/<name>.py` with `add_arguments(parser)` and
`run(args) -> int`, so commands stay independent and import their heavy dependencies only when they run."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from . import __version__

COMMANDS: dict[str, str] = {
    "serve": "run the language server (stdio by default)",
    "complete": "print the completion at FILE:LINE:COL (1-based line and column)",
    "doctor": "check the binary, the model, a server start and one completion",
    "models": "list configured and cached models; download one",
    "languages": "print the language table",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="infill", description="Infill: fill-in-the-middle code completion over LSP.")
    parser.add_argument("--version", action="version", version=f"infill {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"lsp_server.commands.{name}")
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(command_parser)
        command_parser.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_module", None):
        parser.print_help()
        return 2
    try:
        return int(args._module.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `infill languages | head`: the reader went away, which is not an error
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    sys.exit(main())
