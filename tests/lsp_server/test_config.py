"""Layered, validated settings; secrets; log redaction."""

import dataclasses
import logging
import os
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal, Mapping

import pytest

from engine.config import EngineConfig, HttpSettings, LanguageOverride, LocalServerSettings, ModelConfig
from engine.errors import ConfigError
from engine.tomlfiles import tomllib
from lsp_server.config import (DebounceSettings, ServerSettings, SettingsStore, SpeculationSettings, config_file_path,
                               engine_changed, load_config_file, parse_settings)
from lsp_server.logging_setup import LoggingSetup, SharedRotatingFileHandler, redact, show_text
from lsp_server.next_edit.settings import NextEditSettings
from lsp_server.secrets import excluded_by
from lsp_server.workspace.settings import ContextSettings


def test_defaults():
    s = parse_settings({})
    assert s == ServerSettings()
    assert s.engine.completion.kind == "local" and s.multiline == "auto"


def test_flat_dict_with_engine_keys_and_camel_case():
    s = parse_settings({"completion": {"kind": "llama.cpp/completion", "apiEndpoint": "http://127.0.0.1:1"},
                        "maxTokens": 32, "debounce": {"mode": "fixed", "fixedMs": 80}})
    assert s.engine.completion.kind == "llama.cpp/completion"
    assert s.engine.completion.api_endpoint == "http://127.0.0.1:1"
    assert s.max_tokens == 32 and s.debounce.fixed_ms == 80


@pytest.mark.parametrize("data,key", [
    ({"maxTokens": "lots"}, "maxTokens"),
    ({"multiline": "sometimes"}, "multiline"),
    ({"completion": {"kind": 3}}, "completion.kind"),
    ({"nonsense": 1}, "nonsense"),
    ({"debounce": {"minMs": 10, "maxMs": 5}}, "debounce"),
    ({"max_tokens": 0}, "ServerSettings"),
])
def test_errors_name_the_key(data, key):
    with pytest.raises(ConfigError) as info:
        parse_settings(data)
    assert info.value.key == key


def test_layers_later_wins_and_invalid_layer_keeps_last_good():
    store = SettingsStore()
    store.update("file", {"max_tokens": 10, "temperature": 0.3})
    store.update("initialization", {"max_tokens": 20})
    assert store.current.max_tokens == 20 and store.current.temperature == 0.3
    store.update("workspace", {"completion": {"model": "/m.gguf"}})
    good = store.current
    with pytest.raises(ConfigError):
        store.update("change", {"max_tokens": -1})
    assert store.current is good
    # the rejected layer was not kept: a later valid change applies on top of the good layers
    store.update("change", {"temperature": 0.5})
    assert (store.current.max_tokens, store.current.temperature) == (20, 0.5)
    assert store.current.engine.completion.model == "/m.gguf"


def test_engine_changed_only_for_engine_keys():
    a = parse_settings({})
    assert not engine_changed(a, parse_settings({"max_tokens": 5}))
    assert engine_changed(a, parse_settings({"completion": {"model": "/x.gguf"}}))


