"""What is inside a model file or a Tabby-style model directory, read cheaply.

`gguf.GGUFReader` parses every tensor and token into numpy objects (~10 s for Gemma's 262k-token vocabulary), far
too slow for a check at every start. This module walks the GGUF header with `struct` over an mmap instead, using the
`gguf` package only for its constants: it reads the scalar metadata, skips the big arrays (noting FIM tokens on the
way) and checks that the tensor data the header promises fits in the file, so a truncated download or a file that
is not GGUF at all is reported before llama-server fails on it with a less helpful message."""

from __future__ import annotations

import json
import mmap
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ModelError

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)

# Value type codes of the GGUF format (gguf.GGUFValueType) → struct format of one scalar.
_SCALAR_FORMATS: dict[int, str] = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
                                   12: "d"}
_STRING = 8
_ARRAY = 9

# Token texts llama.cpp recognises as FIM tokens when the model lacks the explicit `fim_*_token_id` keys.
_FIM_TEXTS: dict[str, frozenset[bytes]] = {
    "pre": frozenset(t.encode() for t in ("<|fim_prefix|>", "<fim-prefix>", "<｜fim▁begin｜>", "<fim_prefix>",
                                          "<PRE>", "▁<PRE>", "<|code_prefix|>")),
    "suf": frozenset(t.encode() for t in ("<|fim_suffix|>", "<fim-suffix>", "<｜fim▁hole｜>", "<fim_suffix>",
                                          "<SUF>", "▁<SUF>", "<|code_suffix|>")),
    "mid": frozenset(t.encode() for t in ("<|fim_middle|>", "<fim-middle>", "<｜fim▁end｜>", "<fim_middle>",
                                          "<MID>", "▁<MID>", "<|code_middle|>")),
}
_FIM_KEYS: dict[str, tuple[str, ...]] = {
    "pre": ("tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"),
    "suf": ("tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"),
    "mid": ("tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"),
}
_ARRAYS_KEPT = frozenset({"general.tags"})


@dataclass(frozen=True)
class GgufInfo:
    path: Path
    version: int
    architecture: str | None
    name: str | None
    #: True when the model has FIM prefix/suffix/middle tokens (llama-server's `/infill` works with it).
    has_fim: bool
    fim_token_ids: dict[str, int]
    chat_template: str | None
    context_length: int | None
    vocab_size: int | None
    tensor_count: int
    file_size: int
    #: Bytes the header says the file must have (end of the last tensor); larger than file_size means truncated.
    expected_size: int
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def truncated(self) -> bool:
        return self.expected_size > self.file_size


class _Cursor:
    """Reads little-endian GGUF values from a buffer, raising ModelError (naming the file) past its end."""

    def __init__(self, buf: Any, path: Path):
        self.buf = buf
        self.pos = 0
        self.path = path
        self.size = len(buf)

    def _need(self, n: int) -> None:
        if n < 0 or self.pos + n > self.size:
            raise ModelError(f"{self.path}: truncated or corrupt GGUF file (header ends early at byte {self.pos})")

    def scalar(self, fmt: str) -> Any:
        n = struct.calcsize("<" + fmt)
        self._need(n)
        (value,) = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += n
        return value

    def raw_string(self) -> bytes:
        n = self.scalar("Q")
        self._need(n)
        value = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return value

    def skip(self, n: int) -> None:
        self._need(n)
        self.pos += n


