"""Layered, validated settings; secrets; log redaction."""

import logging

import pytest

from engine.errors import ConfigError
from lsp_server.config import (ServerSettings, SettingsStore, config_file_path, engine_changed, load_config_file,
                               parse_settings)
from lsp_server.logging_setup import LoggingSetup, redact, show_text
from lsp_server.secrets import excluded_by


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


def test_engine_table_is_accepted_like_the_readme_shows():
    s = parse_settings({"engine": {"completion": {"kind": "llama.cpp/infill", "api_endpoint": "http://h:1"}},
                        "max_tokens": 8})
    assert s.engine.completion.kind == "llama.cpp/infill" and s.max_tokens == 8
    with pytest.raises(ConfigError) as info:
        parse_settings({"engine": {"completion": {"kind": 1}}})
    assert info.value.key == "completion.kind"