def test_config_file(tmp_path):
    assert config_file_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "infill" / "config.toml"
    assert config_file_path({"INFILL_CONFIG": "/x/y.toml"}).as_posix() == "/x/y.toml"
    path = tmp_path / "config.toml"
    assert load_config_file(path) == {}
    path.write_text('max_tokens = 12\n[completion]\nkind = "local"\n')
    assert parse_settings(load_config_file(path)).max_tokens == 12
    path.write_text("max_tokens = \n")
    with pytest.raises(ConfigError) as info:
        load_config_file(path)
    assert str(path) in str(info.value)
    # saved in another encoding (a Latin-1 comment): UnicodeDecodeError escaped, and `infill serve` then skipped the
    # client's initializationOptions and said nothing to the user
    path.write_bytes("# caf\u00e9\nmax_tokens = 12\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8 text") as info:
        load_config_file(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("path,glob", [
    ("file:///p/.env", ".env*"), ("file:///p/.env.local", ".env*"), ("file:///p/server.pem", "*.pem"),
    ("file:///p/a.KEY", "*.key"), ("file:///home/u/.ssh/id_rsa", "id_rsa*"), ("file:///p/my_secrets.py", "*secret*"),
    ("file:///p/main.py", None), ("file:///p/keyboard.py", None), ("file:///p/environment.py", None),
])
def test_default_exclusions(path, glob):
    assert excluded_by(path) == glob


def test_configured_exclusions():
    assert excluded_by("file:///p/creds/aws.json", ("creds/*",)) == "creds/*"
    assert excluded_by("file:///p/private.txt", ("private.*",)) == "private.*"
    assert excluded_by("file:///p/main.py", ("creds/*",)) is None


def test_a_uri_urllib_cannot_parse_is_still_matched():
    """urlparse raises ValueError for an unbalanced "[" in the authority: every request for such a document failed
    with InternalError. The URI as written is matched instead, so a secret file is still refused."""
    assert excluded_by("http://[::1/p/.env") == ".env*"
    assert excluded_by("http://[::1/p/main.py") is None


def test_redaction():
    assert "sk-abcdefghijklmnop" not in redact("key sk-abcdefghijklmnop used")
    assert "s3cr3tvalue" not in redact("Authorization: Bearer s3cr3tvalue123")
    assert "mykey1234" not in redact("using mykey1234 now", secrets=["mykey1234"])
    assert show_text("def secret_code():", debug=False) == "<18 chars>"
    assert show_text("x", debug=True) == "'x'"


def test_log_file_is_redacted(tmp_path):
    setup = LoggingSetup()
    sent = []
    path = setup.configure("info", sent.append, str(tmp_path / "infill.log"), secrets=["topsecretkey"])
    logging.getLogger("lsp_server.test").info("calling with topsecretkey and api_key=abcdef123456")
    setup.close()
    text = path.read_text()
    assert "calling with" in text and "topsecretkey" not in text and "abcdef123456" not in text
    assert sent and "topsecretkey" not in sent[0].message
    assert re.search(rf"\[{os.getpid()}\] INFO lsp_server.test: calling with", text)  # which editor's server wrote it


def test_servers_sharing_the_log_file_rotate_it_once_and_keep_writing_to_it(tmp_path):
    """Every editor window's `infill serve` logs to the same file (two handlers here, as two processes hold two)."""
    path = tmp_path / "infill.log"

    def handler() -> SharedRotatingFileHandler:
        h = SharedRotatingFileHandler(path, maxBytes=1000, backupCount=2, encoding="utf-8")
        h.setFormatter(logging.Formatter("%(message)s"))
        return h

    def write(h: logging.Handler, message: str) -> None:
        h.emit(logging.makeLogRecord({"msg": message, "levelno": logging.INFO}))

    first, second = handler(), handler()
    try:
        for i in range(9):  # 9 × 2 lines of 51 bytes: 918 bytes, just under the limit
            write(first, f"first {i} " + "x" * 42)
            write(second, f"second {i} " + "x" * 41)
        write(first, "first rotates " + "x" * 80)  # over the limit: the file is rotated
        write(second, "second after the rotation")
        write(first, "first after the rotation")
        assert path.read_text().splitlines() == ["first rotates " + "x" * 80, "second after the rotation",
                                                 "first after the rotation"]
        older = Path(f"{path}.1").read_text().splitlines()
        assert len(older) == 18 and older[-1].startswith("second 8")  # rotated once, by one of them
        assert not Path(f"{path}.2").exists()
    finally:
        first.close()
        second.close()


def test_engine_table_is_accepted_like_the_readme_shows():
    s = parse_settings({"engine": {"completion": {"kind": "llama.cpp/infill", "api_endpoint": "http://h:1"}},
                        "max_tokens": 8})
    assert s.engine.completion.kind == "llama.cpp/infill" and s.max_tokens == 8
    with pytest.raises(ConfigError) as info:
        parse_settings({"engine": {"completion": {"kind": 1}}})
    assert info.value.key == "completion.kind"


# --- every setting is documented (docs/configuration.md, docs/context.md, docs/next-edit.md) -----------------------

REPO = Path(__file__).resolve().parents[2]
#: (document, the `## ` heading of its table, the dataclasses whose fields the table lists)
DOCUMENTED = [
    ("docs/configuration.md", "Top level", (ServerSettings, EngineConfig)),
    ("docs/configuration.md", "`[completion]`", (ModelConfig,)),
    ("docs/configuration.md", "`[completion.local]`", (LocalServerSettings,)),
    ("docs/configuration.md", "`[completion.http]`", (HttpSettings,)),
    ("docs/configuration.md", "`[debounce]`", (DebounceSettings,)),
    ("docs/configuration.md", "`[speculation]`", (SpeculationSettings,)),
    ("docs/configuration.md", "`[languages]`", (LanguageOverride,)),
    ("docs/context.md", "Settings", (ContextSettings,)),
    ("docs/next-edit.md", "Settings", (NextEditSettings,)),
]
#: ServerSettings.engine is not a key: the engine's own keys sit at the top level beside the server's.
NOT_KEYS = {(ServerSettings, "engine")}


def doc_rows(document: str, heading: str) -> dict[str, tuple[str, str, str]]:
    """The table under `## heading`: each key of the first column → (type, default, meaning). A row naming several
    keys (`a`, `b`) gives them the default listed in the same order, or the one default it lists."""
    lines = (REPO / document).read_text().splitlines()
    start = lines.index(f"## {heading}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    rows: dict[str, tuple[str, str, str]] = {}
    for line in lines[start:end]:
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        assert len(cells) == 4, f"{document}, {heading}: expected | key | type | default | meaning |, got {line!r}"
        keys = re.findall(r"`(\w+)`", cells[0])
        if cells[0] == "key":
            continue
        defaults = cells[2].split(", ") if len(keys) > 1 and cells[2].count(", ") == len(keys) - 1 else [cells[2]]
        for i, key in enumerate(keys):
            rows[key] = (cells[1], defaults[min(i, len(defaults) - 1)], cells[3])
    return rows


def doc_type(tp: Any) -> str:
    """How the tables write a field's type."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(doc_type(a) for a in args if a is not type(None)) + " or unset"
    if origin is Literal:
        return " / ".join(f'"{a}"' for a in args)
    if origin in (tuple, list):
        return f"list of {doc_type(args[0])}s"
    if origin in (dict, Mapping):
        return f"table of {doc_type(args[1])}s"
    if dataclasses.is_dataclass(tp):
        return "table"
    return {bool: "boolean", int: "integer", float: "number", str: "string"}[tp]


def doc_default(text: str) -> Any:
    if text == "unset":
        return None
    return tomllib.loads(f"v = {text.strip('`')}")["v"]


def plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("document,heading,classes", DOCUMENTED, ids=[f"{d}:{h}" for d, h, _ in DOCUMENTED])
def test_every_setting_is_documented_with_its_type_and_default(document, heading, classes):
    rows = doc_rows(document, heading)
    fields = {f.name: (cls, f) for cls in classes for f in dataclasses.fields(cls) if (cls, f.name) not in NOT_KEYS}
    assert sorted(set(fields) - set(rows)) == [], f"settings missing from the table under {heading} in {document}"
    assert sorted(set(rows) - set(fields)) == [], f"{document}, {heading}: documented keys that are no settings"
    for name, (cls, f) in fields.items():
        doc_tp, default_text, meaning = rows[name]
        assert doc_tp.replace("`", "") == doc_type(typing.get_type_hints(cls)[name]), f"{heading}: {name}'s type"
        assert meaning, f"{heading}: {name} has no meaning"
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(default):
            assert default_text.startswith("see "), f"{heading}: {name} should point to its own table"
            continue
        assert doc_default(default_text) == plain(default), f"{heading}: {name}'s default"
