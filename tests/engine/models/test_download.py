"""Hugging Face downloads, against a loopback server that mimics the hub's file endpoint (no network).

Every test here goes through the real `huggingface_hub.hf_hub_download` (HEAD for metadata, GET for the body,
`.incomplete` files, resume); only the server is fake."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from engine.config import EngineConfig, ModelConfig
from engine.errors import ModelError
from engine.models import registry as registry_module
from engine.models import resolve_model
from engine.models.download import DownloadSettings, download_model
from engine.models.registry import KnownFile, KnownModel, list_cached, parse_model_id
from engine.prompt import PromptTemplate
from engine.types import StatusEvent

from .fake_hub import FakeHub, FakeHubServer

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with FakeHubServer() as hub:
        yield hub


@pytest.fixture
def no_hf_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub retries transient errors itself with real sleeps; skip the waiting, keep the retrying."""
    monkeypatch.setattr(time, "sleep", lambda seconds: None)


def _settings(hub: FakeHub, **kw) -> DownloadSettings:
    return DownloadSettings(endpoint=hub.url, **kw)


def _id(text: str):
    return parse_model_id(text, "TabbyML")


def test_download_one_file_via_mirror_setting(hub: FakeHub, tiny_model: Path, tmp_path: Path) -> None:
    body = tiny_model.read_bytes()
    hub.add("acme/coder-GGUF", "coder.Q8_0.gguf", body)
    path = download_model(_id("acme/coder-GGUF:coder.Q8_0.gguf"), tmp_path, settings=_settings(hub))
    assert path == tmp_path / "acme" / "coder-GGUF" / "coder.Q8_0.gguf"
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(body).digest()
    assert [r[0] for r in hub.requests] == ["HEAD", "GET"]
    # Cached now: a second call does not touch the network.
    download_model(_id("acme/coder-GGUF:coder.Q8_0.gguf"), tmp_path, settings=_settings(hub))
    assert len(hub.requests) == 2


def test_download_file_in_a_subfolder(hub: FakeHub, tmp_path: Path) -> None:
    hub.add("acme/coder", "ggml/q8.gguf", b"GGUF-sub")
    path = download_model(_id("acme/coder:ggml/q8.gguf"), tmp_path, settings=_settings(hub))
    assert path == tmp_path / "acme" / "coder" / "ggml" / "q8.gguf"
    assert path.read_bytes() == b"GGUF-sub"


def test_progress_is_reported(hub: FakeHub, tmp_path: Path) -> None:
    body = b"GGUF" + bytes(300_000)
    hub.add("acme/coder", "big.gguf", body)
    seen: list[tuple[int, int | None]] = []
    download_model(_id("acme/coder:big.gguf"), tmp_path, settings=_settings(hub),
                   progress=lambda done, total: seen.append((done, total)))
    assert seen, "no progress reported"
    assert seen[-1] == (len(body), len(body))
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))


def test_hf_endpoint_environment_variable_is_respected(hub: FakeHub, tmp_path: Path) -> None:
    """HF_ENDPOINT is read by huggingface_hub at import, so this runs in a fresh interpreter."""
    hub.add("acme/env", "env.gguf", b"GGUF-from-env")
    code = ("import sys; from pathlib import Path; from engine.models.download import download_model; "
            "from engine.models.registry import parse_model_id; "
            "print(download_model(parse_model_id('acme/env:env.gguf', 'x'), Path(sys.argv[1])))")
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "acme" / "env" / "env.gguf").read_bytes() == b"GGUF-from-env"
    assert ("GET", "/acme/env/resolve/main/env.gguf") in hub.requests


def test_sha256_mismatch_from_hub_metadata_deletes_the_file(hub: FakeHub, tmp_path: Path) -> None:
    hub.add("acme/coder", "bad.gguf", b"GGUF-corrupted-in-transit", etag="a" * 64)
    with pytest.raises(ModelError, match=r"bad\.gguf from acme/coder: sha256 mismatch \(expected a{64}"):
        download_model(_id("acme/coder:bad.gguf"), tmp_path, settings=_settings(hub))
    assert not (tmp_path / "acme" / "coder" / "bad.gguf").exists()
    assert list_cached(tmp_path) == []


def test_not_found_is_not_retried(hub: FakeHub, tmp_path: Path) -> None:
    sleeps: list[float] = []
    with pytest.raises(ModelError, match=r"file missing\.gguf not found in repository acme/coder on http://127"):
        download_model(_id("acme/coder:missing.gguf"), tmp_path, settings=_settings(hub), sleep=sleeps.append)
    assert sleeps == []


def test_transient_failures_are_retried_with_backoff(hub: FakeHub, tmp_path: Path) -> None:
    hub.add("acme/coder", "flaky.gguf", b"GGUF-flaky")
    hub.fail_next = [507, 507]  # a server error huggingface_hub itself does not retry
    sleeps: list[float] = []
    path = download_model(_id("acme/coder:flaky.gguf"), tmp_path, settings=_settings(hub, backoff=0.5),
                          sleep=sleeps.append)
    assert path.read_bytes() == b"GGUF-flaky"
    assert sleeps == [0.5, 1.0]


