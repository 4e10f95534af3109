"""The next-edit handler without the LSP transport: documents, settings and a fake engine."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from engine.errors import ConfigError
from engine.next_edit.types import NextEditRequest, Prediction, TextEdit
from lsp_server.config import parse_settings
from lsp_server.documents import UTF16, DocumentStore
from lsp_server.next_edit.feature import NextEdit, relative_path
from lsp_server.next_edit.gate import CompletionGate, Yielded
from lsp_server.next_edit.model import NextEditModel

URI = "file:///w/src/a.py"


class FakeEngine:
    """Answers predict_next_edit with a scripted edit of the request's text; can block until released."""

    def __init__(self, make=None) -> None:
        self.requests: list[NextEditRequest] = []
        self.make = make or (lambda request: Prediction(None, "no change", "sweep"))
        self.release: asyncio.Event | None = None
        self.cancelled = 0

    async def predict_next_edit(self, request, options, ready_timeout, request_timeout) -> Prediction:
        self.requests.append(request)
        if self.release is not None:
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return self.make(request)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _server(settings: dict[str, Any], engine: FakeEngine | None = None):
    documents = DocumentStore()
    current = parse_settings(settings)
    clock = Clock()
    feature = NextEdit(documents, lambda: current, lambda: UTF16, lambda: ["/w"], lambda: engine, clock=clock,
                       model=NextEditModel())
    return documents, feature, clock


def _change(documents: DocumentStore, feature: NextEdit, uri: str, start: tuple[int, int], end: tuple[int, int],
            text: str) -> None:
    """What the server's didChange handler does: history first, then the store."""
    doc = documents.get(uri)
    span = (*start, *end)
    feature.on_change(doc, span, text, UTF16)
    doc.apply_change(text, span, UTF16)
    doc.version = (doc.version or 0) + 1


def _request(uri: str, version: int, line: int, character: int) -> dict[str, Any]:
    return {"textDocument": {"uri": uri, "version": version}, "position": {"line": line, "character": character}}


MODEL = {"next_edit": {"format": "sweep"}}


async def test_propagation_first_and_no_model_call_for_it():
    engine = FakeEngine()
    documents, feature, _ = _server(MODEL, engine)
    documents.open(URI, "size = 1\nprint(size)\n", "python", 1)
    _change(documents, feature, URI, (0, 0), (0, 4), "length")
    result = await feature.inline_edit(_request(URI, 2, 0, 6))
    assert result["edits"][0]["text"] == "length" and result["edits"][0]["range"]["start"] == {"line": 1,
                                                                                              "character": 6}
    assert engine.requests == [] and feature.stats.propagated == 1


async def test_the_model_gets_lf_text_the_budgeted_history_and_its_edit_maps_back_to_crlf():
    def make(request: NextEditRequest) -> Prediction:
        at = request.text.index("pass")
        return Prediction(TextEdit(at, at + 4, "return 2"), "edit", "sweep")

    engine = FakeEngine(make)
    documents, feature, _ = _server(MODEL, engine)
    documents.open(URI, "def f():\r\n    return 1\r\n\r\ndef g():\r\n    pass\r\n", "python", 1)
    _change(documents, feature, URI, (1, 11), (1, 12), "2")
    result = await feature.inline_edit(_request(URI, 2, 1, 12))
    request = engine.requests[0]
    assert "\r" not in request.text and request.path == "src/a.py" and request.cursor == request.text.index("2") + 1
    assert [(e.old, e.new) for e in request.history] == [("    return 1\n", "    return 2\n")]
    assert result["edits"][0]["range"] == {"start": {"line": 4, "character": 4}, "end": {"line": 4, "character": 8}}
    assert feature.stats.model == 1


@pytest.mark.parametrize("text,reason", [("<|file_sep|>x", "sentinel"), ("a\x00b", "junk"),
                                         ("line\n" * 100, "huge_rewrite")])
async def test_model_edits_the_server_will_not_show(text: str, reason: str):
    engine = FakeEngine(lambda request: Prediction(TextEdit(0, 0, text), "edit", "sweep"))
    documents, feature, _ = _server(MODEL, engine)
    documents.open(URI, "x = 1\n", "python", 1)
    assert await feature.inline_edit(_request(URI, 1, 0, 0)) == {"edits": []}
    assert feature.stats.discarded == {reason: 1}


