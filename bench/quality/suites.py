"""Completion quality on HumanEval infilling and SantaCoder FIM, in three variants on the same model.

- raw: the model's output cut only at the token limit;
- ours: the LSP server's stop rules and post-processing, as shipped (`bench/quality/pipeline.py`);
- oracle: the best prefix of the raw output, an upper bound for any cutting rule (`bench/quality/metrics.py`).
Efficiency = ours / oracle shows how much of the reachable quality our cutting keeps.

Run from the repository root:
    python3 -m bench.quality.suites                          # default model, all suites (long: see docs/benchmarks.md)
    python3 -m bench.quality.suites --suite humaneval-single --limit 100
    python3 -m bench.quality.suites --smoke                  # tiny test model, a handful of tasks (what the tests run)
Prints a table and writes JSON (every task's completions, stop reasons, tokens, latencies and scores) under
bench/results/. Generation finishes and the model server stops before any HumanEval program runs, and the programs run
in a child process (`bench/quality/humaneval_exec.py`), never in the process that talks to the model."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..common.paths import RESULTS_DIR
from .suites_data import (DEFAULT_DATA_DIR, DEFAULT_MULTI_SAMPLE, DEFAULT_SANTACODER_SAMPLE, DEFAULT_SEED,
                           SANTACODER, SUITES, Task, load_suite)
from .humaneval_exec import ExecItem, score_humaneval
from .metrics import (edit_similarity, exact_match, humaneval_program_middle, line_cut_candidates,
                              oracle_edit_similarity, oracle_exact_match)
from .pipeline import SEED, Generation, Pipeline

VARIANTS = ("raw", "ours", "oracle")
SMOKE_LIMIT = 2


@dataclass
class TaskResult:
    task: Task
    ours: Generation
    raw: Generation
    #: variant → {"exact_match": bool, "edit_similarity": float, "passed": bool | None}
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    oracle_text: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.task.suite, "task_id": self.task.task_id, "language": self.task.language,
                "reference": self.task.reference, "ours": self.ours.to_json(), "raw": self.raw.to_json(),
                "oracle_text": self.oracle_text, "scores": self.scores}


# ---------------------------------------------------------------------------------------------------------------------
# Generation


async def generate(tasks: Sequence[Task], pipeline: Pipeline, progress: bool = True,
                   time_budget: float | None = None) -> list[TaskResult]:
    """Ask the model for every task: ours first (so its latency is not flattered by the raw call's warm cache).

    With `time_budget` (seconds) no new task starts after the budget is spent; the tasks done are a prefix of the
    fixed order, so the result is the same as a run with that `--limit`."""
    results = []
    started = time.monotonic()
    for index, task in enumerate(tasks, start=1):
        if time_budget is not None and time.monotonic() - started > time_budget:
            if progress:
                print(f"  time budget spent: {len(results)} of {len(tasks)} {task.suite} tasks done",
                      file=sys.stderr, flush=True)
            break
        ours = await pipeline.ours(task)
        raw = await pipeline.raw(task)
        results.append(TaskResult(task=task, ours=ours, raw=raw))
        if progress and (index % 5 == 0 or index == len(tasks)):
            elapsed = time.monotonic() - started
            print(f"  {task.suite}: generated {index}/{len(tasks)} in {elapsed:.0f} s", file=sys.stderr, flush=True)
    return results


def interleave_languages(tasks: Sequence[Task]) -> list[Task]:
    """Round-robin over languages, so that a run cut short by a time budget still covers each language."""
    by_language: dict[str, list[Task]] = {}
    for task in tasks:
        by_language.setdefault(task.language, []).append(task)
    out: list[Task] = []
    queues = list(by_language.values())
    for i in range(max((len(q) for q in queues), default=0)):
        out += [q[i] for q in queues if i < len(q)]
    return out


# ---------------------------------------------------------------------------------------------------------------------
# Scoring


def score_text_metrics(results: Sequence[TaskResult]) -> None:
    for result in results:
        reference = result.task.reference
        for variant, text in (("raw", result.raw.text), ("ours", result.ours.text)):
            result.scores[variant] = {"exact_match": exact_match(text, reference),
                                      "edit_similarity": edit_similarity(text, reference), "passed": None}
        result.scores["oracle"] = {"exact_match": oracle_exact_match(result.raw.text, reference),
                                   "edit_similarity": oracle_edit_similarity(result.raw.text, reference),
                                   "passed": None}


def score_execution(results: Sequence[TaskResult], timeout: float, workers: int) -> None:
    """pass@1 for raw and ours, and the oracle: the shortest line cut of the raw output that passes."""
    items: list[ExecItem] = []
    plans: list[tuple[TaskResult, list[str]]] = []
    for result in results:
        task = result.task
        if not task.executable:
            continue
        candidates = line_cut_candidates(result.raw.text)
        plans.append((result, candidates))
        for text in [result.ours.text, result.raw.text, *candidates]:
            items.append(ExecItem(_exec_key(task, text), task.problem, humaneval_program_middle(text, task.suffix)))
    outcomes = score_humaneval(items, timeout=timeout, workers=workers)
    for result, candidates in plans:
        task = result.task
        result.scores["ours"]["passed"] = outcomes[_exec_key(task, result.ours.text)].passed
        result.scores["raw"]["passed"] = outcomes[_exec_key(task, result.raw.text)].passed
        passing = [c for c in candidates if outcomes[_exec_key(task, c)].passed]
        result.scores["oracle"]["passed"] = bool(passing)
        result.oracle_text = passing[0] if passing else None


def _exec_key(task: Task, text: str) -> str:
    return f"{task.suite}|{task.task_id}|{text}"


# ---------------------------------------------------------------------------------------------------------------------
# Summary


def _percentile(values: Sequence[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def group_key(task: Task) -> str:
    return f"{task.suite}/{task.language}" if task.suite == SANTACODER else task.suite


def summarise(results: Sequence[TaskResult]) -> dict[str, dict[str, Any]]:
    """Per group (HumanEval suite, or SantaCoder per language): each variant's scores in percent, efficiency,
    and the cost of "ours" (latency, tokens, stop reasons)."""
    groups: dict[str, list[TaskResult]] = {}
    for result in results:
        groups.setdefault(group_key(result.task), []).append(result)
    summary: dict[str, dict[str, Any]] = {}
    for name, members in groups.items():
        executable = all(r.task.executable for r in members)
        metric = "pass@1" if executable else "exact_match"
        row: dict[str, Any] = {"tasks": len(members), "metric": metric}
        for variant in VARIANTS:
            if executable:
                row[variant] = 100.0 * _mean([float(bool(r.scores[variant]["passed"])) for r in members])
            else:
                row[variant] = 100.0 * _mean([float(r.scores[variant]["exact_match"]) for r in members])
            row[f"{variant}_edit_similarity"] = _mean([r.scores[variant]["edit_similarity"] for r in members])
        row["efficiency"] = _ratio(row["ours"], row["oracle"])
        latencies = [r.ours.latency_ms for r in members]
        row["ours_latency_ms_median"] = statistics.median(latencies)
        row["ours_latency_ms_p95"] = _percentile(latencies, 0.95)
        row["raw_latency_ms_median"] = statistics.median([r.raw.latency_ms for r in members])
        row["ours_generated_tokens_mean"] = _mean([r.ours.generated_tokens for r in members
                                                   if r.ours.generated_tokens is not None])
        row["raw_generated_tokens_mean"] = _mean([r.raw.generated_tokens for r in members
                                                  if r.raw.generated_tokens is not None])
        row["ours_prompt_tokens_mean"] = _mean([r.ours.prompt_tokens for r in members
                                                if r.ours.prompt_tokens is not None])
        reasons: dict[str, int] = {}
        for r in members:
            reasons[r.ours.stop_reason] = reasons.get(r.ours.stop_reason, 0) + 1
        row["ours_stop_reasons"] = reasons
        row["ours_multiline_share"] = _mean([float(bool(r.ours.multiline)) for r in members])
        summary[name] = row
    return summary


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def format_table(summary: dict[str, dict[str, Any]]) -> str:
    header = ("| set | tasks | metric | raw | ours | oracle | efficiency | ES raw / ours / oracle "
              "| ours latency median / p95 (ms) | tokens ours / raw |")
    lines = [header, "|" + "---|" * 10]
    for name, row in summary.items():
        lines.append(
            f"| {name} | {row['tasks']} | {row['metric']} | {_fmt(row['raw'])} | {_fmt(row['ours'])} "
            f"| {_fmt(row['oracle'])} | {_fmt(row['efficiency'], 2)} "
            f"| {_fmt(row['raw_edit_similarity'])} / {_fmt(row['ours_edit_similarity'])} / "
            f"{_fmt(row['oracle_edit_similarity'])} "
            f"| {_fmt(row['ours_latency_ms_median'], 0)} / {_fmt(row['ours_latency_ms_p95'], 0)} "
            f"| {_fmt(row['ours_generated_tokens_mean'])} / {_fmt(row['raw_generated_tokens_mean'])} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------------
# Command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m bench.quality.suites",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", choices=SUITES,
                        help="suite to run; repeat for several (default: all)")
    parser.add_argument("--limit", type=int, help="at most N tasks per suite (per language for santacoder)")
    parser.add_argument("--model", help="GGUF path or model id (default: the embedded Gemma 3 270M)")
    parser.add_argument("--binary", help="llama-server binary (default: Infill's discovery)")
    parser.add_argument("--smoke", action="store_true",
                        help=f"tiny test model, {SMOKE_LIMIT} tasks per suite: checks that the benchmark runs")
    parser.add_argument("--max-tokens", type=int, help="token limit per completion (default: the LSP's max_tokens)")
    parser.add_argument("--multi-sample", type=int, default=DEFAULT_MULTI_SAMPLE,
                        help=f"size of the fixed multi-line sample (default {DEFAULT_MULTI_SAMPLE})")
    parser.add_argument("--santacoder-sample", type=int, default=DEFAULT_SANTACODER_SAMPLE,
                        help=f"size of the fixed SantaCoder sample per language (default {DEFAULT_SANTACODER_SAMPLE})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the fixed samples")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--exec-timeout", type=float, default=5.0, help="seconds per HumanEval program")
    parser.add_argument("--exec-workers", type=int, default=2)
    parser.add_argument("--output", type=Path, help="JSON file to write (default: bench/results/quality-<time>.json)")
    parser.add_argument("--time-budget", type=float,
                        help="seconds of generation per suite; tasks not started by then are left out (and counted "
                             "in the report)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def smoke_model_path() -> Path:
    """The tiny test model, built once into the user cache (it is deterministic, so a cached copy is the same)."""
    from tests.fixtures.tiny_model import build_tiny_model

    target = Path.home() / ".cache" / "infill-bench" / "tiny-fim.gguf"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        build_tiny_model(target)
    return target


def engine_config(model: str | None, binary: str | None):
    from engine.config import EngineConfig, LocalServerSettings, ModelConfig

    return EngineConfig(completion=ModelConfig(kind="local", model=model, local=LocalServerSettings(binary=binary)))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    suites = args.suite or list(SUITES)
    limit = SMOKE_LIMIT if args.smoke else args.limit
    model = str(smoke_model_path()) if args.smoke and not args.model else args.model
    by_suite: dict[str, list[Task]] = {}
    for suite in suites:
        by_suite[suite] = interleave_languages(load_suite(
            suite, args.data_dir, limit=limit, multi_sample=args.multi_sample,
            santacoder_sample=args.santacoder_sample, seed=args.seed))
    pipeline = Pipeline(engine_config(model, args.binary), max_tokens=args.max_tokens)
    started = time.monotonic()
    results: list[TaskResult] = []
    try:
        await pipeline.start()
        for tasks in by_suite.values():
            results += await generate(tasks, pipeline, progress=not args.quiet, time_budget=args.time_budget)
    finally:
        await pipeline.close()
    generation_s = time.monotonic() - started
    score_text_metrics(results)
    score_execution(results, args.exec_timeout, args.exec_workers)
    summary = summarise(results)
    return {
        "benchmark": "quality",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "load_average_1min": os.getloadavg()[0],
                    "processor": platform.processor() or platform.machine()},
        "config": {"suites": suites, "limit": limit, "time_budget": args.time_budget,
                   "tasks_planned": {suite: len(tasks) for suite, tasks in by_suite.items()},
                   "model": model or "default (Gemma 3 270M)",
                   "smoke": bool(args.smoke), "max_tokens": pipeline.max_tokens, "temperature": 0.0,
                   "seed": SEED, "sample_seed": args.seed, "multi_sample": args.multi_sample,
                   "santacoder_sample": args.santacoder_sample},
        "generation_seconds": generation_s,
        "summary": summary,
        "tasks": [r.to_json() for r in results],
    }


def write_report(report: dict[str, Any], output: Path | None) -> Path:
    if output is None:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        tag = "smoke" if report["config"]["smoke"] else "full"
        output = RESULTS_DIR / f"quality-{tag}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1))
    return output


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    report = asyncio.run(run(args))
    path = write_report(report, args.output)
    print(format_table(report["summary"]))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