def _read_value(cur: _Cursor, vtype: int, key: str, fim_hits: dict[str, int]) -> Any:
    if vtype in _SCALAR_FORMATS:
        return cur.scalar(_SCALAR_FORMATS[vtype])
    if vtype == _STRING:
        return cur.raw_string().decode("utf-8", "replace")
    if vtype != _ARRAY:
        raise ModelError(f"{cur.path}: corrupt GGUF file (unknown value type {vtype} for key {key!r})")
    item_type = cur.scalar("I")
    count = cur.scalar("Q")
    if item_type in _SCALAR_FORMATS:
        width = struct.calcsize("<" + _SCALAR_FORMATS[item_type])
        cur.skip(width * count)
        return count
    if item_type != _STRING:
        raise ModelError(f"{cur.path}: corrupt GGUF file (array of type {item_type} for key {key!r})")
    keep = key in _ARRAYS_KEPT
    items: list[str] = []
    scan_fim = key == "tokenizer.ggml.tokens"
    for index in range(count):
        text = cur.raw_string()
        if keep:
            items.append(text.decode("utf-8", "replace"))
        elif scan_fim and text.startswith((b"<", b"\xe2\x96\x81<")):
            for role, texts in _FIM_TEXTS.items():
                if text in texts and role not in fim_hits:
                    fim_hits[role] = index
    return items if keep else count


def _tensor_bytes(dims: list[int], ggml_type: int, path: Path, name: str) -> int:
    import gguf

    try:
        block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(ggml_type)]
    except (ValueError, KeyError):
        raise ModelError(f"{path}: tensor {name!r} has a tensor type ({ggml_type}) this version of the gguf "
                         "package does not know; the file may be corrupt or newer than Infill") from None
    elements = 1
    for d in dims:
        elements *= d
    return elements // block * type_size


def read_gguf_info(path: str | Path) -> GgufInfo:
    """The metadata Infill needs from a GGUF file; raises ModelError naming the file when it is not a valid GGUF."""
    path = Path(path)
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise ModelError(f"model file not found: {path}") from None
    except OSError as exc:
        raise ModelError(f"cannot read model file {path}: {exc.strerror or exc}") from None
    with handle:
        file_size = path.stat().st_size
        if file_size < 24:
            raise ModelError(f"{path}: not a GGUF model file (only {file_size} bytes)")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            if buf[:4] != GGUF_MAGIC:
                raise ModelError(f"{path}: not a GGUF model file (it starts with {bytes(buf[:4])!r}, not b'GGUF'); "
                                 "llama-server needs a .gguf file")
            return _parse(_Cursor(buf, path), path, file_size)