async def test_no_model_for_the_default_completion_model():
    engine = FakeEngine()
    documents, feature, _ = _server({}, engine)
    documents.open(URI, "x = 1\n", "python", 1)
    assert await feature.inline_edit(_request(URI, 1, 0, 0)) == {"edits": []}
    assert engine.requests == [] and feature.stats.discarded == {"nothing_to_propagate": 1}


async def test_a_newer_request_supersedes_the_model_call_of_the_older():
    engine = FakeEngine()
    engine.release = asyncio.Event()
    documents, feature, _ = _server(MODEL, engine)
    documents.open(URI, "x = 1\n", "python", 1)
    older = asyncio.ensure_future(feature.inline_edit(_request(URI, 1, 0, 0)))
    while not engine.requests:
        await asyncio.sleep(0)
    newer = asyncio.ensure_future(feature.inline_edit(_request(URI, 1, 0, 1)))
    assert await older == {"edits": []}
    engine.release.set()
    assert await newer == {"edits": []}
    assert engine.cancelled == 1 and feature.stats.discarded["superseded"] == 1


async def test_gate_model_calls_wait_for_and_yield_to_inline_requests():
    gate = CompletionGate()
    started = asyncio.Event()

    async def call() -> str:
        started.set()
        await asyncio.sleep(3600)
        return "never"

    with gate.inline():
        waiting = asyncio.ensure_future(gate.model_call(call))
        await asyncio.sleep(0)
        assert not started.is_set()  # waits while an inline request is in flight
    await started.wait()
    with gate.inline():  # a new inline request cancels the running call
        with pytest.raises(Yielded):
            await waiting
    assert gate.yielded == 1


async def test_documents_that_are_excluded_off_or_outdated():
    engine = FakeEngine()
    documents, feature, _ = _server({**MODEL, "next_edit": {"format": "sweep", "languages": {"rust": False}}},
                                    engine)
    documents.open("file:///w/.env", "KEY=1\nKEY\n", "dotenv", 1)
    _change(documents, feature, "file:///w/.env", (0, 0), (0, 3), "TOKEN")
    assert len(feature.history) == 0  # never recorded
    assert await feature.inline_edit(_request("file:///w/.env", 2, 0, 0)) == {"edits": []}
    documents.open("file:///w/b.rs", "fn main() {}\n", "rust", 1)
    assert await feature.inline_edit(_request("file:///w/b.rs", 1, 0, 0)) == {"edits": []}
    documents.open(URI, "x = 1\n", "python", 3)
    assert await feature.inline_edit(_request(URI, 2, 0, 0)) == {"edits": []}
    assert engine.requests == []
    assert feature.stats.discarded == {"excluded": 1, "off": 1, "outdated_version": 1}
    with pytest.raises(JsonRpcInvalidParams, match="not open"):
        await feature.inline_edit(_request("file:///w/none.py", 1, 0, 0))
    with pytest.raises(JsonRpcInvalidParams, match="position.character"):
        await feature.inline_edit({"textDocument": {"uri": URI, "version": 3}, "position": {"line": 0}})


async def test_a_rename_in_one_file_is_proposed_in_another_open_file():
    documents, feature, _ = _server({})
    other = "file:///w/src/b.py"
    documents.open(URI, "def load(path):\n    pass\n", "python", 1)
    documents.open(other, "from a import load\nload('x')\n", "python", 1)
    _change(documents, feature, URI, (0, 4), (0, 8), "read")
    result = await feature.inline_edit(_request(other, 1, 0, 0))
    # both uses (on adjacent lines) in one edit
    assert result["edits"][0]["text"] == "read\nread"
    assert result["edits"][0]["range"] == {"start": {"line": 0, "character": 14}, "end": {"line": 1, "character": 4}}


