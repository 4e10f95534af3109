"""bench/common/plots.py draws the two report figures from benchmark JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.common.plots import merge_quality, plot_latency, plot_quality

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_quality_and_latency_plots_are_written_as_png(tmp_path: Path):
    quality = {"config": {"model": "/models/tiny.gguf"},
               "summary": {"humaneval-single": {"metric": "pass@1", "tasks": 3, "raw": 0.0, "ours": 33.3,
                                                "oracle": 66.7},
                           "santacoder/java": {"metric": "exact_match", "tasks": 3, "raw": 0.0, "ours": 0.0,
                                               "oracle": 33.3}}}
    typing = {"config": {"cps": 10.0, "model": "tiny.gguf"},
              "summary": {"ours": {"latency_ms_median": 120.0, "latency_ms_p95": 300.0},
                          "naive": {"latency_ms_median": 400.0, "latency_ms_p95": 900.0}},
              "variants": {"ours": {"requests": [{"text": "a", "latency_ms": 120.0}, {"text": "b", "latency_ms": 300.0},
                                                 {"text": None, "latency_ms": 90.0}]},
                           "naive": {"requests": [{"text": "a", "latency_ms": 400.0},
                                                  {"text": "c", "latency_ms": 900.0}]}}}
    for path in (plot_quality(quality, tmp_path / "q.png"), plot_latency(typing, tmp_path / "l.png")):
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000


def test_quality_runs_made_one_suite_at_a_time_are_merged(tmp_path: Path):
    single = {"config": {"model": "m.gguf"}, "summary": {"humaneval-single": {"tasks": 1033}}}
    multi = {"config": {"model": "m.gguf"}, "summary": {"humaneval-multi": {"tasks": 500}}}
    merged = merge_quality([single, multi])
    assert {name: s["tasks"] for name, s in merged["summary"].items()} == {"humaneval-single": 1033,
                                                                             "humaneval-multi": 500}
    other = {"config": {"model": "other.gguf"}, "summary": {}}
    with pytest.raises(SystemExit, match="different models"):
        merge_quality([single, other])
