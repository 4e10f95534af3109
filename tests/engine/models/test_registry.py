"""Model ids, the known-model table and the cache layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ModelError
from engine.models.registry import (ModelId, _parse_registry, is_cached, known_model, list_cached, load_registry,
                                    looks_like_path, model_cache_dir, parse_model_id)
from engine.prompt import PromptTemplate


@pytest.mark.parametrize("text, expected", [
    ("TabbyML/StarCoder-1B", ModelId("TabbyML", "StarCoder-1B")),
    ("StarCoder-1B", ModelId("TabbyML", "StarCoder-1B")),
    ("Qwen2.5-Coder-0.5B", ModelId("TabbyML", "Qwen2.5-Coder-0.5B")),
    ("bartowski/x-GGUF:x.Q8_0.gguf", ModelId("bartowski", "x-GGUF", "x.Q8_0.gguf")),
    ("org/repo:sub/dir/model.gguf", ModelId("org", "repo", "sub/dir/model.gguf")),
    ("name:model.GGUF", ModelId("TabbyML", "name", "model.GGUF")),
])
def test_valid_ids(text: str, expected: ModelId) -> None:
    assert parse_model_id(text, "TabbyML") == expected


@pytest.mark.parametrize("text, message", [
    ("../etc", "org '..' must start"),
    ("org/..", "name '..' must start"),
    ("org/a..b", "name 'a..b'"),
    ("/etc/passwd", "a path is not an id"),
    ("~/models/x", "a path is not an id"),
    ("C:\\models\\x", "a path is not an id"),
    ("a/b/c", "expected org/name or name"),
    ("org/name:../../x.gguf", "file path part '..'"),
    ("org/name:/abs.gguf", "file path part ''"),
    ("org/name:x.bin", "must be a .gguf file"),
    ("org/name:", "nothing after ':'"),
    ("org/na me", "name 'na me'"),
    ("org/.hidden", "name '.hidden'"),
    ("org/-flag", "name '-flag'"),
    ("org/name:a\\b.gguf", "use '/'"),
    ("", "empty model id"),
])
def test_invalid_ids_are_rejected(text: str, message: str) -> None:
    with pytest.raises(ModelError, match="invalid model id|empty model id") as info:
        parse_model_id(text, "TabbyML")
    assert message in str(info.value)


def test_invalid_default_org_is_named() -> None:
    with pytest.raises(ModelError, match="default org '../x'"):
        parse_model_id("model", "../x")


def test_cache_path_stays_inside_the_cache(tmp_path: Path) -> None:
    for text in ("a/b", "b", "a/b:c/d.gguf"):
        path = parse_model_id(text, "org").cache_path(tmp_path).resolve()
        assert path.is_relative_to(tmp_path.resolve())


def test_str_round_trips() -> None:
    for text in ("a/b", "a/b:c/d.gguf"):
        assert str(parse_model_id(text, "x")) == text


def test_looks_like_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "name").mkdir(parents=True)
    assert looks_like_path("org/name")  # exists on disk
    assert not looks_like_path("other/name")
    assert looks_like_path("/abs/model.gguf")
    assert looks_like_path("~/model")
    assert looks_like_path("./model")
    assert looks_like_path("model.gguf")
    assert not looks_like_path("org/name:model.gguf")


def test_cache_dir_setting_then_xdg_then_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_cache_dir(None) == tmp_path / "xdg" / "infill" / "models"
    assert model_cache_dir(str(tmp_path / "mine")) == tmp_path / "mine"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert model_cache_dir(None) == tmp_path / "home" / ".cache" / "infill" / "models"
    assert model_cache_dir("~/m") == tmp_path / "home" / "m"


def test_registry_entries_are_well_formed() -> None:
    registry = load_registry()
    assert "TabbyML/StarCoder-1B" in registry
    for model_id, model in registry.items():
        parsed = parse_model_id(model_id, "TabbyML")
        assert str(parsed) == model_id
        for entry in model.files:
            assert entry.file.endswith(".gguf")
            assert entry.sha256 and len(entry.sha256) == 64 and int(entry.sha256, 16) >= 0
        if model.prompt_template:  # a family by name, so its stop words come with it
            template = PromptTemplate.from_setting(model.prompt_template)
            assert template.name == model.prompt_template and template.stop_words and not template.prefix_only


def test_registry_templates_must_be_family_names() -> None:
    entry = {"repo": "o/r", "files": [{"file": "m.gguf"}]}
    assert _parse_registry({"models": {"o/m": {**entry, "prompt_template": "codellama"}}}, "t")["o/m"] \
        .prompt_template == "codellama"
    with pytest.raises(ModelError, match="must name a template family"):
        _parse_registry({"models": {"o/m": {**entry, "prompt_template": "<PRE>{prefix}<SUF>{suffix}<MID>"}}}, "t")
    with pytest.raises(ModelError, match="unknown template family 'nope'"):
        _parse_registry({"models": {"o/m": {**entry, "prompt_template": "nope"}}}, "t")


def test_known_model_lookup_uses_default_org() -> None:
    known = known_model(parse_model_id("StarCoder-1B", "TabbyML"))
    assert known is not None and known.repo == "TabbyML/models"
    assert known_model(parse_model_id("StarCoder-1B:x.gguf", "TabbyML")) is None
    assert known_model(parse_model_id("nobody/nothing", "TabbyML")) is None


def test_list_cached_skips_incomplete_downloads(tmp_path: Path) -> None:
    (tmp_path / "_default").mkdir()
    (tmp_path / "_default" / "gemma.gguf").write_bytes(b"G" * 10)
    complete = tmp_path / "TabbyML" / "Done" / "ggml"
    complete.mkdir(parents=True)
    (complete / "model.gguf").write_bytes(b"G" * 100)
    (complete.parent / "tabby.json").write_text("{}")
    partial = tmp_path / "TabbyML" / "Partial" / "ggml"
    partial.mkdir(parents=True)
    (partial / "model-00001-of-00002.gguf").write_bytes(b"G" * 5)
    picked = tmp_path / "acme" / "repo"
    (picked / ".cache" / "huggingface" / "download").mkdir(parents=True)
    (picked / ".cache" / "huggingface" / "download" / "x.gguf.incomplete").write_bytes(b"G")
    (picked / "y.gguf").write_bytes(b"G" * 7)

    found = {m.id: (m.kind, m.size) for m in list_cached(tmp_path)}
    assert found == {
        "(default) gemma.gguf": ("default", 10),
        "TabbyML/Done": ("directory", 100),
        "TabbyML/Partial:ggml/model-00001-of-00002.gguf": ("file", 5),
        "acme/repo:y.gguf": ("file", 7),
    }
    assert is_cached(parse_model_id("TabbyML/Done", "x"), tmp_path)
    assert not is_cached(parse_model_id("TabbyML/Partial", "x"), tmp_path)
    assert not is_cached(parse_model_id("acme/repo:x.gguf", "x"), tmp_path)
    assert is_cached(parse_model_id("acme/repo:y.gguf", "x"), tmp_path)


def test_list_cached_of_missing_dir(tmp_path: Path) -> None:
    assert list_cached(tmp_path / "none") == []


def test_split_ids_must_name_the_first_part() -> None:
    with pytest.raises(ModelError, match=r"name the first part of a split model \(m-00001-of-00003\.gguf\)"):
        parse_model_id("a/b:m-00002-of-00003.gguf", "x")
    assert parse_model_id("a/b:m-00001-of-00001.gguf", "x").files() == ("m-00001-of-00001.gguf",)
    assert parse_model_id("a/b:plain.gguf", "x").files() == ("plain.gguf",)