def _parse(cur: _Cursor, path: Path, file_size: int) -> GgufInfo:
    cur.skip(4)
    version = cur.scalar("I")
    if version not in SUPPORTED_VERSIONS:
        raise ModelError(f"{path}: unsupported GGUF version {version} (supported: 2 and 3)")
    tensor_count = cur.scalar("Q")
    kv_count = cur.scalar("Q")
    if tensor_count > 1_000_000 or kv_count > 1_000_000:
        raise ModelError(f"{path}: corrupt GGUF header ({tensor_count} tensors, {kv_count} metadata keys)")
    metadata: dict[str, Any] = {}
    fim_hits: dict[str, int] = {}
    for _ in range(kv_count):
        key = cur.raw_string().decode("utf-8", "replace")
        vtype = cur.scalar("I")
        metadata[key] = _read_value(cur, vtype, key, fim_hits)

    data_end = 0
    for _ in range(tensor_count):
        name = cur.raw_string().decode("utf-8", "replace")
        n_dims = cur.scalar("I")
        if n_dims > 8:
            raise ModelError(f"{path}: corrupt GGUF tensor table (tensor {name!r} has {n_dims} dimensions)")
        dims = [cur.scalar("Q") for _ in range(n_dims)]
        ggml_type = cur.scalar("I")
        offset = cur.scalar("Q")
        data_end = max(data_end, offset + _tensor_bytes(dims, ggml_type, path, name))
    alignment = int(metadata.get("general.alignment", 32)) or 32
    data_start = -(-cur.pos // alignment) * alignment
    expected_size = data_start + data_end if tensor_count else cur.pos

    arch = metadata.get("general.architecture")
    fim_ids: dict[str, int] = {}
    for role, keys in _FIM_KEYS.items():
        for key in keys:
            if isinstance(metadata.get(key), int) and metadata[key] >= 0:
                fim_ids[role] = metadata[key]
                break
    if len(fim_ids) < 3 and len(fim_hits) == 3:
        fim_ids = dict(fim_hits)
    vocab = metadata.get("tokenizer.ggml.tokens")
    context = metadata.get(f"{arch}.context_length") if arch else None
    return GgufInfo(
        path=path, version=version, architecture=arch, name=metadata.get("general.name"),
        has_fim=len(fim_ids) == 3, fim_token_ids=fim_ids,
        chat_template=metadata.get("tokenizer.chat_template"),
        context_length=context if isinstance(context, int) else None,
        vocab_size=vocab if isinstance(vocab, int) else None,
        tensor_count=tensor_count, file_size=file_size, expected_size=expected_size,
        metadata=metadata)


def check_gguf_file(path: str | Path) -> GgufInfo:
    """`read_gguf_info`, plus an error when the file is shorter than its header says (an interrupted copy)."""
    info = read_gguf_info(path)
    if info.truncated:
        raise ModelError(f"{info.path}: truncated GGUF model file ({info.file_size:,} bytes, the header describes "
                         f"{info.expected_size:,}); download or copy it again")
    return info


def is_gguf_file(path: str | Path) -> bool:
    """Cheapest check: the magic bytes only."""
    try:
        with Path(path).open("rb") as handle:
            return handle.read(4) == GGUF_MAGIC
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------------------------------
# Tabby-style model directories

TABBY_JSON = "tabby.json"
_PARTITION = re.compile(r"^model-(\d{5})-of-(\d{5})\.gguf$")


@dataclass(frozen=True)
class TabbyModel:
    """A directory laid out as Tabby does: `tabby.json` plus `ggml/model.gguf` or `ggml/model-0000k-of-0000N.gguf`."""

    root: Path
    #: The file to pass to llama-server: `ggml/model.gguf` or the first partition (llama.cpp loads the rest itself).
    entry: Path
    parts: tuple[Path, ...]
    prompt_template: str | None
    chat_template: str | None


def is_tabby_dir(path: str | Path) -> bool:
    return (Path(path) / TABBY_JSON).is_file()


def read_tabby_dir(root: str | Path) -> TabbyModel:
    """Reads and checks a Tabby-style model directory; every error names the directory and the missing piece."""
    root = Path(root)
    meta_path = root / TABBY_JSON
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"{root}: not a model directory (no {TABBY_JSON}; expected {TABBY_JSON} and ggml/model.gguf)")\
            from None
    except (OSError, ValueError) as exc:
        raise ModelError(f"{meta_path}: cannot read it as JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise ModelError(f"{meta_path}: expected a JSON object with prompt_template / chat_template")
    templates: dict[str, str | None] = {}
    for key in ("prompt_template", "chat_template"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise ModelError(f"{meta_path}: {key} must be a string, got {type(value).__name__}")
        templates[key] = value or None
    entry, parts = _find_ggml(root)
    return TabbyModel(root=root, entry=entry, parts=parts, prompt_template=templates["prompt_template"],
                      chat_template=templates["chat_template"])


def _find_ggml(root: Path) -> tuple[Path, tuple[Path, ...]]:
    ggml = root / "ggml"
    single = ggml / "model.gguf"
    if single.is_file():
        return single, (single,)
    found = sorted(p.name for p in ggml.glob("model-*-of-*.gguf")) if ggml.is_dir() else []
    partitions = [m for m in (_PARTITION.match(name) for name in found) if m]
    if not partitions:
        raise ModelError(f"{root}: no model file in the model directory "
                         "(expected ggml/model.gguf or ggml/model-00001-of-0000N.gguf)")
    totals = {int(m.group(2)) for m in partitions}
    if len(totals) != 1:
        raise ModelError(f"{ggml}: partitions disagree on their count: {', '.join(m.group(0) for m in partitions)}")
    total = totals.pop()
    expected = [ggml / f"model-{i:05d}-of-{total:05d}.gguf" for i in range(1, total + 1)]
    missing = [p.name for p in expected if not p.is_file()]
    if missing:
        raise ModelError(f"{ggml}: model partitions missing: {', '.join(missing)} (of {total})")
    return expected[0], tuple(expected)
