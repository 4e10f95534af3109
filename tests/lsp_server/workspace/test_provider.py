"""WorkspaceContext as the server uses it: sources, exclusion, definitions first, reuse and batching."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from lsp_server.workspace import ContextSettings
from lsp_server.workspace.provider import CursorInfo, WorkspaceContext, after_cursor
from lsp_server.workspace.lsp import folders_from_initialize, on_did_yank

from tests.lsp_server.context_doubles import Doc


GEOMETRY = ("import math\n\n\ndef area_of_circle(radius):\n    return math.pi * radius * radius\n\n\n"
            "def circumference_of_circle(radius):\n    return 2 * math.pi * radius\n")
SECRETS = "def leak_the_api_token(area_of_circle):\n    return 'sk-123'\n"
MAIN = "from shapes.geometry import area_of_circle\n\n\ndef report(radius):\n    area = area_of_circle(radius)\n    "


def cursor(uri: str, text: str, line: int | None = None) -> CursorInfo:
    return CursorInfo(uri, text, "", text.count("\n") if line is None else line, "python")


async def make(tmp_path: Path, settings: ContextSettings = ContextSettings(), exclude=()) -> tuple:
    (tmp_path / "shapes").mkdir()
    (tmp_path / "shapes" / "geometry.py").write_text(GEOMETRY)
    (tmp_path / "shapes" / "secret_stuff.py").write_text(SECRETS)
    docs: dict[str, Doc] = {}
    ws = WorkspaceContext(settings, docs, exclude)
    ws.set_folders([str(tmp_path)])
    await ws.wait_scanned()
    return ws, docs


def open_main(ws: WorkspaceContext, docs: dict, tmp_path: Path, text: str = MAIN) -> str:
    uri = (tmp_path / "main.py").as_uri()
    docs[uri] = Doc(text)
    ws.opened(uri)
    return uri


async def select(ws: WorkspaceContext, cur: CursorInfo, **kwargs):
    return await ws.select(cur, prompt_lines=(max(0, cur.line - 50), cur.line + 1), **kwargs)


async def test_definition_of_an_identifier_at_the_cursor_comes_from_another_file(tmp_path):
    ws, docs = await make(tmp_path)
    uri = open_main(ws, docs, tmp_path)
    selection = await select(ws, cursor(uri, MAIN))
    assert selection.sources[0] == "definition"
    assert selection.snippets[0].filename == "shapes/geometry.py"
    assert "def area_of_circle(radius):" in selection.snippets[0].text
    assert selection.relative_path == "main.py" and selection.repo == tmp_path.name


async def test_excluded_files_never_enter_context(tmp_path):
    ws, docs = await make(tmp_path, exclude=("*.env",))
    secret_uri = (tmp_path / "prod.env").as_uri()
    docs[secret_uri] = Doc("area_of_circle = 'password123'\narea_of_circle()\narea_of_circle\n")
    ws.opened(secret_uri)
    ws.changed(secret_uri, 1)
    ws.yanked(secret_uri, "area_of_circle password123")
    ws.tick()
    uri = open_main(ws, docs, tmp_path, MAIN + "leak_the_api_token\n")
    selection = await select(ws, cursor(uri, docs[uri].text))
    texts = "\n".join(s.text for s in selection.snippets)
    assert selection.snippets, "the geometry file is still used"
    assert "password123" not in texts and "sk-123" not in texts
    assert all("secret" not in s.filename and "env" not in s.filename for s in selection.snippets)


async def test_context_exclude_setting_keeps_a_file_out(tmp_path):
    ws, docs = await make(tmp_path, ContextSettings(exclude=("shapes/geometry.py",)))
    uri = open_main(ws, docs, tmp_path)
    selection = await select(ws, cursor(uri, MAIN))
    assert all(s.filename != "shapes/geometry.py" for s in selection.snippets)


async def test_another_open_document_is_a_source(tmp_path):
    ws, docs = await make(tmp_path, ContextSettings(workspace_files=False, definitions=False))
    other = "file:///elsewhere/invoice.py"
    docs[other] = Doc("def compute_invoice_total(invoice_lines, tax_rate):\n    subtotal = sum(invoice_lines)\n"
                      "    return subtotal * (1 + tax_rate)\n")
    ws.opened(other)
    uri = (tmp_path / "main.py").as_uri()
    text = "def bill(invoice_lines, tax_rate):\n    total = compute_invoice_total("
    docs[uri] = Doc(text)
    ws.opened(uri)
    selection = await select(ws, cursor(uri, text))
    assert [s.filename for s in selection.snippets] == ["invoice.py"]
    assert selection.sources == ("open",)


async def test_choice_is_reused_near_the_cursor_until_other_sources_change(tmp_path):
    ws, docs = await make(tmp_path)
    uri = open_main(ws, docs, tmp_path)
    first = await select(ws, cursor(uri, MAIN))
    typed = MAIN + "x = 1\n"
    docs[uri] = Doc(typed)
    ws.changed(uri, 5)
    again = await select(ws, cursor(uri, typed))
    assert again.reused and again.snippets == first.snippets
    ws.viewed(cursor(uri, typed))
    # Typing in the file itself, flushed, keeps the choice: the context block (the prompt's start) stays the same.
    assert not ws.tick()
    assert (await select(ws, cursor(uri, typed))).reused
    # A change in another document is a change of the sources: a new choice is made.
    other = (tmp_path / "other.py").as_uri()
    docs[other] = Doc("def area_helper(radius):\n    return radius\n")
    ws.opened(other)
    ws.changed(other, 1)
    assert ws.tick()
    assert not (await select(ws, cursor(uri, typed))).reused
    # Moving far from the place of the choice makes a new one as well; going back reuses the first one (a prefetch
    # below an accepted suggestion and the requests where the user is must not replace each other's block).
    far = typed + "\n" * 20
    docs[uri] = Doc(far)
    here = await select(ws, cursor(uri, far, typed.count("\n")))
    there = await select(ws, cursor(uri, far))
    assert not there.reused
    back = await select(ws, cursor(uri, far, typed.count("\n")))
    assert back.reused and back.snippets == here.snippets


async def test_yanked_text_is_a_source_after_the_flush(tmp_path):
    ws, docs = await make(tmp_path, ContextSettings(workspace_files=False, definitions=False))
    uri = open_main(ws, docs, tmp_path, "result = normalise_vector(")
    on_did_yank(ws, {"textDocument": {"uri": "file:///x/lib.py"},
                     "text": "def normalise_vector(vector_values):\n    return vector_values"})
    ws.tick()
    selection = await select(ws, cursor(uri, docs[uri].text, 0))
    assert selection.sources == ("yank",)


async def test_sources_can_be_turned_off(tmp_path):
    ws, docs = await make(tmp_path, ContextSettings(workspace_files=False, definitions=False, yanks=False))
    uri = open_main(ws, docs, tmp_path)
    ws.yanked("file:///x/lib.py", "def area_of_circle(radius):\n    return 1")
    ws.tick()
    assert (await select(ws, cursor(uri, MAIN))).snippets == ()


async def test_next_lines_block_only_for_prefix_only_models(tmp_path):
    ws, docs = await make(tmp_path, ContextSettings(next_lines=3, workspace_files=False, definitions=False))
    uri = open_main(ws, docs, tmp_path, "x = 1\n\nafter_line_one()\nafter_line_two()\n")
    cur = CursorInfo(uri, "x = 1\n", "\nafter_line_one()\nafter_line_two()\n", 1, "python")
    selection = await select(ws, cur, prefix_only=True)
    assert selection.sources[-1] == "next"
    assert selection.snippets[-1].text == "after_line_one()\nafter_line_two()"
    assert "next" not in (await ws.select(cur, prompt_lines=(0, 2), prefix_only=False)).sources


def test_after_cursor_takes_whole_lines_below_the_cursors_line():
    suffix = "rest(of_line)\nfirst()\n    second()\nthird()\n"
    assert after_cursor(suffix, 2) == "first()\n    second()"
    assert after_cursor(suffix, 15) == "first()\n    second()\nthird()"
    assert after_cursor("rest\n\n  \n", 15) == "" and after_cursor("only the rest of the line", 15) == ""


async def test_prefix_only_models_get_the_block_by_default(tmp_path):
    ws, docs = await make(tmp_path, ContextSettings(workspace_files=False, definitions=False))
    uri = open_main(ws, docs, tmp_path, "x = 1\n\nafter_line_one()\n")
    cur = CursorInfo(uri, "x = 1\n", "\nafter_line_one()\n", 1, "python")
    selection = await select(ws, cur, prefix_only=True)
    assert selection.sources[-1] == "next" and selection.snippets[-1].text == "after_line_one()"


async def test_budget_limits_the_snippets(tmp_path):
    ws, docs = await make(tmp_path, ContextSettings(budget_tokens=10))
    uri = open_main(ws, docs, tmp_path)
    assert (await select(ws, cursor(uri, MAIN))).snippets == ()


def test_workspace_folders_from_initialize_params():
    @dataclass
    class Folder:
        uri: str
        name: str = ""

    @dataclass
    class Params:
        workspace_folders: list | None = None
        root_uri: str | None = None
        root_path: str | None = None

    assert folders_from_initialize(Params([Folder("file:///w/a"), Folder("file:///w/b")])) == ["/w/a", "/w/b"]
    assert folders_from_initialize(Params(None, "file:///r")) == ["/r"]
    assert folders_from_initialize(Params(None, None, "/p")) == ["/p"]


@pytest.mark.parametrize("params", [{}, {"text": "x"}, {"textDocument": {"uri": 3}, "text": "x"}])
async def test_malformed_did_yank_is_ignored(tmp_path, params):
    ws, _ = await make(tmp_path)
    on_did_yank(ws, params)
    ws.tick()
    assert ws.ring.chunks == []


async def test_typing_on_is_not_a_new_viewed_range(tmp_path):
    ws, docs = await make(tmp_path, ContextSettings(workspace_files=False))
    text = "".join(f"line_number_{i} = {i}\n" for i in range(100))
    uri = open_main(ws, docs, tmp_path, text)
    for line in (10, 11, 12, 60):
        ws.viewed(CursorInfo(uri, text, "", line, "python"))
    ws.tick()
    assert sorted(c.start for c in ws.ring.chunks if c.source == "view") == [2, 52]
    assert not ws.tick()  # nothing new: the context (and the model server's cache) stays as it is


async def test_embedding_rerank_blends_in_similarity_and_survives_a_failing_backend(tmp_path):
    ws, docs = await make(tmp_path, ContextSettings(workspace_files=False, definitions=False))
    for name, text in (("a.py", "def shared_name_alpha():\n    return shared_token\n"),
                       ("b.py", "def shared_name_beta():\n    return shared_token\n")):
        docs[f"file:///x/{name}"] = Doc(text)
        ws.opened(f"file:///x/{name}")
    uri = open_main(ws, docs, tmp_path, "value = shared_token\n")
    calls = []

    async def embed(text: str) -> list[float]:  # "beta" texts point the same way as the query
        calls.append(text)
        return [1.0, 0.0] if "beta" in text or text.startswith("value") else [0.0, 1.0]

    ws.embed = embed
    selection = await select(ws, cursor(uri, "value = shared_token\n", 0))
    assert selection.snippets[0].filename == "b.py" and calls

    async def broken(text: str) -> list[float]:
        raise RuntimeError("embedding service down")

    ws.embed = broken
    ws._bump()
    assert len((await select(ws, cursor(uri, "value = shared_token\n", 0))).snippets) == 2


async def test_other_languages_and_unrelated_edits_stay_out(tmp_path):
    """The typing replay's prompts carried recently edited TypeScript above Python and Python above Go, sharing no
    identifier with the cursor: only code of the cursor's language family that shares something with it is kept."""
    ws, docs = await make(tmp_path, ContextSettings(workspace_files=False, definitions=False))
    sources = {
        "file:///w/invoice.ts": ("typescript",
                                 "function computeInvoiceTotal(invoiceLines: number[], taxRate: number) {\n"
                                 "  return invoiceLines.reduce((a, b) => a + b, 0) * (1 + taxRate);\n}\n"),
        "file:///w/billing.go": ("go", "func computeInvoiceTotal(invoiceLines []float64, taxRate float64) float64 {\n"
                                 "\treturn 0\n}\n"),
        "file:///w/weather.js": ("javascript", "function rainfallAverage(readings) {\n  return readings.length;\n}\n"),
    }
    for uri, (language, text) in sources.items():
        docs[uri] = Doc(text, language)
        ws.opened(uri)
        ws.changed(uri, 1)  # recently edited: a ring chunk
    ws.tick()
    uri = "file:///w/main.js"
    text = "function bill(invoiceLines, taxRate) {\n  const total = computeInvoiceTotal("
    docs[uri] = Doc(text, "javascript")
    ws.opened(uri)
    selection = await ws.select(CursorInfo(uri, text, "", 1, "javascript"), prompt_lines=(0, 2))
    assert selection.snippets, "the TypeScript file shares the identifiers and is of the same family"
    assert {s.filename for s in selection.snippets} == {"invoice.ts"}


async def test_nothing_of_a_closed_document_stays(tmp_path: Path):
    """Each soak pass opens its file under a new URI and closes it: the per-document counters go with it."""
    ws, docs = await make(tmp_path)
    for i in range(50):
        uri = (tmp_path / f"pass_{i}.py").as_uri()
        docs[uri] = Doc(MAIN)
        ws.opened(uri)
        ws.changed(uri, 1)
        ws.tick()  # indexes the change: one change of that document alone
        await select(ws, cursor(uri, MAIN))
        del docs[uri]
        ws.closed(uri)
    assert ws._own_changes == {} and ws._docs == {}
