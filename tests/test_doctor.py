"""`infill doctor`: the real llama-server with the tiny model when installed; failures without it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from lsp_server.cli import main


@pytest.fixture
def isolated(tmp_path: Path) -> list[str]:
    """Arguments that keep the doctor away from the user's own config file and model cache."""
    config = tmp_path / "config.toml"
    config.write_text("")
    return ["--config", str(config), "--cache-dir", str(tmp_path / "cache")]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_doctor_passes_with_the_tiny_model(llama_server_binary: str, tiny_model: Path, isolated, capsys) -> None:
    code = main(["doctor", "--model", str(tiny_model), "--binary", llama_server_binary, *isolated])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Result: all checks passed" in out
    assert re.search(r"binary\s+ok\s+.*llama-server \(version .+\)", out)
    assert re.search(r"model\s+ok\s+.*tiny-fim\.gguf \(file; llama, .*FIM tokens\)", out)
    assert re.search(r"completion\s+ok\s+/infill: ", out)
    assert re.search(r"generation\s+32 tokens, [\d.]+ tokens/s", out)
    pid = int(re.search(r"\(pid (\d+)\)", out).group(1))
    assert not _pid_alive(pid), "doctor left its llama-server running"


def test_doctor_names_the_llama_server_variables_it_leaves_out_and_still_passes(
        llama_server_binary: str, tiny_model: Path, isolated, capsys, monkeypatch) -> None:
    """A shell set up for another llama-server (its API key, a route prefix) must not break Infill's own."""
    monkeypatch.setenv("LLAMA_API_KEY", "a-secret-of-the-user")
    monkeypatch.setenv("LLAMA_ARG_API_PREFIX", "/elsewhere")
    code = main(["doctor", "--model", str(tiny_model), "--binary", llama_server_binary, *isolated])
    out = capsys.readouterr().out
    assert code == 0, out
    assert re.search(r"environment\s+ok\s+left out of llama-server's environment: LLAMA_API_KEY, LLAMA_ARG_API_PREFIX",
                     out)
    assert "a-secret-of-the-user" not in out


def test_doctor_json_reports_server_timings(llama_server_binary: str, tiny_model: Path, isolated, capsys) -> None:
    code = main(["doctor", "--json", "--n-predict", "7", "--model", str(tiny_model),
                 "--binary", llama_server_binary, *isolated])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["ok"]
    assert [s["name"] for s in report["steps"]] == ["config", "speculation", "binary", "model", "model server",
                                                      "server", "completion"]
    timings = report["timings"]
    # The tiny model never emits EOS, so llama-server generates exactly n_predict tokens.
    assert timings["generated_tokens"] == 7
    assert timings["prompt_tokens"] > 0
    assert timings["load_s"] > 0 and timings["prompt_tok_per_s"] > 0 and timings["generated_tok_per_s"] > 0
    assert timings["first_token_s"] is not None and timings["first_token_s"] <= timings["completion_s"]


def test_missing_binary_fails_with_install_advice(tiny_model: Path, isolated, capsys) -> None:
    code = main(["doctor", "--model", str(tiny_model), "--binary", "/nonexistent/llama-server", *isolated])
    out = capsys.readouterr().out
    assert code == 1
    assert re.search(r"binary\s+FAILED\s+.*completion\.local\.binary = '/nonexistent/llama-server'", out)
    assert "Advice" in out and "scripts/setup.sh" in out
    assert "Result: FAILED" in out
    assert not re.search(r"^\s+(model|server|completion)\s", out, re.M)  # later steps did not run


def test_missing_model_file(llama_server_binary: str, tmp_path: Path, isolated, capsys) -> None:
    code = main(["doctor", "--model", str(tmp_path / "gone.gguf"), "--binary", llama_server_binary, *isolated])
    out = capsys.readouterr().out
    assert code == 1
    assert re.search(r"model\s+FAILED\s+model file not found: .*gone\.gguf", out)
    assert "infill models download ID" in out


def test_truncated_model_is_caught_before_starting_the_server(llama_server_binary: str, tiny_model: Path,
                                                              tmp_path: Path, isolated, capsys) -> None:
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_model.read_bytes()[:-50_000])
    code = main(["doctor", "--model", str(cut), "--binary", llama_server_binary, *isolated])
    out = capsys.readouterr().out
    assert code == 1
    assert "truncated GGUF model file" in out
    assert not re.search(r"^\s+server\s", out, re.M)


def test_model_id_not_downloaded(llama_server_binary: str, isolated, capsys) -> None:
    code = main(["doctor", "--model", "acme/coder:c.gguf", "--binary", llama_server_binary, *isolated])
    out = capsys.readouterr().out
    assert code == 1
    assert "acme/coder:c.gguf is not downloaded yet" in out
    assert "infill models download acme/coder:c.gguf" in out


def test_bad_config_file_names_the_key(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[completion]\nkindd = 'local'\n")
    code = main(["doctor", "--config", str(config)])
    out = capsys.readouterr().out
    assert code == 1
    assert re.search(r"config\s+FAILED\s+completion\.kindd: unknown setting", out)


def test_doctor_says_whether_a_self_hosted_endpoint_gets_prefetch(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[completion]\nkind = "openai/completion"\nmodel = "qwen"\n'
                      'api_endpoint = "http://192.168.1.20:8000/v1"\n')
    main(["doctor", "--config", str(config), "--binary", "/nonexistent/llama-server"])
    out = capsys.readouterr().out
    assert re.search(r"speculation\s+ok\s+prefetch on: the openai/completion endpoint is self-hosted "
                     r"\(private network address 192\.168\.1\.20\) \(self-hosted\)", out), out
    config.write_text('[completion]\nkind = "openai/completion"\nmodel = "gpt"\n'
                      'api_endpoint = "https://api.openai.com/v1"\n')
    main(["doctor", "--config", str(config), "--binary", "/nonexistent/llama-server"])
    out = capsys.readouterr().out
    assert re.search(r"speculation\s+ok\s+prefetch off: .*counts as a hosted API .*completion\.self_hosted = true", out)
