"""Document synchronisation through the real server over stdio: what the model receives must be the editor's text.

The model is a loopback llama.cpp `/infill` endpoint that records every prompt (no llama-server needed), so each test
reads the exact prefix and suffix the server built from its document store."""

from __future__ import annotations

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.engine.backends.fake_server import FakeServer

from .lsp_support import complete, config, edit, recording_infill_session


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient):
    async with recording_infill_session(lsp_client, "Y"):
        yield


def _open(client: LanguageClient, uri: str, text: str) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="plaintext", version=1, text=text)))


async def _prompt(client: LanguageClient, uri: str, line: int, character: int) -> tuple[str, str]:
    """Prefix and suffix of the model request that one inline request at (line, character) causes."""
    fake: FakeServer = client.fake  # type: ignore[attr-defined]
    before = len(fake.requests)
    await complete(client, uri, line, character)
    infills = [r.json() for r in fake.requests[before:] if r.path == "/infill"]
    assert len(infills) == 1, [r.path for r in fake.requests[before:]]
    return infills[0]["input_prefix"], infills[0]["input_suffix"]


async def _open_documents(client: LanguageClient) -> int:
    stats = await client.protocol.send_request_async("infill/stats", {})
    return stats["documents"] if isinstance(stats, dict) else stats.documents


async def test_an_edit_after_a_form_feed_lands_where_the_editor_put_it(client: LanguageClient):
    # Issue 14 item 1: pygls's copy split the line at "\f" and clamped the Range in place; Infill applied the
    # clamped range and the model got "aX\fbcdef".
    uri = "file:///work/sample/formfeed.txt"
    _open(client, uri, "a\fbcdef")
    edit(client, uri, 2, 0, 6, "X")
    assert await _prompt(client, uri, 0, 7) == ("a\fbcdeX", "f")


async def test_an_insert_past_the_line_end_clamps_to_the_line_end(client: LanguageClient):
    # Issue 14 item 1: open "abc", insert "X" at (0,5): LSP clamps to the end of the line → "abcX" (was "abXc").
    uri = "file:///work/sample/clamp.txt"
    _open(client, uri, "abc")
    edit(client, uri, 2, 0, 5, "X")
    assert await _prompt(client, uri, 0, 4) == ("abcX", "")


async def test_other_unicode_breaks_do_not_split_lines(client: LanguageClient):
    uri = "file:///work/sample/breaks.txt"
    _open(client, uri, "a\u2028b\x85c\x1cd\ve\nline1")
    edit(client, uri, 2, 0, 9, "X")  # the end of line 0 for LSP, which only breaks at "\n"
    edit(client, uri, 3, 1, 5, "Z")
    assert await _prompt(client, uri, 1, 6) == ("a\u2028b\x85c\x1cd\veX\nline1Z", "")


async def test_two_spellings_of_one_uri(client: LanguageClient):
    # Issue 14 item 7: `a.py` and `a%2Epy` name one file; an edit or close through a spelling that was not opened is
    # the file's document's. Issue 27: a spelling opened as well is a document of its own (the client holds two
    # texts); with one document per file, requests for `a.py` read the text opened as `a%2Epy`.
    plain, escaped = "file:///work/sample/a.py", "file:///work/sample/a%2Epy"
    _open(client, plain, "abc")
    edit(client, escaped, 2, 0, 3, "X")
    assert await _prompt(client, plain, 0, 4) == ("abcX", "")
    _open(client, escaped, "opened again")
    assert await _open_documents(client) == 2
    edit(client, plain, 3, 0, 4, "!")
    assert await _prompt(client, escaped, 0, 12) == ("opened again", "")
    assert await _prompt(client, plain, 0, 5) == ("abcX!", "")
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=escaped)))
    assert await _prompt(client, escaped, 0, 5) == ("abcX!", "")  # the file is still open as `a.py`
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri="file:///work/sample/a%2epy")))
    fake: FakeServer = client.fake  # type: ignore[attr-defined]
    before = len(fake.requests)
    assert not (await complete(client, plain, 0, 1)).items  # closed under either name
    assert not [r for r in fake.requests[before:] if r.path == "/infill"]
    assert await _open_documents(client) == 0


async def test_full_and_multi_change_notifications(client: LanguageClient):
    uri = "file:///work/sample/multi.txt"
    _open(client, uri, "one\r\ntwo\r\n")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[
            types.TextDocumentContentChangePartial(range=types.Range(start=types.Position(line=1, character=0),
                                                                     end=types.Position(line=1, character=3)),
                                                   text="2"),
            types.TextDocumentContentChangePartial(range=types.Range(start=types.Position(line=0, character=3),
                                                                     end=types.Position(line=1, character=0)),
                                                   text=" "),
        ]))
    assert await _prompt(client, uri, 0, 5) == ("one 2", "\n")  # the engine sends LF
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text="whole\rnew")]))
    assert await _prompt(client, uri, 1, 3) == ("whole\rnew", "")
    assert await _open_documents(client) == 1
