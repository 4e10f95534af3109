"""Notebooks through the real server over stdio (LSP 3.17 `notebookDocument/*`): a cell is completed with the code of
the cells around it, and the cells follow the notebook's changes.

The model is a loopback llama.cpp `/infill` endpoint that records each prompt (no llama-server needed)."""

from __future__ import annotations

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.engine.backends.fake_server import FakeServer

from .lsp_support import capabilities, config, recording_infill_session

NOTEBOOK = "file:///nb/analysis.ipynb"
CODE, MARKUP = types.NotebookCellKind.Code, types.NotebookCellKind.Markup


def cell(n: int) -> str:
    return f"vscode-notebook-cell:/nb/analysis.ipynb#W{n}sZmlsZQ%3D%3D"


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient):
    client_capabilities = capabilities(["utf-16"])
    client_capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities())
    async with recording_infill_session(lsp_client, "head()", client_capabilities) as result:
        lsp_client.initialize_result = result  # type: ignore[attr-defined]
        yield


def item(n: int, text: str, language: str = "python") -> types.TextDocumentItem:
    return types.TextDocumentItem(uri=cell(n), language_id=language, version=1, text=text)


def open_notebook(client: LanguageClient, cells: list[tuple[types.TextDocumentItem, types.NotebookCellKind]]) -> None:
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=NOTEBOOK, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=kind, document=doc.uri) for doc, kind in cells]),
        cell_text_documents=[doc for doc, _ in cells]))


def change_notebook(client: LanguageClient, version: int, cells: types.NotebookDocumentCellChanges) -> None:
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=NOTEBOOK, version=version),
        change=types.NotebookDocumentChangeEvent(cells=cells)))


async def ask(client: LanguageClient, uri: str, line: int, character: int
              ) -> tuple[types.InlineCompletionList, tuple[str, str] | None]:
    """The answer to one explicit request, and the prefix and suffix of the model request it caused (None: none)."""
    fake: FakeServer = client.fake  # type: ignore[attr-defined]
    before = len(fake.requests)
    result = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character),
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked)))
    assert isinstance(result, types.InlineCompletionList), result
    infills = [r.json() for r in fake.requests[before:] if r.path == "/infill"]
    assert len(infills) <= 1
    return result, (infills[0]["input_prefix"], infills[0]["input_suffix"]) if infills else None


async def test_the_server_offers_notebook_sync(client: LanguageClient):
    sync = client.initialize_result.capabilities.notebook_document_sync  # type: ignore[attr-defined]
    assert sync is not None and [f.notebook for f in sync.notebook_selector] == ["*"]


async def test_a_cell_is_completed_with_the_code_cells_around_it(client: LanguageClient):
    open_notebook(client, [
        (item(0, "import pandas as pd\ndf = pd.read_csv('sales.csv')\n"), CODE),
        (item(1, "# The totals", "markdown"), MARKUP),
        (item(2, "df."), CODE),
        (item(3, "print(total)"), CODE),
    ])
    result, prompt = await ask(client, cell(2), 0, 3)
    # The code cells in order, a blank line between them; the Markdown cell is no code.
    assert prompt == ("import pandas as pd\ndf = pd.read_csv('sales.csv')\n\ndf.", "\n\nprint(total)")
    assert [(i.insert_text, i.range.start.line, i.range.start.character) for i in result.items] == [("head()", 0, 3)]


async def test_cells_follow_the_notebooks_changes(client: LanguageClient):
    open_notebook(client, [(item(0, "import numpy as np\n"), CODE), (item(1, "x = np."), CODE)])
    # A cell inserted between them, and an edit in the first: the prompt has both, in the notebook's new order.
    change_notebook(client, 2, types.NotebookDocumentCellChanges(
        structure=types.NotebookDocumentCellChangeStructure(
            array=types.NotebookCellArrayChange(start=1, delete_count=0,
                                                cells=[types.NotebookCell(kind=CODE, document=cell(5))]),
            did_open=[item(5, "n = 10")]),
        text_content=[types.NotebookDocumentCellContentChanges(
            document=types.VersionedTextDocumentIdentifier(uri=cell(0), version=2),
            changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=1, character=0), end=types.Position(line=1, character=0)),
                text="import math\n")])]))
    _, prompt = await ask(client, cell(1), 0, 7)
    assert prompt == ("import numpy as np\nimport math\n\nn = 10\n\nx = np.", "")
    # The first cell turned into Markdown, the inserted one deleted: neither is code before the cell any more, and
    # the deleted cell's document is gone.
    change_notebook(client, 3, types.NotebookDocumentCellChanges(
        structure=types.NotebookDocumentCellChangeStructure(
            array=types.NotebookCellArrayChange(start=1, delete_count=1), did_close=[
                types.TextDocumentIdentifier(uri=cell(5))]),
        data=[types.NotebookCell(kind=MARKUP, document=cell(0))]))
    _, prompt = await ask(client, cell(1), 0, 7)
    assert prompt == ("x = np.", "")
    result, prompt = await ask(client, cell(5), 0, 6)
    assert not result.items and prompt is None


async def test_closing_the_notebook_closes_its_cells(client: LanguageClient):
    open_notebook(client, [(item(0, "a = 1\n"), CODE), (item(1, "b = a"), CODE)])
    _, prompt = await ask(client, cell(1), 0, 5)
    assert prompt == ("a = 1\n\nb = a", "")
    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=NOTEBOOK),
        cell_text_documents=[types.TextDocumentIdentifier(uri=cell(0)), types.TextDocumentIdentifier(uri=cell(1))]))
    result, prompt = await ask(client, cell(1), 0, 5)
    assert not result.items and prompt is None
    stats = await client.protocol.send_request_async("infill/stats", {})
    assert stats.documents == 0


async def test_notebook_messages_that_do_not_fit_change_nothing_else(client: LanguageClient):
    """A change for a notebook never opened, a cell listed without its text, an array change past the end, a text
    change for an unknown cell: each is dropped (with a log line at most) and the notebook that is open still works."""
    change_notebook(client, 5, types.NotebookDocumentCellChanges(  # not open (NOTEBOOK is opened below)
        structure=types.NotebookDocumentCellChangeStructure(
            array=types.NotebookCellArrayChange(start=0, delete_count=3))))
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=NOTEBOOK, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=CODE, document=cell(n)) for n in (0, 1, 2)]),
        cell_text_documents=[item(0, "a = 1\n"), item(2, "b = a")]))  # cell 1 has no text
    change_notebook(client, 2, types.NotebookDocumentCellChanges(
        structure=types.NotebookDocumentCellChangeStructure(
            array=types.NotebookCellArrayChange(start=7, delete_count=9)),
        text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cell(9), version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(text="zzz")]),
            types.NotebookDocumentCellContentChanges(  # after the unknown cell's, in the same message: applied
                document=types.VersionedTextDocumentIdentifier(uri=cell(2), version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(text="b = a + 1")])]))
    _, prompt = await ask(client, cell(2), 0, 9)
    assert prompt == ("a = 1\n\nb = a + 1", "")
