"""The soak benchmark's short mode (bench/replay/soak.py): half a minute of the accepting user with the tiny test
model, workspace context on and several files open, sampled every few seconds. It checks that the soak runs and
reports what it must; the flatness targets are the long run's (a half-minute run on a busy machine is not flat)."""

from __future__ import annotations

from pathlib import Path

from bench.replay import soak


async def test_soak_short_mode_samples_the_server_and_answers_every_request(llama_server_binary: str,
                                                                            tiny_model: Path, tmp_path: Path):
    sources = {"area.py": "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n",
               "shapes.py": "from area import area\n\n\ndef square(side):\n    return area(side, side)\n"}
    files = []
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
        files.append(str(tmp_path / name))
    args = soak.build_parser().parse_args(
        [*files, "--minutes", "0.5", "--sample-seconds", "5", "--cps", "40", "--max-keystrokes", "15",
         "--next-edit-every", "2", "--model", str(tiny_model), "--binary", llama_server_binary, "--quiet",
         "--output", str(tmp_path / "soak.json")])
    report = await soak.Soak(args).run()
    samples = report["samples"]
    assert len(samples) >= 3  # the start, a few periods, the end
    for sample in samples:
        assert sample["rss_mb"] > 0 and sample["fds"] > 0 and sample["threads"] > 0
        assert sample["asyncio_tasks"] and sample["asyncio_tasks"] > 0  # counted by the server (infill/stats)
        assert sample["documents"] is not None and sample["documents"] >= len(files)  # the open tabs
    assert samples[-1]["llama_rss_mb"]  # llama-server runs as the server's child and is measured
    summary = report["summary"]
    assert summary["requests"] > 0 and summary["answered_share"] == 100.0 and summary["errors"] == 0
    checks = report["checks"]
    assert checks["every_request_answered"] and checks["no_child_left"], checks
    assert report["server_exit_code"] == 0
    if report["config"]["next_edit_method"] is not None:  # the server advertises next edits: they were asked
        assert report["next_edits"]["sent"] > 0 and report["next_edits"]["answered"] == report["next_edits"]["sent"]
    else:
        assert report["next_edits"]["sent"] == 0
    table = soak.format_table(report)
    assert "| min | actions |" in table and "every request answered: True" in table


def test_the_p95_check_compares_windows_of_suggestions_not_single_minutes():
    """A steady run whose minutes' p95 jump about (few suggestions a minute) is flat over five-minute windows; a run
    that slows down is not."""
    def sample(minute: float, p95: float) -> soak.Sample:
        return soak.Sample(minute=minute, actions=0, requests=0, answered=0, rss_mb=80.0, llama_rss_mb=None, fds=8,
                           threads=7, asyncio_tasks=2, documents=6, cache_entries=0, suggestions=0, median_ms=None,
                           p95_ms=p95, next_edits=0, next_edits_answered=0, traced_mb=None, malloc_in_use_mb=None)

    samples = [sample(m, 600.0 if m == 5 else 400.0) for m in range(31)]  # minute 5's own p95 is an outlier
    run = soak.AcceptRun(variant="ours", settings={})
    edits = soak.NextEdits(None)
    steady = [(m / 10, 100.0 + (m % 20) * 20) for m in range(300)]  # the same mix of latencies all along
    assert soak.checks(samples, run, edits, [], 5.0)["p95_flat"] is False  # minute 5 against minute 30
    result = soak.checks(samples, run, edits, [], 5.0, steady)
    assert result["p95_flat"] is True and result["p95_window_minutes"] == 5.0
    slower = [(minute, ms * (2 if minute >= 25 else 1)) for minute, ms in steady]
    assert soak.checks(samples, run, edits, [], 5.0, slower)["p95_flat"] is False
