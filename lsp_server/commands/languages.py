"""`infill languages`: the language table, so users can see which ids are known and how completions stop."""

from __future__ import annotations

import argparse
import json
import sys

from . import CONFIG_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--config", metavar="FILE", help=f"{CONFIG_HELP}; its [languages] entries are applied")
    parser.add_argument("--stop-words", metavar="LANGUAGE_ID",
                        help="print the stop words of one language id (an unknown id shows the single-line set)")


def _rows(table) -> list[dict]:
    return [{
        "name": language.name,
        "language_ids": list(language.language_ids),
        "aliases": list(language.aliases),
        "line_comment": language.line_comment,
        "top_level_keywords": list(language.top_level_keywords),
        "stop_words": len(language.stop_words()),
    } for language in table]


def _format_table(rows: list[dict]) -> str:
    headers = ("language", "language ids", "aliases", "comment", "stop words")
    cells = [(r["name"], ", ".join(r["language_ids"]), ", ".join(r["aliases"]) or "-", r["line_comment"] or "-",
              str(r["stop_words"])) for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths)).rstrip() for cell in cells]
    lines.append(f"{len(rows)} languages; any other language id gets single-line completions.")
    return "\n".join(lines)


def _load_table(config_file: str | None):
    """The packaged table plus the user's `[languages.<name>]` entries from the settings file."""
    from engine.languages import LanguageTable
    from lsp_server.config import load_settings_file, parse_settings

    return LanguageTable.load(parse_settings(load_settings_file(config_file)).engine.languages)


def run(args: argparse.Namespace) -> int:
    from engine.errors import ConfigError

    try:
        table = _load_table(args.config)
    except ConfigError as exc:
        print(f"infill languages: {exc}", file=sys.stderr)
        return 2
    if args.stop_words:
        language = table.lookup(args.stop_words)
        words = language.stop_words()
        if args.json:
            print(json.dumps({"name": language.name, "known": language.known, "stop_words": list(words)},
                             ensure_ascii=False, indent=2))
        else:
            note = "" if language.known else " (unknown: single-line)"
            print(f"{language.name}{note}: {len(words)} stop words")
            for word in words:
                print("  " + json.dumps(word, ensure_ascii=False))
        return 0
    rows = _rows(table)
    print(json.dumps(rows, ensure_ascii=False, indent=2) if args.json else _format_table(rows))
    return 0
