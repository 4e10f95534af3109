"""Cost of the parse-clean cut (`lsp_server.postprocess.parse_clean`) on real code: per item, the two parses of a
clean one and the extra parses of one it cuts, against its time budget.

Items: the holes of the cut simulation's corpus (real package files; `python -m bench.quality.cut_simulation --fetch`)
with the cursor after the indentation, each as the missing code itself (clean: kept whole) and as the missing code
followed by a clause that cannot follow there (`else:` / `default:` plus a line: cut back). The filter runs once per
model answer, before the cache, so its cost is added to a model call (hundreds of milliseconds), not to a keystroke
served from the cache.

    flock /tmp/infill-bench.lock python -m bench.latency.parse_clean_speed [--per-language N]
    python -m bench.latency.parse_clean_speed --smoke     # a few items from this repository's files

Prints a table and writes bench/results/parse_clean_speed.json. Target: median well under 1 ms per item, p95 under
the budget (`parse_clean.BUDGET_MS`)."""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

from lsp_server.postprocess import PostprocessContext
from lsp_server.postprocess import parse_clean

from ..common.paths import REPO_ROOT, RESULTS_DIR
from ..common.stats import percentile, table
from ..quality import cut_simulation, real_code

CLASHES = {"python": "else:\n{indent}    pass", "go": "default:\n{indent}\treturn",
           "java": "default:\n{indent}    break;", "typescript": "default:\n{indent}    break;",
           "javascript": "default:\n{indent}    break;"}


def items(language: str, count: int, seed: int, smoke: bool = False) -> list[tuple[str, str, PostprocessContext]]:
    """(shape, item, context) pairs from the corpus' holes (`smoke`: this repository's replay files)."""
    if smoke:
        files = [REPO_ROOT / p for p in cut_simulation.SMOKE_FILES.get(language, ())]
    else:
        files = real_code.split_files("tune", language)
    out = []
    for task in real_code.load_tasks(language, files, count, seed):
        if task.position != "indent":
            continue
        ctx = PostprocessContext(prefix=task.prefix[-16384:], suffix=task.suffix[:8192], language=language)
        indent = ctx.line_prefix
        out.append(("clean", task.middle, ctx))
        out.append(("clashing", task.middle + "\n" + indent + CLASHES[language].format(indent=indent), ctx))
    return out


def measure(per_language: int, seed: int, smoke: bool = False) -> dict:
    rows = []
    samples: list[float] = []
    for language in CLASHES:
        drawn = items(language, per_language, seed, smoke)
        for shape in ("clean", "clashing"):
            timings, cut = [], 0
            for kind, item, ctx in drawn:
                if kind != shape:
                    continue
                started = time.perf_counter()
                kept = parse_clean.cut_parse_errors(item, ctx)
                timings.append((time.perf_counter() - started) * 1000.0)
                cut += kept != item
            if not timings:
                continue
            samples += timings
            rows.append({"language": language, "items": shape, "n": len(timings), "cut %": 100.0 * cut / len(timings),
                         "median ms": statistics.median(timings), "p95 ms": percentile(timings, 0.95),
                         "max ms": max(timings),
                         "over budget %": 100.0 * sum(t > parse_clean.BUDGET_MS for t in timings) / len(timings)})
    return {"rows": rows, "all": {"n": len(samples), "median_ms": statistics.median(samples),
                                  "p95_ms": percentile(samples, 0.95), "budget_ms": parse_clean.BUDGET_MS}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-language", type=int, default=60, help="tasks drawn per language (default 60)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="a few items from this repository's own files")
    parser.add_argument("--output", help="JSON file (default: bench/results/parse_clean_speed.json)")
    args = parser.parse_args(argv)
    report = measure(6 if args.smoke else args.per_language, args.seed, args.smoke)
    report["machine"] = {"platform": platform.platform(), "python": platform.python_version()}
    print(table(report["rows"], ["language", "items", "n", "cut %", "median ms", "p95 ms", "max ms",
                                 "over budget %"]))
    print(f"\nall items: median {report['all']['median_ms']:.2f} ms, p95 {report['all']['p95_ms']:.2f} ms "
          f"(budget {report['all']['budget_ms']:.0f} ms)")
    output = Path(args.output) if args.output else RESULTS_DIR / "parse_clean_speed.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
