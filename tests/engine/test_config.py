"""engine.config: dict → typed settings, errors that name the dotted key, camelCase keys, deep merge."""

from __future__ import annotations

import dataclasses

import pytest

from engine.config import (EngineConfig, HttpSettings, LanguageOverride, LocalServerSettings, ModelConfig, from_dict,
                           merge)
from engine.errors import ConfigError


def test_defaults_from_an_empty_dict():
    config = from_dict(EngineConfig, {})
    assert config.completion == ModelConfig()
    assert config.completion.stable_clip is True
    assert from_dict(EngineConfig, {"completion": {"stableClip": False}}).completion.stable_clip is False
    assert config.chat is None and config.embedding is None and config.languages == {}


def test_camel_case_and_snake_case_keys_both_work():
    config = from_dict(EngineConfig, {"completion": {
        "kind": "openai/completion", "apiEndpoint": "http://127.0.0.1:9/v1", "max_suffix_tokens": 64,
        "maxPrefixTokens": 512, "additionalStopWords": ["\n\n\n"], "http": {"readTimeout": 3}}})
    completion = config.completion
    assert completion.kind == "openai/completion" and completion.api_endpoint == "http://127.0.0.1:9/v1"
    assert (completion.max_prefix_tokens, completion.max_suffix_tokens) == (512, 64)
    assert completion.additional_stop_words == ("\n\n\n",)
    assert completion.http.read_timeout == 3.0 and isinstance(completion.http.read_timeout, float)


def test_nested_optional_model_and_language_tables():
    config = from_dict(EngineConfig, {"chat": {"kind": "openai/chat", "model": "m"},
                                      "languages": {"zig": {"lineComment": "//", "topLevelKeywords": ["fn"]}}})
    assert config.chat == ModelConfig(kind="openai/chat", model="m")
    assert config.languages["zig"] == LanguageOverride(line_comment="//", top_level_keywords=("fn",))


@pytest.mark.parametrize("data, key", [
    ({"completion": {"kindd": "local"}}, "completion.kindd"),
    ({"completion": {"maxPrefixTokens": "10"}}, "completion.maxPrefixTokens"),
    ({"completion": {"max_prefix_tokens": True}}, "completion.max_prefix_tokens"),
    ({"completion": {"additional_stop_words": ["ok", 1]}}, "completion.additional_stop_words[1]"),
    ({"completion": {"additional_stop_words": "\n"}}, "completion.additional_stop_words"),
    ({"completion": {"http": {"verify_tls": "yes"}}}, "completion.http.verify_tls"),
    ({"completion": {"http": {"headers": {"X-A": 1}}}}, "completion.http.headers.X-A"),
    ({"completion": "local"}, "completion"),
    ({"languages": {"zig": {"line_comment": 3}}}, "languages.zig.line_comment"),
    ({"chat": {"local": {"parallel": 1.5}}}, "chat.local.parallel"),
])
def test_wrong_values_name_the_dotted_key(data, key):
    with pytest.raises(ConfigError) as error:
        from_dict(EngineConfig, data)
    assert error.value.key == key
    assert str(error.value).startswith(key + ":")


def test_unknown_key_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="valid settings here: .*max_prefix_tokens"):
        from_dict(ModelConfig, {"maxPrefix": 1}, "completion")


@pytest.mark.parametrize("data, key", [
    ({"completion": {"max_prefix_tokens": -1}}, "completion"),
    ({"completion": {"additional_stop_words": [""]}}, "completion"),
    ({"completion": {"rate_limit_rpm": 0}}, "completion"),
    ({"completion": {"http": {"connect_timeout": 0}}}, "completion.http"),
    ({"completion": {"local": {"parallel": 0}}}, "completion.local"),
    ({"completion": {"local": {"ctx_size": 100}}}, "completion.local"),
])
def test_validation_in_the_dataclass_becomes_a_config_error_under_its_table(data, key):
    with pytest.raises(ConfigError) as error:
        from_dict(EngineConfig, data)
    assert error.value.key == key


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_merge_is_deep_snake_cases_keys_and_leaves_inputs_alone():
    base = {"completion": {"kind": "local", "http": {"read_timeout": 30, "proxy": None}}, "default_org": "TabbyML"}
    override = {"completion": {"http": {"readTimeout": 5}, "maxPrefixTokens": 10}, "modelCacheDir": "/tmp/m"}
    merged = merge(base, override)
    assert merged == {"completion": {"kind": "local", "http": {"read_timeout": 5, "proxy": None},
                                     "max_prefix_tokens": 10},
                      "default_org": "TabbyML", "model_cache_dir": "/tmp/m"}
    assert base["completion"]["http"]["read_timeout"] == 30
    config = from_dict(EngineConfig, merged)
    assert config.completion.http.read_timeout == 5.0 and config.model_cache_dir == "/tmp/m"


def test_merge_replaces_non_tables():
    assert merge({"a": {"b": 1}}, {"a": [1, 2]}) == {"a": [1, 2]}
    assert merge({"a": [1]}, {"a": {"b": 1}}) == {"a": {"b": 1}}


def test_api_key_comes_from_the_setting_or_the_named_environment_variable(monkeypatch):
    assert ModelConfig(api_key="k1").resolved_api_key() == "k1"
    monkeypatch.setenv("INFILL_TEST_KEY", "k2")
    assert ModelConfig(api_key_env="INFILL_TEST_KEY").resolved_api_key() == "k2"
    monkeypatch.delenv("INFILL_TEST_KEY")
    assert ModelConfig(api_key_env="INFILL_TEST_KEY").resolved_api_key() is None
    assert ModelConfig().resolved_api_key() is None


def test_api_key_never_appears_in_repr():
    assert "s3cret" not in repr(ModelConfig(api_key="s3cret"))
    assert "s3cret" not in repr(from_dict(EngineConfig, {"completion": {"apiKey": "s3cret"}}))


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        HttpSettings().read_timeout = 1  # type: ignore[misc]
    assert LocalServerSettings().parallel >= 1


def test_local_cache_ram_is_bounded_and_validated():
    assert LocalServerSettings().cache_ram == 256
    config = from_dict(EngineConfig, {"completion": {"local": {"cacheRam": -1}}})
    assert config.completion.local.cache_ram == -1
    with pytest.raises(ValueError, match="cache_ram"):
        LocalServerSettings(cache_ram=-2)