async def test_accept_and_show_count_once_per_known_id():
    documents, feature, _ = _server({})
    documents.open(URI, "size = 1\nprint(size)\n", "python", 1)
    _change(documents, feature, URI, (0, 0), (0, 4), "length")
    edit_id = (await feature.inline_edit(_request(URI, 2, 0, 6)))["edits"][0]["command"]["arguments"][0]
    for _ in range(2):
        feature.did_show({"item": {"command": {"arguments": [edit_id]}}})
        feature.accept([edit_id])
    feature.accept(["unknown"])
    for junk in [[], [edit_id, "more"], [{"id": edit_id}]]:  # refused: not an acceptance
        with pytest.raises(JsonRpcInvalidParams, match="expected one argument"):
            feature.accept(junk)
    assert (feature.stats.shown, feature.stats.accepted) == (1, 1)


def test_settings_validation_names_the_key():
    with pytest.raises(ConfigError, match="next_edit: lines_above"):
        parse_settings({"next_edit": {"lines_above": -1}})
    with pytest.raises(ConfigError, match="next_edit.format"):
        parse_settings({"next_edit": {"format": "zeta9"}})
    with pytest.raises(ConfigError, match="next_edit.model"):
        parse_settings({"next_edit": {"model": {"kind": "no/such-kind"}}})
    camel = parse_settings({"nextEdit": {"debounceMs": 40, "languages": {"python": False}}}).next_edit
    assert camel.debounce_ms == 40 and not camel.on_for("python") and camel.on_for("go")


def test_model_based_next_edits_only_where_a_model_can_do_them():
    from engine.config import ModelConfig

    default = parse_settings({}).next_edit
    assert default.enabled and default.propagation and not default.model_based(ModelConfig())
    assert default.model_based(ModelConfig(model="sweepai/sweep-next-edit-1.5B"))
    assert parse_settings({"next_edit": {"format": "zeta2"}}).next_edit.model_based(ModelConfig())
    assert parse_settings({"next_edit": {"model": {"kind": "local", "model": "x.gguf"}}}).next_edit.model_based(
        ModelConfig())


def test_relative_paths():
    assert relative_path("file:///w/src/a.py", ["/w"]) == "src/a.py"
    assert relative_path("file:///w/src/a.py", ["/w", "/w/src"]) == "a.py"
    assert relative_path("file:///elsewhere/b.py", ["/w"]) == "b.py"


@pytest.mark.parametrize("encoding,column", [("utf-16", 10), ("utf-8", 12), ("utf-32", 9)])
async def test_positions_are_in_the_negotiated_encoding(encoding: str, column: int):
    documents = DocumentStore()
    current = parse_settings({})
    feature = NextEdit(documents, lambda: current, lambda: encoding, lambda: ["/w"], lambda: None, clock=Clock())
    documents.open(URI, "size = 1\ns = '😀'; size\n", "python", 1)
    doc = documents.get(URI)
    feature.on_change(doc, (0, 0, 0, 4), "length", encoding)
    doc.apply_change("length", (0, 0, 0, 4), encoding)
    doc.version = 2
    result = await feature.inline_edit(_request(URI, 2, 0, 6))
    assert result["edits"][0]["range"] == {"start": {"line": 1, "character": column},
                                           "end": {"line": 1, "character": column + 4}}


async def test_a_quoted_literal_is_propagated_to_the_next_string_and_a_comment_line_to_comments():
    documents, feature, _ = _server({})
    documents.open(URI, 'a = cast("MacVersion", x)\nb = MacVersion\nc = cast("MacVersion", y)\n', "python", 1)
    _change(documents, feature, URI, (0, 10), (0, 13), "Apple")
    result = await feature.inline_edit(_request(URI, 2, 0, 20))
    assert result["edits"][0]["range"]["start"] == {"line": 2, "character": 9}  # the string, not the name
    js = "file:///w/src/b.js"
    documents.open(js, "/**\n * @param {any} value\n */\nlet any = 1;\n/**\n * @param {any} arg\n */\n",
                   "javascript", 1)
    _change(documents, feature, js, (1, 11), (1, 14), "*")  # a line inside a block comment
    result = await feature.inline_edit(_request(js, 2, 1, 12))
    edit = result["edits"][0]  # in the next comment, not the code (`any` → `*` anchored by its name: `param {any`)
    assert edit["range"] == {"start": {"line": 5, "character": 4}, "end": {"line": 5, "character": 14}}
    assert edit["text"] == "param {*"


