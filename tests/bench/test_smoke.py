"""Smoke runs of both benchmarks with the tiny test model and the real llama-server, so the benchmark code cannot rot.

They check what the benchmarks record, not how fast anything is (speed belongs to the benchmark runs themselves)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bench.quality import suites as quality
from bench.quality.metrics import line_cut_candidates
from bench.quality.suites_data import DEFAULT_DATA_DIR
from bench.replay import typing_replay

pytestmark = pytest.mark.llama_server


@pytest.fixture(scope="module")
def quality_report(llama_server_binary: str, tiny_model: Path, tmp_path_factory) -> dict:
    if not (DEFAULT_DATA_DIR / "human-eval-infilling").is_dir():  # the data sets live in the project's shared/ folder
        pytest.skip(f"benchmark data not found in {DEFAULT_DATA_DIR}")
    output = tmp_path_factory.mktemp("quality") / "quality.json"
    args = quality.build_parser().parse_args(
        ["--smoke", "--model", str(tiny_model), "--binary", llama_server_binary, "--max-tokens", "24",
         "--output", str(output), "--quiet"])
    report = asyncio.run(quality.run(args))
    quality.write_report(report, output)
    return json.loads(output.read_text())


def test_quality_smoke_records_every_task_in_three_variants(quality_report: dict):
    tasks = quality_report["tasks"]
    groups = {"humaneval-single", "humaneval-multi", "santacoder/python", "santacoder/java",
              "santacoder/javascript"}
    assert set(quality_report["summary"]) == groups
    assert len(tasks) == quality.SMOKE_LIMIT * len(groups)
    for task in tasks:
        for variant in ("raw", "ours"):
            generation = task[variant]
            assert generation["stop_reason"] in ("stop_word", "token_limit", "end_of_stream")
            assert generation["latency_ms"] > 0
            # The backend counts tokens from every streamed event, so a stream closed at a stop word (before
            # llama-server's last event) still reports them; the benchmark re-tokenizes only when it does not.
            if generation["stop_reason"] != "stop_word":
                assert generation["generated_tokens_source"] == "timings"
                assert 0 < generation["generated_tokens"] <= 24
                assert generation["prompt_tokens"] > 0
            elif generation["model_text"]:
                assert generation["generated_tokens_source"] in ("timings", "tokenize")
                assert 0 < generation["generated_tokens"] <= 24
        # Same prompt, greedy decoding: our stop rules only cut what the model says without them.
        assert task["raw"]["model_text"].startswith(task["ours"]["model_text"])
        assert task["raw"]["stop_reason"] != "stop_word"
        assert set(task["scores"]) == {"raw", "ours", "oracle"}
        scores = task["scores"]
        assert scores["oracle"]["edit_similarity"] >= scores["raw"]["edit_similarity"]
        if task["suite"].startswith("humaneval"):
            assert scores["oracle"]["passed"] >= scores["raw"]["passed"]
            if scores["oracle"]["passed"]:
                assert task["oracle_text"] in line_cut_candidates(task["raw"]["text"])


def test_quality_smoke_summary_and_table(quality_report: dict):
    summary = quality_report["summary"]
    assert summary["humaneval-single"]["metric"] == "pass@1"
    assert summary["santacoder/java"]["metric"] == "exact_match"
    for row in summary.values():
        assert row["oracle"] >= row["raw"]
        assert row["tasks"] == quality.SMOKE_LIMIT
    table = quality.format_table(summary)
    assert table.count("\n") == len(summary) + 1
    assert quality_report["config"]["temperature"] == 0.0


async def test_typing_replay_smoke_answers_every_request(llama_server_binary: str, tiny_model: Path,
                                                         tmp_path: Path):
    source = tmp_path / "sample.py"
    source.write_text("def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n")
    args = typing_replay.build_parser().parse_args(
        [str(source), "--model", str(tiny_model), "--binary", llama_server_binary, "--cps", "40",
         "--line-pause", "0.1", "--max-keystrokes", "15", "--start-fraction", "0.5", "--quiet"])
    report = await typing_replay.run(args)
    region = typing_replay.choose_region(source.read_text(), 0.5, 15)
    keystrokes = len(typing_replay.plan_keystrokes(source.read_text()[region.start:region.end]))
    assert keystrokes == len("return 2 * (w + h)")
    for variant in ("ours", "naive"):
        summary = report["summary"][variant]
        assert summary["keystrokes"] == keystrokes
        assert summary["requests"] == keystrokes
        assert summary["answered_share"] == 100.0
        assert summary["errors"] == 0
        assert summary["model_calls_per_100_keystrokes"] > 0
        assert summary["prefilled_tokens_total"] > 0
        assert summary["prefilled_tokens_source"] == "llama-server /metrics"
    assert report["variants"]["naive"]["settings"]["typing_through_max"] == 0
    assert set(report["ratios"]) >= {"prefilled_tokens_per_call", "latency_ms_median"}
    table = typing_replay.format_table(report["summary"], report["ratios"])
    assert "requests answered (%) | 100.0 | 100.0" in table


async def test_typing_replay_accepting_user_smoke(llama_server_binary: str, tiny_model: Path, tmp_path: Path):
    source = tmp_path / "sample.py"
    source.write_text("def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n")
    args = typing_replay.build_parser().parse_args(
        [str(source), "--model", str(tiny_model), "--binary", llama_server_binary, "--cps", "40",
         "--line-pause", "0.1", "--max-keystrokes", "15", "--start-fraction", "0.5", "--quiet",
         "--user", "accepting", "--variant", "ours"])
    report = await typing_replay.run(args)
    summary = report["summary"]["ours"]
    # The random-weight model is never right, so the user types everything and every keystroke asks.
    assert summary["region_chars"] == len("return 2 * (w + h)")
    assert summary["typed_keystrokes"] + summary["accepts"] == summary["actions"]
    assert summary["answered_share"] == 100.0 and summary["errors"] == 0
    assert summary["prefetch"]["prefetch_stale_running"] == 0
    table = typing_replay.format_table(report["summary"], report["ratios"])
    assert "keystrokes saved" in table