def test_gives_up_after_the_last_attempt(hub: FakeHub, tmp_path: Path) -> None:
    hub.add("acme/coder", "down.gguf", b"GGUF")
    hub.fail_next = [507] * 10
    sleeps: list[float] = []
    with pytest.raises(ModelError, match=r"cannot reach http://127.*down\.gguf.*\(after 3 attempts\)"):
        download_model(_id("acme/coder:down.gguf"), tmp_path, settings=_settings(hub, attempts=3),
                       sleep=sleeps.append)
    assert sleeps == [1.0, 2.0]
    assert not (tmp_path / "acme" / "coder" / "down.gguf").exists()


def test_cut_connection_never_leaves_a_usable_partial_file(hub: FakeHub, tmp_path: Path, no_hf_sleep) -> None:
    hub.add("acme/coder", "cut.gguf", b"GGUF" + bytes(50_000))
    hub.cut_after = 10
    with pytest.raises(ModelError, match=r"downloading cut\.gguf from acme/coder"):
        download_model(_id("acme/coder:cut.gguf"), tmp_path, settings=_settings(hub, attempts=1))
    assert not (tmp_path / "acme" / "coder" / "cut.gguf").exists()
    assert list_cached(tmp_path) == []
    cfg = EngineConfig(model_cache_dir=str(tmp_path))
    with pytest.raises(ModelError, match="is not downloaded yet"):
        resolve_model(ModelConfig(model="acme/coder:cut.gguf"), cfg)
    # The next attempt resumes and completes.
    hub.cut_after = None
    path = download_model(_id("acme/coder:cut.gguf"), tmp_path, settings=_settings(hub))
    assert path.stat().st_size == 50_004


# --- known models: downloaded as Tabby-style directories --------------------------------------------------------------

@pytest.fixture
def known(monkeypatch: pytest.MonkeyPatch, hub: FakeHub, tiny_model: Path) -> KnownModel:
    """A known model split into two partitions, served by the fake hub."""
    # Only the first partition is inspected (its header); the second just has to arrive intact.
    parts = {"m-00001-of-00002.gguf": tiny_model.read_bytes(), "m-00002-of-00002.gguf": b"GGUF-second-part"}
    for name, body in parts.items():
        hub.add("acme/m-GGUF", name, body)
    model = KnownModel("TabbyML/Tiny", "acme/m-GGUF",
                       tuple(KnownFile(name, hashlib.sha256(body).hexdigest()) for name, body in parts.items()),
                       prompt_template="starcoder")
    registry = {**registry_module.load_registry(), model.id: model}
    monkeypatch.setattr(registry_module, "load_registry", lambda: registry)
    return model


def test_known_model_becomes_a_tabby_directory(hub: FakeHub, known: KnownModel, tmp_path: Path) -> None:
    root = download_model(_id("Tiny"), tmp_path, settings=_settings(hub))
    assert root == tmp_path / "TabbyML" / "Tiny"
    assert sorted(p.name for p in (root / "ggml").iterdir()) == ["model-00001-of-00002.gguf",
                                                                 "model-00002-of-00002.gguf"]
    meta = json.loads((root / "tabby.json").read_text())
    assert meta["prompt_template"] == known.prompt_template
    assert not (root / ".download").exists()
    assert [(m.id, m.kind) for m in list_cached(tmp_path)] == [("TabbyML/Tiny", "directory")]

    resolved = resolve_model(ModelConfig(model="Tiny"), EngineConfig(model_cache_dir=str(tmp_path)))
    assert resolved.path == root / "ggml" / "model-00001-of-00002.gguf"
    assert resolved.prompt_template == known.prompt_template
    # the family by name: the template keeps the family's end sentinels as stop words
    assert "<|endoftext|>" in PromptTemplate.from_setting(resolved.prompt_template).stop_words
    assert resolved.source == "huggingface:TabbyML/Tiny"


def test_known_model_sha256_mismatch(hub: FakeHub, known: KnownModel, tmp_path: Path) -> None:
    hub.add("acme/m-GGUF", "m-00002-of-00002.gguf", b"GGUF-but-not-the-published-file")
    with pytest.raises(ModelError, match=r"m-00002-of-00002\.gguf from acme/m-GGUF: sha256 mismatch"):
        download_model(_id("Tiny"), tmp_path, settings=_settings(hub))
    root = tmp_path / "TabbyML" / "Tiny"
    assert not (root / "tabby.json").exists()
    assert not (root / "ggml" / "model-00002-of-00002.gguf").exists()
    assert not (root / ".download" / "m-00002-of-00002.gguf").exists()
    assert [m.kind for m in list_cached(tmp_path)] != ["directory"]


def test_unknown_id_without_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"unknown model id acme/nothing: .*acme/nothing:FILE\.gguf"):
        download_model(_id("acme/nothing"), tmp_path)


