"""`infill models`: listing reads the disk only; `download` fetches through the (fake, loopback) hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.cli import main

from tests.engine.models.fake_hub import FakeHubServer


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text('[completion]\nmodel = "acme/coder:c.gguf"\n')
    return path


def test_list_shows_configured_cached_and_known(config: Path, tmp_path: Path, capsys) -> None:
    cache = tmp_path / "cache"
    (cache / "acme" / "other").mkdir(parents=True)
    (cache / "acme" / "other" / "o.gguf").write_bytes(b"G" * 2_500_000)
    code = main(["models", "--config", str(config), "--cache-dir", str(cache)])
    out = capsys.readouterr().out
    assert code == 0
    assert f"Model cache: {cache}" in out
    assert "completion  acme/coder:c.gguf: NOT DOWNLOADED: run `infill models download acme/coder:c.gguf`" in out
    assert "acme/other:o.gguf" in out and "2.5 MB" in out
    assert "TabbyML/StarCoder-1B" in out and "completion (FIM)" in out
    assert not (cache / "acme" / "coder").exists()  # listing downloads nothing


def test_download_then_list(config: Path, tmp_path: Path, capsys) -> None:
    cache = tmp_path / "cache"
    with FakeHubServer() as hub:
        hub.add("acme/coder", "c.gguf", b"GGUF" + bytes(10_000))
        code = main(["models", "--config", str(config), "--cache-dir", str(cache), "download", "acme/coder:c.gguf",
                     "--mirror", hub.url])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.strip() == str(cache / "acme" / "coder" / "c.gguf")
    assert "Downloading acme/coder:c.gguf" in captured.err
    assert (cache / "acme" / "coder" / "c.gguf").stat().st_size == 10_004

    assert main(["models", "--config", str(config), "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    assert f"acme/coder:c.gguf: downloaded ({cache / 'acme' / 'coder' / 'c.gguf'})" in out


@pytest.mark.parametrize("model_id, message", [
    ("../../etc/x", "invalid model id '../../etc/x'"),
    ("acme/unknown", "unknown model id acme/unknown"),
])
def test_download_rejects_bad_ids(model_id: str, message: str, config: Path, tmp_path: Path, capsys) -> None:
    code = main(["models", "--config", str(config), "--cache-dir", str(tmp_path / "c"), "download", model_id])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("infill models: error: ") and message in err
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").rglob("*.gguf"))
