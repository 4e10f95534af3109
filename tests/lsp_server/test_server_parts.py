"""Pure pieces of the server: items and their replace range, status, the CLI commands' argument handling."""


import pytest
from lsprotocol import types

from engine.api import StatusEvent
from lsp_server.commands.complete import cli_overrides, language_for, parse_location
from lsp_server.commands.serve import parse_host_port
from lsp_server.context import build_context
from lsp_server.documents import UTF8, UTF16, Document
from lsp_server.pipeline import Suggestion
from lsp_server.inline_completion import to_item
from lsp_server.server import build_server
from lsp_server.status import StatusReporter, status_payload


@pytest.mark.parametrize("encoding,start,end", [(UTF16, 5, 9), (UTF8, 5, 11)])
def test_item_range_covers_replaced_chars_in_client_units(encoding, start, end):
    doc = Document("file:///a.py", 'f(a, "😀")\n', "python")
    ctx = build_context(doc, 0, start, encoding)  # cursor after `f(a, `; the line's rest is `"😀")`
    assert ctx.line_rest == '"😀")'
    item = to_item(Suggestion('"x")', replace_chars=3), ctx, types.Position(line=0, character=start), encoding, 0)
    assert item.range.start.character == start and item.range.end.character == end  # `"😀"` replaced
    assert item.command.arguments[0]["length"] == 4


def test_status_reporter_sends_changes_once():
    sent = []
    reporter = StatusReporter(lambda method, params: sent.append((method, params)))
    reporter.publish(StatusEvent("ready", "Infill is ready"))
    reporter.publish(StatusEvent("ready", "Infill is ready"))
    reporter.disabled_once("x", "off for .env", "why")
    reporter.disabled_once("x", "off for .env", "why")
    assert [p["kind"] for _, p in sent] == ["ready", "disabled"]
    assert sent[1] == ("infill/didChangeStatus", {"kind": "disabled", "message": "off for .env", "detail": "why"})
    assert status_payload(StatusEvent("busy", "m")) == {"kind": "busy", "message": "m"}


def test_status_carries_the_load_percentage_the_clients_show():
    # Both clients read `percent` (VS Code's status item, Neovim's statusline: `Infill: starting 40%`).
    assert status_payload(StatusEvent("starting", "Downloading", percent=40)) == {
        "kind": "starting", "message": "Downloading", "percent": 40}
    assert "percent" not in status_payload(StatusEvent("starting", "Loading", percent=None))


def test_status_follows_enabled_at_once():
    sent = []
    reporter = StatusReporter(lambda method, params: sent.append(params))
    reporter.on_engine_status(StatusEvent("ready", "llama-server is ready"))
    reporter.show_enabled(False)
    reporter.show_enabled(False)
    reporter.show_enabled(True)
    reporter.show_enabled(True)
    assert [(p["kind"], p["message"]) for p in sent] == [
        ("ready", "llama-server is ready"), ("disabled", "Infill is turned off (enabled = false)"),
        ("ready", "llama-server is ready")]


def test_cli_argument_parsing(tmp_path):
    assert parse_location("a/b.py:3:7") == (tmp_path.__class__("a/b.py"), 3, 7)
    assert parse_location("C:/x/y.py:1:1")[0].as_posix() == "C:/x/y.py"
    for bad in ("a.py", "a.py:0:1", "a.py:x:1"):
        with pytest.raises(ValueError):
            parse_location(bad)
    assert language_for(tmp_path / "m.rs", None) == "rust"
    assert language_for(tmp_path / "m.unknown", None) == "plaintext"
    assert language_for(tmp_path / "m.rs", "go") == "go"
    assert parse_host_port("127.0.0.1:2087") == ("127.0.0.1", 2087)
    with pytest.raises(ValueError):
        parse_host_port("localhost")


def test_cli_overrides():
    class Args:
        kind, model, endpoint, max_tokens, multiline = "llama.cpp/infill", None, "http://h:1", 5, None
    assert cli_overrides(Args) == {"completion": {"kind": "llama.cpp/infill", "api_endpoint": "http://h:1"},
                                   "max_tokens": 5}


def test_server_registers_its_features():
    server = build_server()
    features = server.protocol.fm.features
    for method in (types.TEXT_DOCUMENT_INLINE_COMPLETION, types.TEXT_DOCUMENT_DID_CHANGE,
                   types.WORKSPACE_DID_CHANGE_CONFIGURATION, "textDocument/didShowCompletion",
                   "textDocument/didPartiallyAcceptCompletion", "infill/stats"):
        assert method in features, method
    assert "infill.accept" in server.protocol.fm.commands


def test_only_infill_keeps_documents():
    """pygls's built-in text sync (a second copy, ranges clamped in place, str.splitlines lines) is not registered:
    didOpen/didChange/didClose reach Infill's handlers alone, and the sync capability is still advertised."""
    server = build_server()
    for method in (types.TEXT_DOCUMENT_DID_OPEN, types.TEXT_DOCUMENT_DID_CHANGE, types.TEXT_DOCUMENT_DID_CLOSE):
        assert method not in server.protocol.fm.builtin_features, method
        assert server.protocol._get_handler(method) is server.protocol.fm.features[method]
    assert types.INITIALIZE in server.protocol.fm.builtin_features  # the rest of pygls's protocol is kept


async def test_a_configuration_pull_that_times_out_says_so_and_keeps_the_settings(monkeypatch, caplog):
    """A client that never answers workspace/configuration: the user is told (log and a warning message naming
    the timeout), and the settings in force stay as they were."""
    import asyncio
    import logging

    from lsp_server import server as server_module

    server = build_server()
    server.load()
    server.update_settings("initialization", {"max_tokens": 7})
    before = server.settings
    shown: list[types.ShowMessageParams] = []
    monkeypatch.setattr(server_module, "CONFIGURATION_PULL_TIMEOUT_S", 0.01)
    monkeypatch.setattr(server, "_client_supports_configuration", lambda: True)
    monkeypatch.setattr(server, "workspace_configuration_async",
                        lambda params: asyncio.get_running_loop().create_future())  # never answered
    monkeypatch.setattr(server, "window_show_message", shown.append)
    with caplog.at_level(logging.WARNING, logger="lsp_server.server"):
        await server.pull_workspace_configuration(replaces=("change",))
    assert server.settings is before and server.settings.max_tokens == 7
    assert len(shown) == 1 and shown[0].type == types.MessageType.Warning
    assert "within 0.01 s" in shown[0].message and "previous settings stay" in shown[0].message
    assert any("did not answer workspace/configuration" in r.getMessage() for r in caplog.records)
