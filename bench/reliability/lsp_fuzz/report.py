"""The command line: one fuzz run per seed and encoding, what went wrong in each (`problems`, which the test suite
asserts too), a table row per run, and every run's report written as JSON (`--output`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from ...common.paths import RESULTS_DIR, scratch_dir
from .fuzz import Fuzz
from .settings import KINDS

RESULTS = RESULTS_DIR


def problems(report: dict[str, Any], rss_limit_mb: float) -> list[str]:
    """What went wrong in one run (empty: the run passed)."""
    out = []
    for key in ("unanswered", "answered_twice", "answers_to_unknown_ids", "internal_errors", "bad_prompts",
                "excluded_text_sent", "invalid_utf8_bodies", "outages", "streams_open_at_end", "tracebacks_in_log",
                "items_misplaced"):
        if report[key]:
            out.append(f"{key}: {report[key]}")
    if report["unidentified_answered"] != report["unidentified_sent"]:
        out.append(f"{report['unidentified_answered']} id-null answers to {report['unidentified_sent']} messages "
                   "without a usable id")
    if report["popups_not_about_settings"]:
        out.append(f"popups: {report['popups_not_about_settings']}")
    if report["show_message_popups"] > report["bad_settings"]:
        out.append(f"{report['show_message_popups']} popups for {report['bad_settings']} bad settings")
    if report["server_documents_at_end"] != report["reference_documents_at_end"]:
        out.append(f"documents: server {report['server_documents_at_end']}, "
                   f"reference {report['reference_documents_at_end']}")
    if report["after_shutdown_error"] != -32600:
        out.append(f"a request after shutdown got {report['after_shutdown_error']}, not -32600")
    if report["exit_code"] != 0:
        out.append(f"exit code {report['exit_code']}")
    if report["children_left"]:
        out.append(f"children left: {report['children_left']}")
    if report["rss_mb_max"] is not None and report["rss_mb_max"] > rss_limit_mb:
        out.append(f"RSS {report['rss_mb_max']} MB > {rss_limit_mb} MB")
    return out


def run_one(seed: int, encoding: str, actions: int, big_size: int, protocols: tuple[str, ...] = tuple(KINDS),
            vary: bool = True) -> dict[str, Any]:
    workdir = Path(scratch_dir("infill-fuzz-docs-"))
    return asyncio.run(Fuzz(seed, encoding, actions, big_size, workdir, progress=True, protocols=protocols,
                            vary=vary).run())


def build_parser() -> argparse.ArgumentParser:
    from . import __doc__ as package_doc  # the package's docstring (how to run the fuzz, what it checks)

    # prog: run as a package, argparse would name the program `__main__.py`.
    parser = argparse.ArgumentParser(prog="python -m bench.reliability.lsp_fuzz",
                                     description=package_doc.split("\n\n")[0])
    parser.add_argument("--actions", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--encodings", nargs="+", default=["utf-16", "utf-8"], choices=["utf-16", "utf-8"])
    parser.add_argument("--big-size", type=int, default=2_000_000, help="size of the big documents (characters)")
    parser.add_argument("--protocols", nargs="+", default=list(KINDS), choices=list(KINDS),
                        help="completion kinds to configure against the loopback: openai (openai/completion), "
                             "completion (llama.cpp/completion with a FIM template), infill (llama.cpp/infill)")
    parser.add_argument("--no-vary", dest="vary", action="store_false",
                        help="configuration changes keep whole-document budgets and workspace context off")
    parser.add_argument("--rss-limit-mb", type=float, default=400.0)
    parser.add_argument("--output", type=Path, default=RESULTS / "lsp_fuzz.json")
    parser.add_argument("--check", action="store_true", help="exit 1 when a run found a problem")
    return parser


COLUMNS = [("seed", "seed"), ("enc", "encoding"), ("actions", "actions"), ("requests", "requests"),
           ("model requests", "model_requests"), ("warm-ups", "warm_ups"), ("with context", "with_context"),
           ("bad prefix", "bad_prompts"), ("empty prefix", "empty_prefix"), ("unanswered", "unanswered"),
           ("-32603", "internal_errors"), ("excluded sent", "excluded_text_sent"),
           ("bad settings", "bad_settings"), ("outages", "outages"), ("popups", "show_message_popups"),
           ("RSS max MB", "rss_mb_max"), ("RSS end MB", "rss_mb_end"), ("exit", "exit_code"), ("s", "seconds")]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    reports = []
    for seed in args.seeds:
        for encoding in args.encodings:
            report = run_one(seed, encoding, args.actions, args.big_size, tuple(args.protocols), args.vary)
            report["problems"] = problems(report, args.rss_limit_mb)
            reports.append(report)
            print(json.dumps({k: report[k] for _, k in COLUMNS} | {"problems": report["problems"]}), flush=True)
    print()
    print(" | ".join(title for title, _ in COLUMNS) + " | problems")
    for report in reports:
        print(" | ".join(str(report[key]) for _, key in COLUMNS) + f" | {len(report['problems'])}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"machine": {"loadavg": os.getloadavg(), "cpus": os.cpu_count()},
                                       "runs": reports}, indent=1, ensure_ascii=True))
    print(f"\nwritten {args.output}")
    return 1 if args.check and any(r["problems"] for r in reports) else 0