async def test_a_block_condensed_into_a_call_is_condensed_again_where_it_stands_but_a_deletion_is_not_repeated():
    # twenty-first round (instructor): a seven-line try/except replaced by a helper's call, then the same block in the
    # next handler; the change is a large deletion (bulk), which propagation otherwise never repeats
    block = ("        try:\n            yield chunk.text\n        except Exception:\n"
             "            if chunk.candidates[0].content.parts[0].text:\n"
             "                yield chunk.candidates[0].content.parts[0].text\n                continue\n"
             "            raise\n")
    text = "def a(chunk):\n    if chunk:\n" + block + "\n\ndef b(chunk):\n    if chunk:\n" + block
    documents, feature, _ = _server({})
    documents.open(URI, text, "python", 1)
    _change(documents, feature, URI, (2, 0), (9, 0), "        yield extract_chunk_text(chunk)\n")
    assert feature.history.newest().bulk
    result = await feature.inline_edit(_request(URI, 2, 2, 39))
    assert result["edits"][0]["range"] == {"start": {"line": 7, "character": 0}, "end": {"line": 13, "character": 17}}
    assert result["edits"][0]["text"] == "        yield extract_chunk_text(chunk)"
    # the block deleted whole is a deletion, not a rewrite: the other one stays
    documents.open(URI, text, "python", 3)
    _change(documents, feature, URI, (2, 0), (9, 0), "")
    assert feature.history.newest().bulk
    assert await feature.inline_edit(_request(URI, 4, 2, 0)) == {"edits": []}


async def test_a_separate_model_that_is_not_running_never_falls_back_to_the_completion_model():
    engine = FakeEngine()
    documents, feature, _ = _server({"next_edit": {"model": {"kind": "llama.cpp/completion",
                                                             "api_endpoint": "http://127.0.0.1:9"}}}, engine)
    documents.open(URI, "x = 1\n", "python", 1)
    assert await feature.inline_edit(_request(URI, 1, 0, 0)) == {"edits": []}
    assert engine.requests == [] and feature.stats.discarded == {"no_model": 1}


class FakeNesEngine:
    """Stands in for engine.api.Engine in NextEditModel's lifecycle."""

    made: list["FakeNesEngine"] = []

    def __init__(self, config, on_status=None, fail: bool = False) -> None:
        self.config, self.fail, self.started, self.closed = config, fail, False, False
        FakeNesEngine.made.append(self)

    async def start(self) -> None:
        self.started = True

    async def wait_ready(self, timeout: float) -> None:
        if self.config.completion.model == "broken":
            from engine.errors import BackendUnavailable
            raise BackendUnavailable("fake", "cannot start")

    async def close(self) -> None:
        self.closed = True


async def test_the_separate_model_is_started_replaced_ready_first_and_stopped():
    FakeNesEngine.made = []
    model = NextEditModel(FakeNesEngine)  # type: ignore[arg-type]
    base = parse_settings({}).engine

    def ne(name: str | None, enabled: bool = True):
        table = {"enabled": enabled, **({"model": {"kind": "local", "model": name}} if name else {})}
        return parse_settings({"next_edit": table}).next_edit

    await model.configure(base, ne("a.gguf"), 1.0)
    first = model.engine
    assert first is not None and first.started and model.engine_for(ne("a.gguf"), None) is first
    await model.configure(base, ne("a.gguf"), 1.0)
    assert model.engine is first and len(FakeNesEngine.made) == 1  # unchanged: kept
    with pytest.raises(Exception, match="cannot start"):
        await model.configure(base, ne("broken"), 1.0)
    assert model.engine is first and not first.closed and FakeNesEngine.made[-1].closed  # the old one serves on
    await model.configure(base, ne("b.gguf"), 1.0)
    assert model.engine is not first and first.closed
    second = model.engine
    await model.configure(base, ne(None), 1.0)  # back to the completion model
    assert model.engine is None and second.closed
    assert model.engine_for(ne(None), "completion") == "completion"  # type: ignore[arg-type]


