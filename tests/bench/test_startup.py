"""Smoke test of bench/latency/startup.py: both servers answer `initialize`, the JSON and the table are written."""

from __future__ import annotations

import json
import sys

from bench.latency import startup


def test_startup_benchmark_measures_both_servers(tmp_path, capsys):
    output = tmp_path / "startup.json"
    assert startup.main(["--smoke", "--output", str(output), "--python", sys.executable]) == 0
    result = json.loads(output.read_text())
    assert set(result["servers"]) == {"bare pygls", "infill"}
    for name, row in result["servers"].items():
        assert len(result["raw_ms"][name]) == 2
        assert row["initialize_ms"]["median"] > 0
    assert result["servers"]["bare pygls"]["ratio_to_bare"] == 1.0
    assert "| infill |" in capsys.readouterr().out


def test_infill_answers_initialize_before_building_its_parts():
    """The deferred start: building the server (what happens before `initialize` is answered) imports neither the
    completion pipeline nor the workspace indexes; using a part builds it."""
    import subprocess

    code = ("import sys; from lsp_server.server import build_server; s = build_server(); "
            "print(s._loaded, 'lsp_server.pipeline' in sys.modules, 'lsp_server.workspace.provider' in sys.modules); "
            "s.documents; print(s._loaded, 'lsp_server.workspace.provider' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "False False False"
    assert out[1] == "True True"
