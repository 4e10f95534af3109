"""A smoke run of bench/latency/keystroke_cost.py (two small files, a few keystrokes) so the benchmark code cannot
rot.

It checks what the benchmark records, not how fast anything is. No llama-server: the model is the benchmark's own
loopback /infill."""

from __future__ import annotations

import argparse
import json

from bench.common import lsp_support
from bench.latency import keystroke_cost


async def test_keystroke_cost_smoke_records_every_size(monkeypatch, tmp_path):
    monkeypatch.setattr(lsp_support, "RESULTS", tmp_path)
    text, line = keystroke_cost.document(3000)
    assert text.split("\n")[line] == keystroke_cost.LINE and len(text) >= 3000
    for variant in keystroke_cost.MINIFIED_UNITS:
        text, column = keystroke_cost.minified(20000, variant)
        head = text.encode("utf-16-le")[:2 * column].decode("utf-16-le")  # the column counts UTF-16 units
        assert text.count("\n") == 1 and head.endswith(keystroke_cost.LINE)
    args = argparse.Namespace(keystrokes=4, sizes=[3000, 30000], minified=20000, minified_variants=["ascii", "astral"],
                              batch_changes=50, memory_documents=2, server_root=None)
    await keystroke_cost.main(args)
    result = json.loads((tmp_path / "keystroke_cost.json").read_text())
    assert set(result["sizes"]) == {"3000", "30000"}
    for row in result["sizes"].values():
        assert row["round_trip_ms"]["n"] == 4 and row["server_handler_ms"]["n"] >= 4
        assert row["server_cpu_ms_per_keystroke"] >= 0 and row["rss_mb"] > 0
    assert set(result["minified"]) == {"ascii", "astral"}
    for row in result["minified"].values():
        assert row["lines"] == 2 and row["round_trip_ms"]["n"] == 4  # one line and its break
    assert result["batch"]["changes"] == 50 and result["batch"]["server_cpu_ms"] >= 0
    assert result["memory"]["documents"] == 2 and result["memory"]["rss_mb"] > 0
    assert result["loopback_requests"]["infill"] >= 2  # the first suggestion of each run came from the model