async def test_closing_a_document_drops_its_hunks_and_request_state():
    """Documents come and go all session (the soak opens each pass under a new URI): nothing of a closed one stays."""
    documents = DocumentStore()
    current = parse_settings({})
    feature = NextEdit(documents, lambda: current, lambda: UTF16, lambda: ["/w"], lambda: None, clock=Clock())
    for i in range(50):
        uri = f"file:///w/src/pass_{i}.py"
        documents.open(uri, "size = 1\n", "python", 1)
        doc = documents.get(uri)
        feature.on_change(doc, (0, 0, 0, 4), "length", UTF16)
        doc.apply_change("length", (0, 0, 0, 4), UTF16)

        async def work() -> None:
            return None

        await feature._sessions.run(uri, work)  # what a model-based request leaves per document
        feature.did_focus({"textDocument": {"uri": uri}})
        documents.close(uri)
        feature.closed(uri)
    assert len(feature.history) == 0 and feature._sessions._docs == {} and feature.focused is None


# --- prefetch after a shown model edit (lsp_server/next_edit/prefetch.py) -----------------------------------------

MODEL_ONLY = {"next_edit": {"format": "sweep", "propagation": False}}
THREE = "def f():\n    return 1\n\ndef g():\n    pass\n\ndef h():\n    pass\n"


def _next_pass(request: NextEditRequest) -> Prediction:
    """The scripted model: the next `pass` becomes `return 2`, or no change."""
    at = request.text.find("pass")
    if at < 0:
        return Prediction(None, "no change", "sweep")
    return Prediction(TextEdit(at, at + 4, "return 2"), "edit", "sweep")


async def _shown(feature: NextEdit, result: dict[str, Any]) -> dict[str, Any]:
    edit = result["edits"][0]
    feature.did_show({"item": {"command": edit["command"]}})
    return edit


def _accept(documents: DocumentStore, feature: NextEdit, edit: dict[str, Any]) -> None:
    """What a client does on accept: applies the edit (a didChange) and runs its command."""
    rng = edit["range"]
    _change(documents, feature, URI, (rng["start"]["line"], rng["start"]["character"]),
            (rng["end"]["line"], rng["end"]["character"]), edit["text"])
    feature.accept(edit["command"]["arguments"])


async def _settled(engine: FakeEngine, calls: int) -> None:
    for _ in range(100):
        if len(engine.requests) >= calls:
            return
        await asyncio.sleep(0)


async def test_a_shown_model_edit_prefetches_the_next_and_the_accept_uses_it():
    engine = FakeEngine(_next_pass)
    documents, feature, _ = _server(MODEL_ONLY, engine)
    documents.open(URI, THREE, "python", 1)
    _change(documents, feature, URI, (1, 11), (1, 12), "2")
    first = await _shown(feature, await feature.inline_edit(_request(URI, 2, 1, 12)))
    assert first["text"] == "return 2" and first["range"]["start"] == {"line": 4, "character": 4}
    await _settled(engine, 2)
    ahead = engine.requests[1]  # made on show, for the text the edit makes, the cursor at its end
    assert ahead.text == THREE.replace("1", "2").replace("pass", "return 2", 1)
    assert ahead.cursor == ahead.text.index("return 2", ahead.text.index("def g")) + len("return 2")
    # the accepted edit is in its history as the accept's didChange will put it (here coalesced with the user's)
    assert ahead.history[-1].new == "    return 2\n\ndef g():\n    return 2\n"
    assert len(feature.history) == 1  # the real history is untouched until the accept's didChange
    _accept(documents, feature, first)
    second = (await feature.inline_edit(_request(URI, 3, 4, 12)))["edits"][0]
    assert second["text"] == "return 2" and second["range"]["start"] == {"line": 7, "character": 4}
    assert len(engine.requests) == 2  # no third call: the prefetched prediction answered
    assert (feature.stats.prefetched, feature.stats.prefetch_used, feature.stats.model_calls) == (1, 1, 2)


