"""Workspace context on repository-level tasks: exact match and edit similarity without and with context (same
model, same prompt budgets), retrieval hit rate and latency per ranking (BM25 vs Jaccard), and the in-file suites
(HumanEval single-line, SantaCoder) with and without the "lines after the cursor" block for prefix-only models.

Run from the repository root (the packages come from PyPI, npm and Debian; see bench/quality/crosscode_data.py):
    python3 -m bench.quality.crosscode                          # default model, 100 tasks per language (long)
    python3 -m bench.quality.crosscode --count 20 --in-file 40  # a shorter run
    python3 -m bench.quality.crosscode --retrieval-only         # no model: retrieval hit rate, latency per ranking
    python3 -m bench.quality.crosscode --smoke                  # tiny test model, 2 tasks per language
Prints tables and writes JSON under bench/results/."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any


from ..common.paths import RESULTS_DIR
from ..common.stats import percentile, table
from .crosscode_data import LANGUAGES, CrossTask, ensure_packages, load_tasks
from .metrics import edit_similarity, exact_match


@dataclass
class Doc:
    text: str
    language_id: str


# ---------------------------------------------------------------------------------------------------------------------
# Retrieval only


class Workspaces:
    """One WorkspaceContext per package folder (scanned once), the current file opened without its middle."""

    def __init__(self, settings) -> None:
        self.settings = settings
        self.docs: dict[str, Doc] = {}
        self._by_root: dict[str, Any] = {}

    async def get(self, root: str):
        from lsp_server.workspace.provider import WorkspaceContext

        ws = self._by_root.get(root)
        if ws is None:
            ws = WorkspaceContext(self.settings, self.docs)
            ws.set_folders([root])
            await ws.wait_scanned()
            self._by_root[root] = ws
        return ws

    def open(self, ws, task: CrossTask) -> str:
        uri = Path(task.path).as_uri()
        self.docs[uri] = Doc(task.prefix + task.suffix, task.language)
        ws.opened(uri)
        return uri

    def close(self, ws, uri: str) -> None:
        ws.closed(uri)
        self.docs.pop(uri, None)


def hit(task: CrossTask, snippets) -> bool:
    """A snippet from a file defining the identifier, showing it."""
    return any(s.filename in task.defined_in and task.identifier in s.text for s in snippets)


async def retrieval(tasks: list[CrossTask], ranking: str) -> dict[str, Any]:
    from lsp_server.workspace import ContextSettings
    from lsp_server.workspace.provider import CursorInfo
    from lsp_server.workspace.requests import prompt_lines

    # other files only: the "after the cursor" block (next_lines) is no retrieval and would take a snippet's room
    spaces = Workspaces(ContextSettings(ranking=ranking, next_lines=0))
    hits, times, cpu, counts = 0, [], [], []
    by_language: dict[str, list[int]] = {}
    for task in tasks:
        ws = await spaces.get(task.root)
        uri = spaces.open(ws, task)
        ws.tick()  # the server indexes a newly opened document at its next flush, before requests come
        line = task.prefix.count("\n")
        cursor = CursorInfo(uri, task.prefix, task.suffix, line, task.language)
        selection = await ws.select(cursor, prompt_lines=prompt_lines(task.prefix, task.suffix, line, 1024, 256, True),
                                    prefix_only=True)
        times.append(selection.elapsed_ms)
        cpu.append(selection.cpu_ms)
        counts.append(len(selection.snippets))
        found = hit(task, selection.snippets)
        hits += found
        by_language.setdefault(task.language, []).append(found)
        spaces.close(ws, uri)
    return {"ranking": ranking, "tasks": len(tasks), "hit_rate": 100.0 * hits / max(1, len(tasks)),
            "p50_ms": percentile(times, 0.5), "p99_ms": percentile(times, 0.99),
            "cpu_p50_ms": percentile(cpu, 0.5), "cpu_p99_ms": percentile(cpu, 0.99),
            "snippets_mean": statistics.fmean(counts) if counts else 0.0,
            **{f"hit_{lang}": 100.0 * sum(v) / len(v) for lang, v in by_language.items()}}


# ---------------------------------------------------------------------------------------------------------------------
# With the model


class Runner:
    def __init__(self, pipeline) -> None:
        self.pipeline = pipeline

    async def complete(self, task_language: str, uri: str, prefix: str, suffix: str, workspace) -> dict[str, Any]:
        from lsp_server.context import build_context
        from lsp_server.documents import Document

        service = self.pipeline.service
        service.workspace = workspace
        service.cache.clear()
        document = Document(uri=uri, text=prefix + suffix, language_id=task_language)
        line = prefix.count("\n")
        character = len(prefix) - (prefix.rfind("\n") + 1)
        ctx = build_context(document, line, character, "utf-32", policy="never")
        started = time.perf_counter()
        suggestions = await service.generate(ctx)
        latency = (time.perf_counter() - started) * 1000.0
        last = self.pipeline.engine.last
        prompt = last.prompt if last is not None else None
        return {"text": suggestions[0].text if suggestions else "", "latency_ms": latency,
                "prompt_tokens": last.stats.prompt_tokens if last else None,
                "cached_tokens": last.stats.cached_prompt_tokens if last else None,
                "snippets": [s.filename for s in prompt.context] if prompt is not None else []}


async def cross_file(runner: Runner, tasks: list[CrossTask], condition: str, settings,
                     rows_out: Path | None = None) -> list[dict[str, Any]]:
    spaces = Workspaces(settings)
    rows = []
    for task in tasks:
        ws = await spaces.get(task.root) if condition != "none" else None
        uri = Path(task.path).as_uri()
        if ws is not None:
            spaces.open(ws, task)
        result = await runner.complete(task.language, uri, task.prefix, task.suffix, ws)
        if ws is not None:
            spaces.close(ws, uri)
        result.update(task_id=task.task_id, language=task.language, condition=condition,
                      reference=task.reference, exact_match=exact_match(result["text"], task.reference),
                      edit_similarity=edit_similarity(result["text"], task.reference))
        rows.append(result)
        if rows_out is not None:  # kept as it goes: a run stopped early still has its rows
            with rows_out.open("a") as fh:
                fh.write(json.dumps(result) + "\n")
        if len(rows) % 10 == 0:
            done = sum(r["exact_match"] for r in rows)
            print(f"  {task.language} {condition}: {len(rows)}/{len(tasks)} tasks, {done} exact, "
                  f"last {result['latency_ms']:.0f} ms", flush=True)
    return rows


async def in_file(runner: Runner, tasks, next_lines: int) -> list[dict[str, Any]]:
    from lsp_server.workspace import ContextSettings
    from lsp_server.workspace.provider import WorkspaceContext

    rows = []
    for task in tasks:
        docs: dict[str, Doc] = {}
        uri = f"file:///bench/{task.suite}/{task.task_id.replace('/', '_')}"
        ws = None
        if next_lines:
            docs[uri] = Doc(task.prefix + task.suffix, task.language)
            ws = WorkspaceContext(ContextSettings(next_lines=next_lines), docs)
            ws.opened(uri)
        result = await runner.complete(task.language, uri, task.prefix, task.suffix, ws)
        result.update(task_id=task.task_id, suite=task.suite, next_lines=next_lines,
                      exact_match=exact_match(result["text"], task.reference),
                      edit_similarity=edit_similarity(result["text"], task.reference))
        rows.append(result)
    return rows


def in_file_tasks(count: int) -> list:
    from .suites_data import HUMANEVAL_SINGLE, SANTACODER, fixed_sample, load_suite

    humaneval = load_suite(HUMANEVAL_SINGLE)
    picked = [humaneval[i] for i in fixed_sample(len(humaneval), count, 1234)]
    return picked + load_suite(SANTACODER, santacoder_sample=max(1, count // 3))


def summary(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row.get("language") or row.get("suite"), row[key]), []).append(row)
    out = []
    for (group, value), items in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        latencies = [r["latency_ms"] for r in items]
        out.append({"set": group, key: value, "tasks": len(items),
                    "exact_match": 100.0 * sum(r["exact_match"] for r in items) / len(items),
                    "edit_similarity": statistics.fmean(r["edit_similarity"] for r in items),
                    "prompt_tokens_mean": statistics.fmean(r["prompt_tokens"] or 0 for r in items),
                    "latency_p50_ms": percentile(latencies, 0.5)})
    return out


def paired(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (task, condition), and only the tasks measured under every condition (a fair comparison when
    runs were stopped early)."""
    unique: dict[tuple, dict[str, Any]] = {}
    for row in rows:
        unique.setdefault((row["task_id"], row["condition"]), row)
    conditions = {condition for _, condition in unique}
    complete = {task for task, _ in unique if all((task, c) in unique for c in conditions)}
    return [row for (task, _), row in unique.items() if task in complete]


