"""pytest-lsp end to end: the Infill server against the session's real llama-server (tiny model).

One server per position encoding, shared by the module (each start costs ~1-2 s)."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .lsp_support import (capabilities, complete, config, edit, open_doc, record_status, remote_options,
                          wait_status)

pytestmark = [pytest.mark.llama_server, pytest.mark.asyncio(loop_scope="module")]


async def _start(client: LanguageClient, base_url: str, encoding: str) -> types.InitializeResult:
    record_status(client)
    result = await client.initialize_session(types.InitializeParams(
        capabilities=capabilities([encoding]),
        initialization_options=remote_options(base_url, temperature=0.0)))
    client.init_result = result
    await wait_status(client, "ready")
    return result


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, llama_server: str):
    await _start(lsp_client, llama_server, "utf-16")
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(scope="module", config=config())
async def client_utf8(lsp_client: LanguageClient, llama_server: str):
    await _start(lsp_client, llama_server, "utf-8")
    yield
    await lsp_client.shutdown_session()


async def test_capabilities(client: LanguageClient):
    caps = client.init_result.capabilities
    assert caps.inline_completion_provider
    assert caps.position_encoding == types.PositionEncodingKind.Utf16
    sync = caps.text_document_sync
    assert sync.change == types.TextDocumentSyncKind.Incremental and sync.open_close
    assert "infill.accept" in caps.execute_command_provider.commands
    assert client.init_result.server_info.name == "infill"


async def test_utf8_is_negotiated(client_utf8: LanguageClient):
    assert client_utf8.init_result.capabilities.position_encoding == types.PositionEncodingKind.Utf8


def _check_item(item: types.InlineCompletionItem, line: int, character: int) -> None:
    assert isinstance(item.insert_text, str) and item.insert_text.strip()
    assert item.range.start == types.Position(line=line, character=character)
    assert item.range.end.line == line and item.range.end.character >= character
    assert item.command.command == "infill.accept"


@pytest.mark.parametrize("text,line,character,multi", [
    ("def add(a, b):\n    return a\n", 0, 0, False),        # start of a line with code after it
    ("def add(a, b):\n    return a\n", 1, 4, False),        # middle of a line
    ("def add(a, b):\n    return a\n", 1, 12, True),        # end of a line
    ("", 0, 0, True),                                        # empty file
    ("import os\nx = os.path.join(", 1, 17, True),           # last line without newline
    ("def f():\r\n    x = 1\r\n    \r\n", 2, 4, True),       # CRLF file
])
async def test_positions(client: LanguageClient, text, line, character, multi):
    uri = open_doc(client, text)
    result = await complete(client, uri, line, character)
    assert result.items, f"no suggestion at {line}:{character}"
    for item in result.items:
        _check_item(item, line, character)
        if not multi:
            assert "\n" not in item.insert_text
        if "\r\n" in text and "\n" in item.insert_text:
            assert item.insert_text.count("\n") == item.insert_text.count("\r\n")


async def test_same_result_in_utf16_and_utf8_with_emoji_before_cursor(client, client_utf8):
    text = 'greeting = "hi 😀"; name = \n'
    column_utf16 = len(text.rstrip("\n").encode("utf-16-le")) // 2
    column_utf8 = len(text.rstrip("\n").encode("utf-8"))
    a = await complete(client, open_doc(client, text), 0, column_utf16)
    b = await complete(client_utf8, open_doc(client_utf8, text), 0, column_utf8)
    assert a.items and [i.insert_text for i in a.items] == [i.insert_text for i in b.items]
    assert a.items[0].range.start.character == column_utf16
    assert b.items[0].range.start.character == column_utf8


async def test_replace_range_covers_auto_closed_brackets(client: LanguageClient):
    text = "result = compute()\n"
    uri = open_doc(client, text)
    result = await complete(client, uri, 0, 17)  # between "(" and ")"
    assert result.items
    for item in result.items:
        # the range may only cover the ")" after the cursor, never more than the line
        assert item.range.end.character in (17, 18)


async def test_incremental_changes_are_applied(client: LanguageClient):
    uri = open_doc(client, "x = 1\n")
    edit(client, uri, 2, 1, 0, "y = ")
    first = await complete(client, uri, 1, 4)
    assert first.items
    # typing the first characters of the shown suggestion: answered from it, without a model call
    typed = first.items[0].insert_text[:3]
    edit(client, uri, 3, 1, 4, typed)
    second = await complete(client, uri, 1, 4 + len(typed), invoked=False)
    assert second.items and second.items[0].insert_text == first.items[0].insert_text[3:]
    assert second.items[0].command.arguments[0]["source"] == "typing-through"


async def test_repeated_request_is_answered_from_cache(client: LanguageClient):
    uri = open_doc(client, "def mul(a, b):\n    ")
    first = await complete(client, uri, 1, 4)
    second = await complete(client, uri, 1, 4, invoked=False)
    assert first.items and [i.insert_text for i in first.items] == [i.insert_text for i in second.items]
    assert second.items[0].command.arguments[0]["source"] == "cache"
    # an explicit request wants fresh choices: it asks the model, not the single answer already cached
    third = await complete(client, uri, 1, 4)
    assert third.items and third.items[0].command.arguments[0]["source"] == "model"


async def test_excluded_file_gets_nothing_and_status_says_why(client: LanguageClient):
    uri = open_doc(client, "API_KEY=abc\nSECRET=", language="dotenv", name=".env")
    result = await complete(client, uri, 1, 7)
    assert not result.items
    event = await wait_status(client, "disabled")
    assert ".env" in event["message"]
    before = sum(1 for e in client.infill_status if e["kind"] == "disabled")
    assert not (await complete(client, uri, 1, 7)).items
    assert sum(1 for e in client.infill_status if e["kind"] == "disabled") == before  # said once


async def test_unknown_language_still_completes(client: LanguageClient):
    uri = open_doc(client, "MOVE A TO B\n", language="cobol-made-up", name="prog.cbl")
    result = await complete(client, uri, 1, 0)
    assert isinstance(result, types.InlineCompletionList) and result.items  # refused it would be empty
    for item in result.items:
        _check_item(item, 1, 0)


async def test_acceptance_command_and_notifications(client: LanguageClient):
    uri = open_doc(client, "def sub(a, b):\n    ")
    result = await complete(client, uri, 1, 4)
    assert result.items
    item = result.items[0]
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=item.command.command, arguments=item.command.arguments))
    client.protocol.notify("textDocument/didShowCompletion", {"item": {"insertText": item.insert_text}})
    client.protocol.notify("textDocument/didPartiallyAcceptCompletion",
                           {"item": {"insertText": item.insert_text}, "acceptedLength": 2})
    # the server is still healthy after the notifications
    assert (await complete(client, uri, 1, 4)).items


async def test_request_for_unopened_document_is_answered(client: LanguageClient):
    result = await complete(client, "file:///never/opened.py", 0, 0)
    assert not result.items


async def test_notifications_do_not_accumulate_state(client: LanguageClient):
    stats = await client.protocol.send_request_async("infill/stats", {})
    get = (lambda k: stats[k]) if isinstance(stats, dict) else (lambda k: getattr(stats, k))
    documents_before = get("documents")
    for _ in range(20):
        uri = open_doc(client, "x = 1\n")
        edit(client, uri, 2, 1, 0, "y")
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
    stats = await client.protocol.send_request_async("infill/stats", {})
    get = (lambda k: stats[k]) if isinstance(stats, dict) else (lambda k: getattr(stats, k))
    assert get("protocol_futures") <= 3  # pygls 2.1 would keep one per notification
    assert get("documents") == documents_before  # every document opened was closed again
