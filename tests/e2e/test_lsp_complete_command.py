"""`infill complete FILE:LINE:COL` runs the LSP pipeline once: progress on stderr, the completion on stdout."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .lsp_support import ROOT, server_env

pytestmark = pytest.mark.llama_server


def run_complete(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lsp_server", "complete", *args], capture_output=True, text=True,
                          timeout=120, env=server_env(), cwd=ROOT)


def test_complete_prints_the_suggestion(llama_server: str):
    result = run_complete("examples/fibonacci.py:5:5", "--kind", "llama.cpp/infill", "--endpoint", llama_server,
                          "--max-tokens", "8")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()  # the completion, and nothing else, on stdout
    assert "infill:" not in result.stdout
    assert "completing examples/fibonacci.py:5:5 (python" in result.stderr
    assert "ready" in result.stderr


def test_complete_with_config_file_is_deterministic(llama_server: str, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("temperature = 0.0\n[engine.completion]\nkind = \"llama.cpp/infill\"\n"
                      f"api_endpoint = \"{llama_server}\"\n")
    args = ("examples/fibonacci.py:5:5", "--config", str(config), "--max-tokens", "8", "--quiet")
    first, second = run_complete(*args), run_complete(*args)
    assert first.returncode == 0 and first.stdout == second.stdout and first.stderr == ""


@pytest.mark.parametrize("args,needle", [
    (("examples/fibonacci.py:99:1",), "line 99 does not exist"),
    (("examples/missing.py:1:1",), "no such file"),
    (("examples/fibonacci.py",), "FILE:LINE:COL"),
    (("examples/fibonacci.py:5:5", "--kind", "no-such-kind"), "completion.kind"),
])
def test_complete_errors_name_the_problem(args, needle):
    result = run_complete(*args)
    assert result.returncode == 2 and needle in result.stderr, result.stderr