# ---------------------------------------------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> dict[str, Any]:
    languages = [name for name in args.languages.split(",") if name]
    problems = ensure_packages(languages)
    if problems:
        raise SystemExit("crosscode: " + "; ".join(problems))
    tasks = {lang: load_tasks(lang, args.count) for lang in languages}
    report: dict[str, Any] = {"config": {"count": args.count, "prefix_tokens": args.prefix_tokens,
                                         "languages": languages, "model": args.model or "default",
                                         "in_file": args.in_file, "next_lines": args.next_lines,
                                         "machine": platform.platform(), "cpus": os.cpu_count(),
                                         "load_average": os.getloadavg()}}
    every = [t for lang in languages for t in tasks[lang]]
    report["retrieval"] = [await retrieval(every, ranking) for ranking in ("bm25", "jaccard")] if every else []
    print(table(report["retrieval"], ["ranking", "tasks", "hit_rate", *[f"hit_{lang}" for lang in languages],
                                      "p50_ms", "p99_ms", "cpu_p50_ms", "cpu_p99_ms", "snippets_mean"]))
    if args.retrieval_only:
        return report

    from lsp_server.workspace import ContextSettings

    from .suites import engine_config, smoke_model_path
    from .pipeline import Pipeline

    model = str(smoke_model_path()) if args.smoke and not args.model else args.model
    config = engine_config(model, args.binary)
    config = replace(config, completion=replace(config.completion, max_prefix_tokens=args.prefix_tokens))
    pipeline = Pipeline(config, max_tokens=args.max_tokens, server_settings={"multiline": "never"})
    await pipeline.start()
    runner = Runner(pipeline)
    try:
        rows: list[dict[str, Any]] = []
        conditions = [c for c in args.conditions.split(",") if c]
        for lang in languages:
            for condition in conditions:
                # cross-file context alone, as its figures were measured (`--in-file` measures the block)
                settings = ContextSettings(ranking=condition if condition != "none" else "bm25", next_lines=0)
                rows += await cross_file(runner, tasks[lang], condition, settings, args.rows_out)
                print(f"{lang} {condition}: done", flush=True)
        report["cross_file"] = summary(rows, "condition")
        report["cross_file_rows"] = rows
        print(table(report["cross_file"], ["set", "condition", "tasks", "exact_match", "edit_similarity",
                                           "prompt_tokens_mean", "latency_p50_ms"]))
        if args.in_file:
            suite_tasks = in_file_tasks(args.in_file)
            file_rows = []
            for next_lines in (0, args.next_lines):
                file_rows += await in_file(runner, suite_tasks, next_lines)
            report["in_file"] = summary(file_rows, "next_lines")
            report["in_file_rows"] = file_rows
            print(table(report["in_file"], ["set", "next_lines", "tasks", "exact_match", "edit_similarity",
                                            "prompt_tokens_mean", "latency_p50_ms"]))
    finally:
        await pipeline.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--count", type=int, default=100, help="cross-file tasks per language")
    parser.add_argument("--conditions", default="none,bm25", help="none, bm25, jaccard (comma-separated)")
    parser.add_argument("--in-file", type=int, default=150,
                        help="HumanEval single-line tasks (and a third as many SantaCoder tasks per language); 0: none")
    parser.add_argument("--next-lines", type=int, default=8, help="the 'after the cursor' block size to measure")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--prefix-tokens", type=int, default=1024,
                        help="the prompt's prefix budget (the same with and without context)")
    parser.add_argument("--model", default=None)
    parser.add_argument("--binary", default=None)
    parser.add_argument("--retrieval-only", action="store_true")
    parser.add_argument("--rows-out", type=Path, default=None, help="append each task's result to this JSONL file")
    parser.add_argument("--summarize", type=Path, nargs="*", default=None,
                        help="print the tables of JSONL files written by --rows-out, and exit")
    parser.add_argument("--smoke", action="store_true", help="tiny test model, 2 tasks per language, 3 in-file")
    args = parser.parse_args(argv)
    if args.summarize:
        rows = paired([json.loads(line) for path in args.summarize for line in path.read_text().splitlines() if line])
        print(table(summary(rows, "condition"), ["set", "condition", "tasks", "exact_match", "edit_similarity",
                                                  "prompt_tokens_mean", "latency_p50_ms"]))
        return 0
    if args.smoke:
        args.count, args.in_file = 2, 3
    report = asyncio.run(run(args))
    RESULTS_DIR.mkdir(exist_ok=True)
    tag = "smoke" if args.smoke else ("retrieval" if args.retrieval_only else "full")
    out = RESULTS_DIR / f"crosscode-{tag}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=1, default=str))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