async def test_a_running_prefetch_is_awaited_by_the_request_after_the_accept():
    engine = FakeEngine(_next_pass)
    documents, feature, _ = _server(MODEL_ONLY, engine)
    documents.open(URI, THREE, "python", 1)
    _change(documents, feature, URI, (1, 11), (1, 12), "2")
    first = await feature.inline_edit(_request(URI, 2, 1, 12))
    engine.release = asyncio.Event()
    edit = await _shown(feature, first)
    await _settled(engine, 2)
    assert len(engine.requests) == 2  # the prefetch is with the model, not answered yet
    _accept(documents, feature, edit)
    answer = asyncio.ensure_future(feature.inline_edit(_request(URI, 3, 4, 12)))
    await asyncio.sleep(0)
    assert not answer.done()
    engine.release.set()
    assert (await answer)["edits"][0]["range"]["start"] == {"line": 7, "character": 4}
    assert len(engine.requests) == 2 and engine.cancelled == 0 and feature.stats.prefetch_used == 1


async def test_a_prefetch_for_another_text_or_cursor_is_not_used():
    engine = FakeEngine(_next_pass)
    documents, feature, _ = _server(MODEL_ONLY, engine)
    documents.open(URI, THREE, "python", 1)
    _change(documents, feature, URI, (1, 11), (1, 12), "2")
    await _shown(feature, await feature.inline_edit(_request(URI, 2, 1, 12)))
    await _settled(engine, 2)
    _change(documents, feature, URI, (0, 4), (0, 5), "F")  # the user did something else: the text differs
    assert (await feature.inline_edit(_request(URI, 3, 0, 5)))["edits"][0]["range"]["start"]["line"] == 4
    assert len(engine.requests) == 3 and feature.stats.prefetch_used == 0
    # the same text, but the cursor far outside the window the prefetch's model rewrote (10 lines around it)
    documents.close(URI)
    feature.closed(URI)
    far = "\n" * 40 + THREE
    documents.open(URI, far, "python", 1)
    _change(documents, feature, URI, (41, 11), (41, 12), "2")
    edit = await _shown(feature, await feature.inline_edit(_request(URI, 2, 41, 12)))
    await _settled(engine, 5)
    _accept(documents, feature, edit)
    await feature.inline_edit(_request(URI, 3, 0, 0))
    assert len(engine.requests) == 6 and feature.stats.prefetch_used == 0


async def test_no_prefetch_when_off_or_for_a_propagated_edit():
    engine = FakeEngine(_next_pass)
    documents, feature, _ = _server({"next_edit": {"format": "sweep", "propagation": False, "prefetch": False}},
                                    engine)
    documents.open(URI, THREE, "python", 1)
    _change(documents, feature, URI, (1, 11), (1, 12), "2")
    await _shown(feature, await feature.inline_edit(_request(URI, 2, 1, 12)))
    await _settled(engine, 2)
    assert len(engine.requests) == 1 and feature.stats.prefetched == 0
    engine = FakeEngine(_next_pass)
    documents, feature, _ = _server(MODEL, engine)
    documents.open(URI, "size = 1\nprint(size)\n", "python", 1)
    _change(documents, feature, URI, (0, 0), (0, 4), "length")
    await _shown(feature, await feature.inline_edit(_request(URI, 2, 0, 6)))  # propagated: instant, no model
    await _settled(engine, 1)
    assert engine.requests == [] and feature.stats.prefetched == 0


async def test_no_prefetch_for_a_file_excluded_since_its_edit_was_proposed():
    engine = FakeEngine(_next_pass)
    documents = DocumentStore()
    current = [parse_settings(MODEL_ONLY)]
    feature = NextEdit(documents, lambda: current[0], lambda: UTF16, lambda: ["/w"], lambda: engine, clock=Clock(),
                       model=NextEditModel())
    documents.open(URI, THREE, "python", 1)
    _change(documents, feature, URI, (1, 11), (1, 12), "2")
    result = await feature.inline_edit(_request(URI, 2, 1, 12))
    current[0] = parse_settings({**MODEL_ONLY, "exclude": ["src/*.py"]})
    feature.on_settings()
    await _shown(feature, result)
    await _settled(engine, 2)
    assert len(engine.requests) == 1 and feature.stats.prefetched == 0  # its text never reached the model again
