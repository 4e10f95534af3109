"""`infill complete FILE:LINE:COL`: print the completion an editor would show at that place.

It runs the same pipeline as the LSP server (context, cache, engine, post-processing), so it is the quickest way
to check a model or a configuration. Progress (model download, server start) goes to stderr; only the completion
goes to stdout, so the output can be piped."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from engine.languages import language_id_for_path

from . import CONFIG_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("location", metavar="FILE:LINE:COL",
                        help="where to complete; LINE and COL start at 1, COL counts characters")
    parser.add_argument("--language", help="LSP languageId (default: from the file extension)")
    parser.add_argument("--model", help="completion.model: a .gguf path, a model directory or a Hugging Face id")
    parser.add_argument("--kind", help='completion.kind, e.g. "local" (default) or "llama.cpp/infill"')
    parser.add_argument("--endpoint", help="completion.api_endpoint for remote kinds")
    parser.add_argument("--max-tokens", type=int, help="token budget of the completion")
    parser.add_argument("--multiline", choices=("auto", "always", "never"), help="single- or multi-line policy")
    parser.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    parser.add_argument("--quiet", action="store_true", help="print nothing but the completion (and errors)")


def parse_location(value: str) -> tuple[Path, int, int]:
    """FILE:LINE:COL, split from the right so that paths may contain ":"."""
    parts = value.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise ValueError(f"expected FILE:LINE:COL (e.g. examples/sample.py:5:5), got {value!r}")
    line, col = int(parts[1]), int(parts[2])
    if line < 1 or col < 1:
        raise ValueError(f"LINE and COL start at 1, got {line}:{col}")
    return Path(parts[0]), line, col


def language_for(path: Path, given: str | None) -> str:
    """--language when given, else the languageId of the file's extension (engine/languages.toml)."""
    return given or language_id_for_path(path)


def cli_overrides(args: argparse.Namespace) -> dict[str, Any]:
    completion: dict[str, Any] = {}
    if args.kind:
        completion["kind"] = args.kind
    if args.model:
        completion["model"] = args.model
    if args.endpoint:
        completion["api_endpoint"] = args.endpoint
    out: dict[str, Any] = {}
    if completion:
        out["completion"] = completion
    if args.max_tokens is not None:
        out["max_tokens"] = args.max_tokens
    if args.multiline:
        out["multiline"] = args.multiline
    return out


class StderrStatus:
    """Friendly progress lines on stderr while the model is prepared and started (each message once)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self._last: str | None = None
        self._started = time.monotonic()

    def say(self, message: str) -> None:
        if self.quiet or message == self._last:
            return
        self._last = message
        print(f"infill: {message}", file=sys.stderr, flush=True)

    def __call__(self, event: Any) -> None:
        text = event.message
        if event.percent is not None and event.kind == "starting":
            text = f"{text} ({event.percent}%)"
        if event.kind == "ready":
            text = f"{text} (after {time.monotonic() - self._started:.1f} s)"
        self.say(text)
        if event.kind == "error" and event.detail:
            self.say(event.detail)


@contextlib.contextmanager
def only_errors_logged() -> Iterator[None]:
    """`--quiet`: the engine's and the server's warnings stay off stderr too (the default model's note that it is
    used prefix-only came with every run, and a slow llama-server's shutdown); errors still show."""
    loggers = [logging.getLogger(name) for name in ("engine", "lsp_server")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


async def complete_at(path: Path, line: int, col: int, language: str, overrides: dict[str, Any],
                      config_file: str | None, status: StderrStatus) -> str | None:
    from engine.errors import ConfigError
    from lsp_server.config import SettingsStore, load_settings_file
    from lsp_server.context import Window, build_context
    from lsp_server.documents import UTF32, Document
    from lsp_server.pipeline import CompletionService

    store = SettingsStore()
    store.update("file", load_settings_file(config_file))
    try:
        settings = store.update("initialization", overrides)
    except ConfigError as exc:
        raise ConfigError(exc.key, f"{str(exc).split(': ', 1)[-1]} (from the command line)") from None
    with open(path, encoding="utf-8", newline="") as fh:
        text = fh.read()
    doc = Document(path.resolve().as_uri(), text, language)
    if line - 1 >= doc.line_count:
        raise ValueError(f"{path} has {doc.line_count} lines; line {line} does not exist")
    ctx = build_context(doc, line - 1, col - 1, UTF32, policy=settings.multiline, indent_unit=settings.indent_unit,
                        filepath=str(path), window=Window.for_model(settings.engine.completion))
    service = CompletionService(settings, status)
    try:
        status.say(f"completing {path}:{line}:{col} ({language}, {'multi' if ctx.multiline else 'single'}-line)")
        await service.start()
        suggestions = await service.generate(ctx, invoked=False)
    finally:
        await service.close()
    return suggestions[0].text if suggestions else None


def run(args: argparse.Namespace) -> int:
    from engine.errors import InfillError

    try:
        path, line, col = parse_location(args.location)
    except ValueError as exc:
        print(f"infill complete: {exc}", file=sys.stderr)
        return 2
    if not path.is_file():
        print(f"infill complete: {path}: no such file", file=sys.stderr)
        return 2
    from lsp_server.secrets import excluded_by

    glob = excluded_by(str(path.resolve()))
    if glob:
        print(f"infill complete: {path} matches the secret-file exclusion {glob!r}; it is never sent to a model",
              file=sys.stderr)
        return 1
    status = StderrStatus(args.quiet)
    try:
        with only_errors_logged() if args.quiet else contextlib.nullcontext():
            text = asyncio.run(complete_at(path, line, col, language_for(path, args.language), cli_overrides(args),
                                           args.config, status))
    except (InfillError, ValueError, OSError) as exc:
        print(f"infill complete: {exc}", file=sys.stderr)
        return 2
    if not text:
        status.say(f"no suggestion at {path}:{line}:{col}")
        return 1
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()
    return 0
