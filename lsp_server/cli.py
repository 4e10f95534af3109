"""The `infill` command. Each subcommand lives in `lsp_server/commands/<name>.py` with `add_arguments(parser)` and
`run(args) -> int`, so commands stay independent and import their heavy dependencies only when they run."""

from __future__ import annotations

import importlib
import os
import sys
from functools import partial
from typing import TYPE_CHECKING, Callable

from . import __version__

if TYPE_CHECKING:
    import argparse

COMMANDS: dict[str, str] = {
    "serve": "run the language server (stdio by default)",
    "complete": "print the completion at FILE:LINE:COL (1-based line and column)",
    "doctor": "check the binary, the model, a server start and one completion",
    "models": "list configured and cached models; download one",
    "languages": "print the language table",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command, or with the arguments of `only` (the others listed by name): a command's
    module is imported to add its arguments, and `infill serve` should not pay for importing the others (an editor
    waits for the server's first answer)."""
    import argparse

    parser = argparse.ArgumentParser(prog="infill", description="Infill: fill-in-the-middle code completion over LSP.")
    parser.add_argument("--version", action="version", version=f"infill {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or name == only:
            module = importlib.import_module(f"lsp_server.commands.{name}")
            module.add_arguments(command_parser)
            command_parser.set_defaults(_module=module)
    return parser


def _command(argv: list[str]) -> str | None:
    """The command named first in `argv`, when it is one (options before it are the top-level ones)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


#: How editors start the server. It needs no argument parser: building one imports argparse and the modules its help
#: formatter uses (shutil, locale, the compression modules), ~5 ms of the start an editor waits for.
STDIO_SERVE = (["serve"], ["serve", "--stdio"])


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    run: Callable[[], int | None]
    if arguments in STDIO_SERVE:
        from .commands.serve import run_stdio

        run = run_stdio
    else:
        parser = build_parser(_command(arguments))
        args = parser.parse_args(arguments)
        if not getattr(args, "_module", None):
            parser.print_help()
            return 2
        run = partial(args._module.run, args)
    try:
        return int(run() or 0)
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
