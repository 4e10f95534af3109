"""Ghost text while the editor's suggestion widget is open, through the real server over stdio.

The LSP specification (3.18, `InlineCompletionContext.selectedCompletionInfo`): when an item is selected in the
widget, inline completions "must extend the text of the selected item and use the same range, otherwise they are not
shown as preview". VS Code sends it on every request made while the widget is open, so without it ghost text vanishes
whenever the widget shows. The model is a loopback llama.cpp `/infill` endpoint that records each prompt."""

from __future__ import annotations

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.engine.backends.fake_server import FakeServer

from .lsp_support import config, open_doc, recording_infill_session


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient):
    async with recording_infill_session(lsp_client, "(1)"):
        yield


def _range(a: tuple[int, int], b: tuple[int, int]) -> types.Range:
    return types.Range(start=types.Position(*a), end=types.Position(*b))


async def _ask(client: LanguageClient, uri: str, cursor: tuple[int, int], selected: tuple[types.Range, str] | None
               ) -> tuple[types.InlineCompletionList, tuple[str, str]]:
    """The answer to one explicit request at `cursor` with `selected` (range, text) in the widget, and the prefix and
    suffix of the model request it caused."""
    fake: FakeServer = client.fake  # type: ignore[attr-defined]
    before = len(fake.requests)
    info = None if selected is None else types.SelectedCompletionInfo(range=selected[0], text=selected[1])
    result = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(*cursor),
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked,
                                              selected_completion_info=info)))
    assert isinstance(result, types.InlineCompletionList), result
    infills = [r.json() for r in fake.requests[before:] if r.path == "/infill"]
    assert len(infills) == 1, [r.path for r in fake.requests[before:]]
    return result, (infills[0]["input_prefix"], infills[0]["input_suffix"])


async def test_the_ghost_text_extends_the_selected_item_and_replaces_its_range(client: LanguageClient):
    uri = open_doc(client, "import os\nx = os.pa\nprint(x)\n")
    word = _range((1, 7), (1, 9))  # `pa`, which the selected `path` replaces
    result, prompt = await _ask(client, uri, (1, 9), (word, "path"))
    assert prompt == ("import os\nx = os.path", "\nprint(x)\n")  # completed as if the item were in
    assert [(i.insert_text, i.range) for i in result.items] == [("path(1)", word)]
    # The same place without the widget: the ghost text starts at the cursor, as before.
    result, prompt = await _ask(client, uri, (1, 9), None)
    assert prompt == ("import os\nx = os.pa", "\nprint(x)\n")
    assert [(i.insert_text, i.range) for i in result.items] == [("(1)", _range((1, 9), (1, 9)))]


async def test_a_range_past_the_cursor_and_utf16_columns(client: LanguageClient):
    """Replace mode (the item replaces the whole word, also after the cursor), with a character of two UTF-16 units
    before it: the answer's range is the request's, in the client's units."""
    uri = open_doc(client, "s = '😀'; t = s.upp_x\n")
    word = _range((0, 16), (0, 21))  # `upp_x` (the emoji is two UTF-16 units), the cursor after `upp`
    result, prompt = await _ask(client, uri, (0, 19), (word, "upper"))
    assert prompt == ("s = '😀'; t = s.upper", "\n")
    assert [(i.insert_text, i.range) for i in result.items] == [("upper(1)", word)]


async def test_a_range_without_the_cursor_is_ignored(client: LanguageClient):
    """A range that cannot be the selected item's (it does not hold the cursor) is answered at the cursor, not
    refused: the editor then just does not show it while its widget is open."""
    uri = open_doc(client, "x = os.pa\n")
    result, prompt = await _ask(client, uri, (0, 9), (_range((0, 0), (0, 3)), "y ="))
    assert prompt == ("x = os.pa", "\n")
    assert [(i.insert_text, i.range) for i in result.items] == [("(1)", _range((0, 9), (0, 9)))]
