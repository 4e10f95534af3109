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
