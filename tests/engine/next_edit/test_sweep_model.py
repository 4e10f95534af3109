"""The real NES model entry, offline: `sweepai/sweep-next-edit-1.5B` is a known model (Sweep's own GGUF file, its
published sha256), it downloads only through `infill models download` (here from a loopback fake hub: there is no
network to Hugging Face in the tests), the download is verified, and the resolved model gets the sweep form."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterator

import pytest

from engine.config import EngineConfig, ModelConfig
from engine.errors import ModelError
from engine.models import registry as registry_module
from engine.models import resolve_model
from engine.models.registry import KnownFile, KnownModel, load_registry
from engine.next_edit.formats import choose_format, is_next_edit_model
from lsp_server.commands.models import download
from tests.engine.models.fake_hub import FakeHub, FakeHubServer

SWEEP = "sweepai/sweep-next-edit-1.5B"
FILE = "sweep-next-edit-1.5b.q8_0.v2.gguf"
SHA256 = "1321ea5e5d7529e60f9770c6a0b3a965f89542d16cf4ae51bab267f6a88150da"


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with FakeHubServer() as hub:
        yield hub


def test_the_registry_names_sweeps_own_gguf():
    known = load_registry()[SWEEP]
    assert known.repo == SWEEP
    assert known.files == (KnownFile(FILE, SHA256),)
    assert known.prompt_template == "qwen2.5-coder"  # it keeps its base model's FIM tokens: it completes too
    assert is_next_edit_model(SWEEP)


def test_nothing_downloads_unless_asked(hub: FakeHub, tmp_path: Path):
    cfg = EngineConfig(model_cache_dir=str(tmp_path), hf_endpoint=hub.url)
    with pytest.raises(ModelError, match=f"infill models download {SWEEP}"):
        resolve_model(ModelConfig(model=SWEEP), cfg)
    assert hub.requests == []


def test_download_verifies_the_published_sha256(hub: FakeHub, tiny_model: Path, tmp_path: Path):
    """The fake hub serves another file under Sweep's name: the published hash refuses it."""
    hub.add(SWEEP, FILE, tiny_model.read_bytes())
    engine = EngineConfig(model_cache_dir=str(tmp_path))
    with pytest.raises(ModelError, match=rf"{FILE} from {SWEEP}: sha256 mismatch \(expected {SHA256}"):
        download(engine, SWEEP, mirror=hub.url)
    assert ("GET", f"/{SWEEP}/resolve/main/{FILE}") in hub.requests
    assert not (tmp_path / "sweepai" / "sweep-next-edit-1.5B" / "tabby.json").exists()


def test_downloaded_model_resolves_and_gets_the_sweep_form(hub: FakeHub, tiny_model: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch):
    body = tiny_model.read_bytes()
    hub.add(SWEEP, FILE, body)
    real = load_registry()[SWEEP]
    stand_in = KnownModel(real.id, real.repo, (KnownFile(FILE, hashlib.sha256(body).hexdigest()),),
                          real.prompt_template, real.chat_template)
    registry = {**load_registry(), SWEEP: stand_in}  # the only change: the hash of the stand-in file
    monkeypatch.setattr(registry_module, "load_registry", lambda: registry)
    engine = EngineConfig(model_cache_dir=str(tmp_path))
    root = download(engine, SWEEP, mirror=hub.url)
    assert root == tmp_path / "sweepai" / "sweep-next-edit-1.5B"
    assert json.loads((root / "tabby.json").read_text())["prompt_template"] == "qwen2.5-coder"
    resolved = resolve_model(ModelConfig(model=SWEEP), engine)
    assert resolved.path == root / "ggml" / "model.gguf"
    assert choose_format(SWEEP, resolved.info.metadata if resolved.info else None, "local") == "sweep"
    assert choose_format(str(root), None, "local") == "sweep"  # the model set as a directory path


def test_the_cli_lists_it_and_downloads_it_only_when_told(hub: FakeHub, tiny_model: Path, tmp_path: Path, capsys):
    from lsp_server.cli import main

    cache = tmp_path / "cache"
    assert main(["models", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    [line] = [line.split() for line in out.splitlines() if line.split()[:1] == [SWEEP]]
    assert line == [SWEEP, "completion", "(FIM),", "next", "edits"]
    assert hub.requests == [] and not (cache / "sweepai").exists()  # listing downloads nothing
    hub.add(SWEEP, FILE, tiny_model.read_bytes())  # not Sweep's file: the published sha256 refuses it
    code = main(["models", "--cache-dir", str(cache), "download", SWEEP, "--mirror", hub.url])
    err = capsys.readouterr().err
    assert code == 1 and "sha256 mismatch" in err and FILE in err
