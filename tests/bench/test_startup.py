"""Smoke test of bench/latency/startup.py: both servers answer `initialize`, the JSON and the table are written."""

from __future__ import annotations

import json
import os
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
        if sys.platform == "linux":  # CPU time from /proc/<pid>/task/*/schedstat
            assert 0 < row["initialize_cpu_ms"]["median"] and len(result["cpu_raw_ms"][name]) == 2
    assert result["servers"]["bare pygls"]["ratio_to_bare"] == 1.0
    assert "| infill |" in capsys.readouterr().out


def test_the_servers_write_their_bytecode_even_when_the_shell_says_not_to(monkeypatch, tmp_path):
    """The warm-up spawn compiles each checkout once, outside the measurement: PYTHONDONTWRITEBYTECODE in the
    benchmark's own environment must not reach the servers (Infill would compile its modules at every spawn)."""
    import subprocess

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    (tmp_path / "probe.py").write_text("X = 1\n")
    env = startup.server_env(tmp_path, tmp_path)
    subprocess.run([sys.executable, "-c", "import probe"], env=env, cwd=tmp_path, check=True)
    assert list((tmp_path / "__pycache__").glob("probe.*.pyc"))


def test_infill_answers_initialize_before_building_its_parts():
    """The deferred start: building the server (what happens before `initialize` is answered) imports neither the
    completion pipeline, the workspace indexes, nor the memory probe's ctypes and tracemalloc; `load()` builds the
    parts."""
    import subprocess

    code = ("import sys; from lsp_server.server import build_server; s = build_server(); "
            "print(s._loaded, *(m in sys.modules for m in ('lsp_server.pipeline', 'lsp_server.workspace.provider', "
            "'ctypes', 'tracemalloc'))); s.load(); print(s._loaded, 'lsp_server.workspace.provider' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "INFILL_TRACEMALLOC"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env).stdout.split("\n")
    assert out[0] == "False False False False False"
    assert out[1] == "True True"
