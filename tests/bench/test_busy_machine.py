"""Smoke test of bench/replay/busy_machine.py: speed and replay cells beside a busy loop (tiny model), and the busy
loop stopped afterwards."""

from __future__ import annotations

import json

import pytest

from bench.replay import busy_machine


def test_the_load_generators_stop():
    with busy_machine.load("busy1") as procs:
        assert len(procs) == 1 and procs[0].poll() is None
    assert procs[0].poll() is not None
    with pytest.raises(ValueError):
        with busy_machine.load("busy3"):
            pass


@pytest.mark.llama_server
def test_busy_machine_smoke(llama_server_binary, tmp_path, capsys):
    output = tmp_path / "busy.json"
    assert busy_machine.main(["--smoke", "--binary", llama_server_binary, "--output", str(output), "--quiet"]) == 0
    report = json.loads(output.read_text())
    assert set(report["speed"]) == {"idle/infill", "idle/t1", "busy1/infill", "busy1/t1"}
    assert all(row["generated_tok_s"] > 0 for row in report["speed"].values())
    assert set(report["replay"]) == {"idle/infill", "busy1/infill"}
    assert all(row["answered_share"] == 100.0 for row in report["replay"].values())
    assert "busy1/infill" in report["ratios"] or report["replay"]["idle/infill"]["latency_ms_p95"] is None
    out = capsys.readouterr().out
    assert "| busy1 | t1 |" in out
