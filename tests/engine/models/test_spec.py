"""GGUF inspection and Tabby-style model directories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.errors import ModelError
from engine.models.spec import check_gguf_file, is_gguf_file, is_tabby_dir, read_gguf_info, read_tabby_dir
from tests.fixtures.tiny_model import FIM_TOKENS, find_smollm2_gguf


def test_tiny_model_has_fim_tokens_from_metadata_keys(tiny_model: Path) -> None:
    info = read_gguf_info(tiny_model)
    assert info.architecture == "llama"
    assert info.name == "infill-tiny-test-model"
    assert info.has_fim
    assert info.fim_token_ids == {"pre": FIM_TOKENS["<fim_prefix>"], "suf": FIM_TOKENS["<fim_suffix>"],
                                  "mid": FIM_TOKENS["<fim_middle>"]}
    assert info.context_length == 4096
    assert info.vocab_size == 49152
    assert info.file_size == tiny_model.stat().st_size
    assert info.expected_size == info.file_size and not info.truncated


def test_smollm2_has_no_fim_but_a_chat_template() -> None:
    info = read_gguf_info(find_smollm2_gguf())
    assert info.architecture == "llama"
    assert not info.has_fim
    assert info.fim_token_ids == {}
    assert info.chat_template and "<|im_start|>" in info.chat_template
    assert not info.truncated


def test_fim_tokens_found_by_text_when_keys_are_missing(tmp_path: Path) -> None:
    import gguf

    path = tmp_path / "fim-by-text.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_token_list(["<unk>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>", "a"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    info = read_gguf_info(path)
    assert info.has_fim
    assert info.fim_token_ids == {"pre": 1, "suf": 2, "mid": 3}
    assert info.tensor_count == 0


def test_not_a_gguf_file_is_named_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"<html>404 not found</html>" * 4)
    assert not is_gguf_file(path)
    with pytest.raises(ModelError, match=r"model\.gguf: not a GGUF model file"):
        read_gguf_info(path)


def test_tiny_file_is_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "empty.gguf"
    path.write_bytes(b"")
    with pytest.raises(ModelError, match="empty.gguf: not a GGUF model file"):
        read_gguf_info(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="model file not found"):
        read_gguf_info(tmp_path / "nope.gguf")


def test_truncated_tensor_data_is_detected(tiny_model: Path, tmp_path: Path) -> None:
    data = tiny_model.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) - 4096])
    assert is_gguf_file(cut)
    info = read_gguf_info(cut)
    assert info.truncated
    with pytest.raises(ModelError, match=r"cut\.gguf: truncated GGUF model file"):
        check_gguf_file(cut)


def test_truncated_header_is_detected(tiny_model: Path, tmp_path: Path) -> None:
    cut = tmp_path / "header.gguf"
    cut.write_bytes(tiny_model.read_bytes()[:5000])  # inside the vocabulary array
    with pytest.raises(ModelError, match=r"header\.gguf: truncated or corrupt GGUF file"):
        read_gguf_info(cut)


def test_unsupported_version(tmp_path: Path) -> None:
    path = tmp_path / "v9.gguf"
    path.write_bytes(b"GGUF" + (9).to_bytes(4, "little") + bytes(16))
    with pytest.raises(ModelError, match="unsupported GGUF version 9"):
        read_gguf_info(path)


# --- Tabby-style directories ------------------------------------------------------------------------------------------

def _tabby(root: Path, meta: dict | str | None = None) -> Path:
    (root / "ggml").mkdir(parents=True)
    if meta is not None:
        (root / "tabby.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    return root


def test_tabby_dir_single_file(tiny_model: Path, tmp_path: Path) -> None:
    root = _tabby(tmp_path / "m", {"prompt_template": "<PRE>{prefix}<SUF>{suffix}<MID>", "chat_template": "{{x}}"})
    shutil.copy(tiny_model, root / "ggml" / "model.gguf")
    assert is_tabby_dir(root)
    model = read_tabby_dir(root)
    assert model.entry == root / "ggml" / "model.gguf"
    assert model.parts == (model.entry,)
    assert model.prompt_template == "<PRE>{prefix}<SUF>{suffix}<MID>"
    assert model.chat_template == "{{x}}"


def test_tabby_dir_partitions_first_is_entry(tmp_path: Path) -> None:
    root = _tabby(tmp_path / "m", {})
    for i in (3, 1, 2):
        (root / "ggml" / f"model-0000{i}-of-00003.gguf").write_bytes(b"GGUF")
    model = read_tabby_dir(root)
    assert model.entry.name == "model-00001-of-00003.gguf"
    assert [p.name for p in model.parts] == [f"model-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    assert model.prompt_template is None and model.chat_template is None


def test_tabby_dir_missing_partition(tmp_path: Path) -> None:
    root = _tabby(tmp_path / "m", {})
    for i in (1, 3):
        (root / "ggml" / f"model-0000{i}-of-00003.gguf").write_bytes(b"GGUF")
    with pytest.raises(ModelError, match=r"partitions missing: model-00002-of-00003\.gguf \(of 3\)"):
        read_tabby_dir(root)


def test_tabby_dir_without_model_file(tmp_path: Path) -> None:
    root = _tabby(tmp_path / "m", {})
    with pytest.raises(ModelError, match="no model file in the model directory"):
        read_tabby_dir(root)


def test_tabby_dir_without_tabby_json(tmp_path: Path) -> None:
    root = _tabby(tmp_path / "m")
    assert not is_tabby_dir(root)
    with pytest.raises(ModelError, match="no tabby.json"):
        read_tabby_dir(root)


def test_tabby_dir_bad_json(tmp_path: Path) -> None:
    root = _tabby(tmp_path / "m", "{not json")
    with pytest.raises(ModelError, match="tabby.json: cannot read it as JSON"):
        read_tabby_dir(root)


def test_tabby_dir_template_must_be_a_string(tmp_path: Path) -> None:
    root = _tabby(tmp_path / "m", {"prompt_template": 3})
    with pytest.raises(ModelError, match="prompt_template must be a string"):
        read_tabby_dir(root)
