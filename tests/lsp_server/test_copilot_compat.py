"""Configuration from clients written for the Copilot language server (copilot-lsp, copilot.el): their own keys are
read as that server reads them, and the rest is validated as strictly as ever."""

from __future__ import annotations

import logging

import pytest

from engine.errors import ConfigError
from lsp_server.config import SettingsStore
from lsp_server.copilot_compat import from_copilot_client

COPILOT_LSP_INIT = {"editorInfo": {"name": "neovim", "version": "0.12.0"},
                    "editorPluginInfo": {"name": "Github Copilot LSP for Neovim", "version": "0.0.1"}}


def test_the_editor_identity_is_logged_and_not_a_setting(caplog):
    with caplog.at_level(logging.INFO, logger="lsp_server.copilot_compat"):
        out = from_copilot_client({**COPILOT_LSP_INIT, "max_tokens": 64})
    assert out == {"max_tokens": 64}
    assert "neovim 0.12.0" in caplog.text and "Github Copilot LSP for Neovim" in caplog.text
    SettingsStore().update("initialization", out)  # validates


def test_next_edit_switch_becomes_infills_own():
    assert from_copilot_client({"nextEditSuggestions": {"enabled": False}}) == {"next_edit": {"enabled": False}}
    store = SettingsStore()
    assert store.update("change", from_copilot_client({"nextEditSuggestions": {"enabled": False}})).next_edit.enabled \
        is False
    # Infill's own key in the same source wins; its other next-edit settings stay.
    assert from_copilot_client({"nextEditSuggestions": {"enabled": False}, "nextEdit": {"enabled": True}}) == \
        {"nextEdit": {"enabled": True}}
    assert from_copilot_client({"nextEditSuggestions": {"enabled": True}, "next_edit": {"debounce_ms": 10}}) == \
        {"next_edit": {"debounce_ms": 10, "enabled": True}}


def test_service_settings_are_dropped_and_a_bad_switch_is_named(caplog):
    with caplog.at_level(logging.INFO, logger="lsp_server.copilot_compat"):
        out = from_copilot_client({"http": {"proxy": "http://p:3128"}, "telemetry": {"telemetryLevel": "off"},
                                   "github-enterprise": {"uri": "https://ghe"}, "nextEditSuggestions": {"enabled": 1}})
    assert out == {}
    assert "http, telemetry, github-enterprise" in caplog.text and "expected true or false" in caplog.text


@pytest.mark.parametrize("data", [None, [], "text", {"max_tokens": 64}, {"editor_info": {}}])
def test_everything_else_is_left_for_validation(data):
    assert from_copilot_client(data) == data


def test_a_typo_is_still_an_error():
    with pytest.raises(ConfigError, match="next_edit_suggestion: unknown setting"):
        SettingsStore().update("change", from_copilot_client({"nextEditSuggestion": {"enabled": True}}))
