"""Plots for docs/benchmarks.md from the JSON files the benchmarks write.

    python3 -m bench.common.plots --quality bench/results/quality-full-….json \
        --typing bench/results/typing-full-….json
Without paths it takes the newest non-smoke result of each kind in bench/results/. Writes
docs/benchmarks-quality.png (score per variant and set) and docs/benchmarks-latency.png (keystroke → suggestion
latency, ours vs naive, as cumulative distributions: the median and p95 can be read off directly)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DOCS_DIR = Path(__file__).resolve().parents[1] / "docs"
VARIANT_COLOURS = {"raw": "#b0b0b0", "ours": "#2a7ab9", "oracle": "#f0a030", "naive": "#c04040"}


def newest(kind: str) -> Path | None:
    candidates = sorted(RESULTS_DIR.glob(f"{kind}-full-*.json")) if RESULTS_DIR.is_dir() else []
    return candidates[-1] if candidates else None


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; no display here or in CI
    import matplotlib.pyplot as plt

    return plt


def merge_quality(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """One report from several runs of the same model (e.g. one suite per run): their summaries side by side."""
    models = {str(r["config"]["model"]) for r in reports}
    if len(models) != 1:
        raise SystemExit(f"plots: the quality files are from different models: {sorted(models)}")
    summary: dict[str, Any] = {}
    for report in reports:
        summary.update(report["summary"])
    return {**reports[0], "summary": summary}


def plot_quality(report: dict[str, Any], output: Path) -> Path:
    plt = _pyplot()
    summary = report["summary"]
    groups = list(summary)
    variants = ("raw", "ours", "oracle")
    width = 0.26
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for i, variant in enumerate(variants):
        xs = [g + (i - 1) * width for g in range(len(groups))]
        values = [summary[name][variant] or 0.0 for name in groups]
        bars = ax.bar(xs, values, width, label=variant, color=VARIANT_COLOURS[variant])
        for bar, value in zip(bars, values):
            ax.annotate(f"{value:.1f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=7)
    top = max([summary[name][v] or 0.0 for name in groups for v in variants] + [0.0])
    ax.set_ylim(0, max(5.0, top * 1.15))
    labels = [f"{name}\n({summary[name]['metric']}, n={summary[name]['tasks']})" for name in groups]
    ax.set_xticks(range(len(groups)), labels, fontsize=8)
    ax.set_ylabel("score (%)")
    model = report["config"]["model"]
    ax.set_title(f"Completion quality per variant — {Path(str(model)).name}, temperature 0", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output


def plot_latency(report: dict[str, Any], output: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for variant, data in report["variants"].items():
        latencies = sorted(r["latency_ms"] for r in data["requests"] if r.get("text") and r["latency_ms"] is not None)
        if not latencies:
            continue
        ys = [100.0 * (i + 1) / len(latencies) for i in range(len(latencies))]
        summary = report["summary"][variant]
        label = (f"{variant}: median {summary['latency_ms_median']:.0f} ms, p95 {summary['latency_ms_p95']:.0f} ms "
                 f"(n={len(latencies)})")
        ax.step(latencies, ys, where="post", label=label, color=VARIANT_COLOURS.get(variant))
    ax.axvline(250, color="black", linestyle=":", linewidth=1, label="target median 250 ms")
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("keystroke → non-empty suggestion (ms, log scale)")
    ax.set_ylabel("suggestions at or below (%)")
    cfg = report["config"]
    ax.set_title(f"Typing replay at {cfg['cps']:g} chars/s — {Path(str(cfg['model'])).name}", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m bench.common.plots", description=__doc__.splitlines()[0])
    parser.add_argument("--quality", type=Path, action="append",
                        help="a bench/quality/suites.py JSON file; repeat for runs made one suite at a time"
                             " (default: the newest full run)")
    parser.add_argument("--typing", type=Path,
                        help="a bench/replay/typing_replay.py JSON file (default: the newest full run)")
    parser.add_argument("--out-dir", type=Path, default=DOCS_DIR)
    args = parser.parse_args(argv)
    quality = args.quality or ([newest("quality")] if newest("quality") else None)
    typing = args.typing or newest("typing")
    if quality is None and typing is None:
        print(f"plots: no benchmark results found in {RESULTS_DIR}; "
              "run bench.quality.suites or bench.replay.typing_replay first", file=sys.stderr)
        return 1
    if quality is not None:
        report = merge_quality([json.loads(path.read_text()) for path in quality])
        print(plot_quality(report, args.out_dir / "benchmarks-quality.png"))
    if typing is not None:
        print(plot_latency(json.loads(typing.read_text()), args.out_dir / "benchmarks-latency.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
