"""Per-vendor chat normalisation from vendors.toml."""

from __future__ import annotations

import logging

import pytest

from engine.backends.chat_normalize import ChatNormalizer, parse_table, vendor_table
from engine.errors import ConfigError

BODY = {"messages": [{"role": "user", "content": "hi"}], "presence_penalty": 0.5, "frequency_penalty": 0.3,
        "user": "u", "stream_options": {"include_usage": True}, "seed": 4, "max_tokens": 9, "temperature": 0.1}


def test_the_table_has_every_chat_vendor():
    assert {"openai", "azure", "mistral", "ollama", "llama.cpp"} <= set(vendor_table())


def test_missing_model_is_filled_with_the_default():
    assert ChatNormalizer("openai", "gpt-4o").normalize({"messages": []})["model"] == "gpt-4o"


def test_unsupported_model_falls_back_with_a_warning(caplog):
    n = ChatNormalizer("openai", "gpt-4o", ("gpt-4o", "gpt-4o-mini"))
    assert n.normalize({"model": "gpt-4o-mini"})["model"] == "gpt-4o-mini"
    with caplog.at_level(logging.WARNING):
        assert n.normalize({"model": "claude"})["model"] == "gpt-4o"
    assert "claude" in caplog.text and "supported_models" in caplog.text


def test_mistral_drops_presence_penalty_user_and_stream_options():
    out = ChatNormalizer("mistral", "codestral-latest").normalize(BODY)
    assert out == {"messages": BODY["messages"], "model": "codestral-latest", "frequency_penalty": 0.3,
                   "random_seed": 4, "max_tokens": 9, "temperature": 0.1}


@pytest.mark.parametrize("model", ["o1", "o1-mini", "o3-mini", "o4-mini"])
def test_reasoning_models_drop_the_penalties(model):
    out = ChatNormalizer("openai", model).normalize(BODY)
    assert "presence_penalty" not in out and "frequency_penalty" not in out
    assert out["user"] == "u" and out["seed"] == 4


def test_ordinary_openai_models_keep_everything():
    out = ChatNormalizer("openai", "gpt-4o").normalize(BODY)
    assert out == {**BODY, "model": "gpt-4o"}


def test_a_typo_in_the_table_is_a_config_error():
    with pytest.raises(ConfigError, match="dorp"):
        parse_table("[acme]\ndorp = ['user']\n")