# --- resolve_model: downloads only when asked -------------------------------------------------------------------------

def test_missing_model_is_an_error_naming_the_command(hub: FakeHub, tmp_path: Path) -> None:
    hub.add("acme/coder", "c.gguf", b"GGUF")
    cfg = EngineConfig(model_cache_dir=str(tmp_path), hf_endpoint=hub.url)
    with pytest.raises(ModelError, match=r"acme/coder:c\.gguf is not downloaded yet.*infill models download "
                                         r"acme/coder:c\.gguf"):
        resolve_model(ModelConfig(model="acme/coder:c.gguf"), cfg)
    assert hub.requests == []  # nothing downloads behind the user's back


def test_allow_download_opt_in_downloads_with_status(hub: FakeHub, tiny_model: Path, tmp_path: Path) -> None:
    hub.add("acme/coder", "tiny.gguf", tiny_model.read_bytes())
    cfg = EngineConfig(model_cache_dir=str(tmp_path), hf_endpoint=hub.url, allow_download=True)
    events: list[StatusEvent] = []
    resolved = resolve_model(ModelConfig(model="acme/coder:tiny.gguf"), cfg, on_status=events.append)
    assert resolved.path == tmp_path / "acme" / "coder" / "tiny.gguf"
    assert resolved.has_fim and not resolved.prefix_only
    assert events[0].message.startswith("Downloading acme/coder:tiny.gguf")
    assert events[-1].percent == 100


def test_cached_model_resolves_offline(hub: FakeHub, tiny_model: Path, tmp_path: Path) -> None:
    hub.add("acme/coder", "tiny.gguf", tiny_model.read_bytes())
    download_model(_id("acme/coder:tiny.gguf"), tmp_path, settings=_settings(hub))
    cfg = EngineConfig(model_cache_dir=str(tmp_path), hf_endpoint="http://127.0.0.1:9")  # nothing listens there
    resolved = resolve_model(ModelConfig(model="acme/coder:tiny.gguf"), cfg)
    assert resolved.path.is_file() and resolved.source == "huggingface:acme/coder:tiny.gguf"


def test_unreachable_hub_and_nothing_cached_says_so(tmp_path: Path, no_hf_sleep) -> None:
    sleeps: list[float] = []
    with pytest.raises(ModelError, match=r"cannot reach http://127\.0\.0\.1:9 to download x\.gguf from acme/coder"):
        download_model(_id("acme/coder:x.gguf"), tmp_path,
                       settings=DownloadSettings(endpoint="http://127.0.0.1:9"), sleep=sleeps.append)
    # huggingface_hub already retried the refused connection with backoff; Infill adds no second round.
    assert sleeps == []


def test_split_gguf_id_downloads_every_part(hub: FakeHub, tiny_model: Path, tmp_path: Path) -> None:
    hub.add("acme/big", "big-q8-00001-of-00002.gguf", tiny_model.read_bytes())
    hub.add("acme/big", "big-q8-00002-of-00002.gguf", b"GGUF-part-two")
    model_id = _id("acme/big:big-q8-00001-of-00002.gguf")
    assert model_id.files() == ("big-q8-00001-of-00002.gguf", "big-q8-00002-of-00002.gguf")
    cfg = EngineConfig(model_cache_dir=str(tmp_path), hf_endpoint=hub.url, allow_download=True)
    resolved = resolve_model(ModelConfig(model=str(model_id)), cfg)
    assert resolved.path == tmp_path / "acme" / "big" / "big-q8-00001-of-00002.gguf"
    assert (tmp_path / "acme" / "big" / "big-q8-00002-of-00002.gguf").read_bytes() == b"GGUF-part-two"
    # A missing second part means "not downloaded", not "use the first part alone".
    (tmp_path / "acme" / "big" / "big-q8-00002-of-00002.gguf").unlink()
    with pytest.raises(ModelError, match="is not downloaded yet"):
        resolve_model(ModelConfig(model=str(model_id)), EngineConfig(model_cache_dir=str(tmp_path)))


def test_file_in_the_users_own_hugging_face_cache_is_used_offline(tiny_model: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A pre-populated Hugging Face cache (as `hf download` leaves it); no server runs at all in this test."""
    from huggingface_hub import constants

    hf_cache = tmp_path / "hf-hub"
    commit = "a" * 40
    repo = hf_cache / "models--acme--coder"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    shutil.copy(tiny_model, repo / "snapshots" / commit / "tiny.gguf")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hf_cache))

    cfg = EngineConfig(model_cache_dir=str(tmp_path / "infill-cache"), hf_endpoint="http://127.0.0.1:9")
    resolved = resolve_model(ModelConfig(model="acme/coder:tiny.gguf"), cfg)
    assert resolved.path == repo / "snapshots" / commit / "tiny.gguf"
    assert resolved.has_fim
    with pytest.raises(ModelError, match="acme/coder:other.gguf is not downloaded yet"):
        resolve_model(ModelConfig(model="acme/coder:other.gguf"), cfg)
