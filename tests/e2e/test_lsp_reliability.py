"""The server under malformed and adversarial traffic (issue 14), driven over pipes by the fuzz harness's raw
JSON-RPC client against its recording loopback OpenAI-compatible backend. No llama-server needed."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any, AsyncIterator

import pytest

from bench.reliability.lsp_fuzz import Backend, Client, ServerProcess, initialize, merge

SURROGATE_DOC = "x = '\ud800'\n"


def settings(endpoint: str, **extra: Any) -> dict[str, Any]:
    """These tests read what one request sends to the model: no prefetch (a loopback endpoint is self-hosted, so it
    would get one after every answer)."""
    return merge({"completion": {"kind": "openai/completion", "model": "m", "api_endpoint": endpoint,
                                 "http": {"read_timeout": 5.0, "max_retries": 0}},
                  "debounce": {"mode": "fixed", "fixed_ms": 0}, "max_tokens": 8, "log_level": "info",
                  "speculation": {"prefetch": False}}, extra)


class Session:
    def __init__(self, client: Client, backend: Backend, server: ServerProcess, endpoint: str):
        self.client, self.backend, self.server, self.endpoint = client, backend, server, endpoint
        self.count = 0

    def open(self, text: str, name: str | None = None, language: str = "python") -> str:
        self.count += 1
        uri = f"file:///work/sample/{name or f'r{self.count}.py'}"
        self.client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language,
                                                                     "version": 1, "text": text}})
        return uri

    async def ask(self, method: str, params: Any = None, **kw: Any) -> dict[str, Any]:
        msg_id = self.client.request(method, params, **kw)
        await self.client.drain()
        return (await self.client.wait_answered(msg_id))["answer"]

    async def complete(self, uri: str, line: int, character: int, invoked: bool = True) -> dict[str, Any]:
        return await self.ask("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": 1 if invoked else 2}})

    async def configure_badly(self, payload: Any) -> str:
        """Send settings that must be refused; the error message the server shows."""
        before = len(self.client.show_messages)
        self.client.notify("workspace/didChangeConfiguration", {"settings": {"infill": payload}})
        await self.client.drain()
        for _ in range(3000):  # counts the popups; the loop is only a safety net
            if len(self.client.show_messages) > before:
                return self.client.show_messages[-1]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no error shown for {payload}")


async def start(encoding: str = "utf-16", **extra: Any) -> Session:
    backend = Backend(random.Random(0), faults=False)
    endpoint = await backend.start()
    server = ServerProcess()
    proc = await server.start()
    client = Client(proc, settings(endpoint, **extra))
    await initialize(client, encoding)
    return Session(client, backend, server, endpoint)


async def stop(session: Session) -> int | None:
    try:
        await session.ask("shutdown")
        session.client.notify("exit", None)
        await session.client.drain()
        code = await asyncio.wait_for(session.server.proc.wait(), 30)
    finally:
        await session.client.stop_reading()
        await session.server.stop()
        await session.backend.close()
    return code


@pytest.fixture
async def session():
    s = await start()
    yield s
    await stop(s)


async def test_lone_surrogate_is_sent_as_replacement_character(session: Session):
    uri = session.open(SURROGATE_DOC)
    answer = await session.complete(uri, 1, 0)
    assert "error" not in answer, answer
    assert session.backend.calls[-1] == ("x = '\ufffd'\n", "")


@pytest.mark.parametrize("params,omit,code,where", [
    ({"textDocument": {"uri": "file:///a.py"}, "position": {"line": 0, "character": 0}}, False, -32602,
     "$.params.context"),
    ({"textDocument": {"uri": "file:///a.py"}, "position": {"line": -1, "character": 0},
      "context": {"triggerKind": 1}}, False, -32602, "$.params.position"),
    (None, True, -32602, ""),
])
async def test_params_that_do_not_fit_get_invalid_params(session: Session, params, omit, code, where):
    answer = await session.ask("textDocument/inlineCompletion", params, omit_params=omit)
    assert answer["error"]["code"] == code and where in answer["error"]["message"]
    assert answer["error"].get("data") is None


async def test_custom_request_without_params_and_hover_without_position(session: Session):
    answer = await session.ask("infill/stats", omit_params=True)
    assert answer["error"]["code"] == -32602
    answer = await session.ask("textDocument/hover", {"textDocument": {"uri": "file:///a.py"}})
    assert answer["error"]["code"] == -32602


async def test_message_without_jsonrpc_version_is_answered(session: Session):
    session.client.next_id += 1
    msg_id = session.client.next_id
    session.client.pending[msg_id] = {"method": "infill/stats"}
    session.client.send({"id": msg_id, "method": "infill/stats", "params": {}})
    answer = (await session.client.wait_answered(msg_id))["answer"]
    assert answer["error"]["code"] == -32600


async def test_malformed_frames_do_not_lose_the_next_message(session: Session):
    session.client.raw(b"{not json")
    session.client.proc.stdin.write(b"content-length: 2\n\n[]")  # lower-case header, LF line ends
    session.client.proc.stdin.write(b"\r\n\r\nX-Junk\r\n\r\n")  # stray lines between frames
    answer = await session.ask("infill/stats", {})
    assert answer["result"]["documents"] == 0
    assert "Traceback" not in session.server.log_text()


async def test_messages_without_a_usable_id_are_answered_with_id_null(session: Session):
    # JSON-RPC 2.0: a parse error or an invalid request whose id cannot be known is answered with "id": null
    session.client.raw(b"{not json")
    session.client.raw(b"[" * 100_000 + b"]" * 100_000)  # too deep for json.loads: its RecursionError ended the server
    session.client.raw(b"[]")
    session.client.send({"jsonrpc": "2.0", "id": [1], "method": "shutdown"})
    session.client.send({"jsonrpc": "2.0", "id": 1.5, "method": "infill/stats", "params": {}})
    answer = await session.ask("infill/stats", {})  # answered after the five: the server reads in order
    assert "result" in answer  # and the `shutdown` with a list for its id did not shut the server down
    assert session.client.unidentified_errors == {-32700: 2, -32600: 3}
    assert session.client.unknown_answers == 0


async def test_a_notification_sent_as_a_request_gets_method_not_found(session: Session):
    uri = session.open("x = 1\n")
    answer = await session.ask("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert answer["error"]["code"] == -32601 and "notification" in answer["error"]["message"]
    assert (await session.ask("infill/stats", {}))["result"]["documents"] == 1  # not run as the notification


async def test_values_of_the_wrong_json_type_are_refused_not_converted(session: Session):
    """cattrs structured a string field with str(value) and an integer field with int(value), and lsprotocol let any
    value through as an id: a didChange with `"text": null` replaced the document with the text "None", `"line": "0"`
    or `true` was served as a line number, and `$/cancelRequest` with `"id": [1]` raised inside pygls. Such params
    are now invalid (a request gets -32602 naming the field, a notification is dropped); a JSON number with an
    integral value (4.0) is still an integer."""
    uri = session.open("x = 1\n")
    for text in [None, 5, ["y"]]:
        session.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                         "contentChanges": [{"text": text}]})
    for position in [{"line": "0", "character": 4}, {"line": True, "character": 4}, {"line": 0, "character": 1.5}]:
        answer = await session.ask("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                                                                     "position": position,
                                                                     "context": {"triggerKind": 1}})
        assert answer["error"]["code"] == -32602 and "$.params.position" in answer["error"]["message"], answer
    assert "error" not in await session.complete(uri, 0, 4.0)
    assert session.backend.calls[-1] == ("x = ", "1\n")  # the document kept its text
    session.client.notify("$/cancelRequest", {"id": [1]})
    assert "result" in await session.ask("infill/stats", {})
    assert "Traceback" not in session.server.log_text()


async def test_an_enumeration_value_that_is_no_json_integer_is_refused_naming_the_field(session: Session):
    """`"triggerKind": 2.0` was served as an automatic request (the hook of `int` took the enumeration, an int
    subclass) and `true` was refused as `invalid value for type` at `trigger_kind`, a name the client never wrote."""
    uri = session.open("x = 1\n")
    for kind in [True, 2.0, "1"]:
        answer = await session.ask("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                                                                     "position": {"line": 0, "character": 4},
                                                                     "context": {"triggerKind": kind}})
        assert answer["error"]["code"] == -32602, answer
        assert f"got {kind!r}" in answer["error"]["message"]
        assert "$.params.context.triggerKind" in answer["error"]["message"]
    calls = len(session.backend.calls)
    assert "error" not in await session.complete(uri, 0, 4)
    assert len(session.backend.calls) == calls + 1


async def test_junk_arguments_to_the_accept_command_are_refused_and_not_counted(session: Session):
    """`infill.accept` counted every call in `infill/stats` whatever it carried (no argument, a number, an object
    without the uri, a second argument). Junk is now refused naming the problem (a request: -32602; copilot.el's
    notification: a log line) and counts nothing; the object of the item's command still counts."""
    uri = session.open("x = 1\n")
    items = (await session.complete(uri, 0, 4))["result"]["items"]
    argument = items[0]["command"]["arguments"][0]
    junk = [[], [5], ["x"], [{"uri": 5, "index": 0, "length": 1}], [{**argument, "index": True}],
            [{**argument, "length": -1}], [{**argument, "source": 3}], [argument, argument]]
    for arguments in junk:
        answer = await session.ask("workspace/executeCommand", {"command": "infill.accept", "arguments": arguments})
        assert answer["error"]["code"] == -32602 and answer["error"]["message"].startswith("infill.accept: "), answer
        session.client.notify("workspace/executeCommand", {"command": "infill.accept", "arguments": arguments})
    answer = await session.ask("workspace/executeCommand", {"command": "infill.accept"})  # no arguments at all
    assert answer["error"]["code"] == -32602
    assert (await session.ask("infill/stats", {}))["result"]["accepted"] == 0
    answer = await session.ask("workspace/executeCommand", {"command": "infill.accept", "arguments": [argument]})
    assert answer == {"jsonrpc": "2.0", "id": answer["id"], "result": None}
    session.client.notify("workspace/executeCommand", {"command": "infill.accept", "arguments": [argument]})
    assert (await session.ask("infill/stats", {}))["result"]["accepted"] == 2
    assert "Traceback" not in session.server.log_text()


async def test_a_shown_notification_without_an_item_is_not_counted(session: Session):
    """`textDocument/didShowCompletion` counted a suggestion shown for any params: `{}`, `{"item": null}`, an item
    without its text. Only an item with its insertText (a string or a snippet's value) counts now."""
    for params in [{}, {"item": None}, {"item": {}}, {"item": {"insertText": 5}}, {"item": "x"}, None, [1]]:
        session.client.notify("textDocument/didShowCompletion", params)
    assert (await session.ask("infill/stats", {}))["result"]["shown"] == 0
    session.client.notify("textDocument/didShowCompletion", {"item": {"insertText": "total"}})
    session.client.notify("textDocument/didShowCompletion", {"item": {"insertText": {"kind": "snippet",
                                                                                     "value": "total$0"}}})
    assert (await session.ask("infill/stats", {}))["result"]["shown"] == 2
    assert "Traceback" not in session.server.log_text()


async def test_a_message_with_members_json_rpc_does_not_name_is_served(session: Session):
    """JSON-RPC names the members it uses and forbids no others, but pygls's message classes refused any other: a
    request got -32602 `JsonRPCRequestMessage.__init__() got an unexpected keyword argument 'trace'` and a didChange
    with one was dropped, so the document no longer matched the editor's."""
    uri = session.open("x = 1\n")
    session.client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "trace": "t-1",
                         "params": {"textDocument": {"uri": uri, "version": 2},
                                    "contentChanges": [{"range": {"start": {"line": 0, "character": 4},
                                                                  "end": {"line": 0, "character": 5}},
                                                        "text": "2"}]}})
    session.client.next_id += 1
    msg_id = session.client.next_id
    session.client.pending[msg_id] = {"method": "infill/stats"}
    session.client.send({"jsonrpc": "2.0", "id": msg_id, "method": "infill/stats", "params": {}, "meta": {"a": 1}})
    answer = (await session.client.wait_answered(msg_id))["answer"]
    assert answer["result"]["documents"] == 1, answer
    assert "error" not in await session.complete(uri, 0, 4)
    assert session.backend.calls[-1] == ("x = ", "2\n")


async def test_a_repeated_initialized_notification_is_ignored(session: Session):
    """A second `initialized` built a second completion service over the first without closing it (with the local
    kind its llama-server kept running beside the new one), and a second workspace tick loop: the counters of the
    first were lost and the tasks grew."""
    uri = session.open("x = 1\n")
    assert "error" not in await session.complete(uri, 0, 4)
    before = (await session.ask("infill/stats", {}))["result"]
    assert before["model_calls"] == 1
    for _ in range(3):
        session.client.notify("initialized", {})
    after = (await session.ask("infill/stats", {}))["result"]
    assert after["model_calls"] == 1 and after["asyncio_tasks"] <= before["asyncio_tasks"] + 1  # three loops more
    assert "error" not in await session.complete(uri, 0, 5)


async def test_a_content_change_with_a_null_range_replaces_the_whole_document(session: Session):
    """`{"range": null, "text": ...}` (an absent range serialized as null) was refused as a ranged change whose
    start and end are no positions; the didChange was dropped and completions read the old text."""
    uri = session.open("x = 1\n")
    session.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": None, "rangeLength": None, "text": "y = 22\n"}]})
    assert "error" not in await session.complete(uri, 0, 4)
    assert session.backend.calls[-1] == ("y = ", "22\n")


async def test_a_change_with_a_null_version_is_applied(session: Session):
    """LSP 3.15 and before let `textDocument.version` of a didChange be null; the change was refused and dropped."""
    uri = session.open("x = 1\n")
    session.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": None},
                                                     "contentChanges": [{"text": "y = 22\n"}]})
    assert "error" not in await session.complete(uri, 0, 4)
    assert session.backend.calls[-1] == ("y = ", "22\n")


@contextlib.asynccontextmanager
async def own_session() -> AsyncIterator[Session]:
    """A session whose test ends the server itself (its shutdown and exit are what the test checks)."""
    s = await start()
    try:
        yield s
    finally:
        await s.client.stop_reading()
        await s.server.stop()
        await s.backend.close()


async def exit_code(s: Session) -> int | None:
    s.client.notify("exit", None)
    await s.client.drain()
    return await asyncio.wait_for(s.server.proc.wait(), 30)


async def test_request_after_shutdown_is_invalid_request():
    async with own_session() as s:
        assert "error" not in await s.ask("shutdown")
        answer = await s.ask("infill/stats", {})
        assert answer["error"]["code"] == -32600
        assert await exit_code(s) == 0


async def test_a_second_initialize_is_refused_and_exit_without_shutdown_exits_with_1():
    # LSP: initialize "may only be sent once"; exit "with error code 1" when no shutdown came before it
    async with own_session() as s:
        answer = await s.ask("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert answer["error"]["code"] == -32600 and "already initialized" in answer["error"]["message"]
        assert "result" in await s.ask("infill/stats", {})  # still serving
        assert await exit_code(s) == 1


async def test_params_nested_too_deeply_get_invalid_params_and_exit_right_after_shutdown_gives_0():
    async with own_session() as s:
        nested: Any = 1
        for _ in range(500):  # json.loads reads it; every later walk over it recursed towards Python's limit
            nested = {"a": nested}
        answer = await s.ask("textDocument/copilotInlineEdit", {"textDocument": {"uri": "file:///a.py", "version": 1},
                                                               "position": {"line": 0, "character": 0},
                                                               "context": nested})
        assert answer["error"]["code"] == -32602 and "nested deeper than" in answer["error"]["message"]
        s.client.request("shutdown")  # and `exit` right behind it, not waiting for the answer: it was received
        assert await exit_code(s) == 0
        assert "Traceback" not in s.server.log_text()


async def test_requests_before_initialize_get_server_not_initialized():
    backend = Backend(random.Random(0), faults=False)
    endpoint = await backend.start()
    server = ServerProcess()
    client = Client(await server.start(), settings(endpoint))
    try:
        client.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///a.py", "languageId": "python",
                                                                "version": 1, "text": "x"}})
        early = client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": "file:///a.py"}, "position": {"line": 0, "character": 1},
            "context": {"triggerKind": 1}})
        await client.drain()
        assert (await client.wait_answered(early))["answer"]["error"]["code"] == -32002
        await initialize(client, "utf-16")
        stats = client.request("infill/stats", {})
        await client.drain()
        assert (await client.wait_answered(stats))["answer"]["result"]["documents"] == 0  # the early open was dropped
    finally:
        await stop(Session(client, backend, server, endpoint))


async def test_a_root_uri_that_is_not_a_uri_is_ignored_and_the_server_serves():
    """pygls parses rootUri when it builds the workspace: "http://[::1" (an unbalanced "[") made `initialize` fail
    with InternalError after the server had counted it, so every later request found no workspace (InternalError)
    and a second initialize was refused: no completion for the whole session. The rootUri is ignored, with a
    warning naming it."""
    backend = Backend(random.Random(0), faults=False)
    endpoint = await backend.start()
    server = ServerProcess()
    client = Client(await server.start(), settings(endpoint))
    try:
        init = client.request("initialize", {"processId": None, "rootUri": "http://[::1",
                                             "initializationOptions": client.settings, "capabilities": {}})
        await client.drain()
        assert "result" in (await client.wait_answered(init))["answer"]
        s = Session(client, backend, server, endpoint)
        client.notify("initialized", {})
        uri = s.open("x = 1\n")
        assert "error" not in await s.complete(uri, 0, 4)
        assert backend.calls[-1] == ("x = ", "1\n")
        assert "rootUri" in server.log_text() and "Traceback" not in server.log_text()
    finally:
        await stop(Session(client, backend, server, endpoint))


BAD = [
    ({"completion": {"kind": "nope/completion"}}, "completion.kind"),
    ({"completion": {"kind": "openai/chat"}}, "completion.kind"),
    ({"completion": {"api_endpoint": "ftp://127.0.0.1/v1"}}, "completion.api_endpoint"),
    ({"completion": {"prompt_template": "<fim>{suffix}"}}, "completion.prompt_template"),
    ({"languages": {"": {"extra_stop_words": ["x"]}}}, "languages"),
    ({"languages": {"python": {"extra_stop_words": [""]}}}, "languages.python.extra_stop_words"),
    ({"completion": {"additional_stop_words": [""]}}, "completion"),
    ({"completion": {"api_endpoint": "http://[::1"}}, "completion.api_endpoint"),  # urllib: a ValueError
    ({"completion": {"api_endpoint": "http://\ud800/v1"}}, "completion.api_endpoint"),  # httpx: InvalidURL
]


async def test_bad_settings_never_stop_completions(session: Session):
    uri = session.open("".join(f"x{i} = {i}\n" for i in range(len(BAD))))
    for line, (bad, key) in enumerate(BAD):
        calls = len(session.backend.calls)
        shown = await session.configure_badly(merge(session.client.settings, bad))
        assert key in shown and "keeping the previous" in shown
        answer = await session.complete(uri, line, 5)  # a new place each time: no cached answer
        assert "error" not in answer, (bad, answer)
        assert len(session.backend.calls) == calls + 1, bad


async def test_an_engine_that_cannot_start_leaves_the_old_one_serving(session: Session, tmp_path):
    """Valid settings whose engine fails to start (a model file that does not exist): the running engine stays."""
    uri = session.open("def f(x):\n    return x\n")
    shown = await session.configure_badly({"completion": {"kind": "local", "model": str(tmp_path / "missing.gguf")}})
    assert "keeping the previous configuration" in shown
    answer = await session.complete(uri, 1, 4)
    assert "error" not in answer, answer
    assert session.backend.calls, "the old engine did not serve the request"


async def test_remote_fim_kind_sends_the_suffix(session: Session):
    uri = session.open("def f(x):\n    return x\n")
    await session.complete(uri, 1, 4)
    assert session.backend.calls[-1] == ("def f(x):\n    ", "return x\n")


async def test_endless_stream_ends_at_the_token_cap(session: Session):
    session.backend.script = ["endless_same"]
    uri = session.open("x = ")
    answer = await session.complete(uri, 0, 4)
    assert "error" not in answer, answer
    assert await _streams_closed(session.backend)


async def test_trickling_stream_ends_at_the_deadline():
    s = await start(request_timeout=0.5)
    try:
        s.backend.script = ["endless_slow"]
        uri = s.open("x = ")
        answer = await s.complete(uri, 0, 4)
        assert "error" not in answer, answer  # what arrived before the deadline is the completion
        assert await _streams_closed(s.backend)
        s.backend.script = ["stall"]  # nothing useful before the deadline: an error naming the setting
        answer = await s.complete(uri, 0, 3)
        assert answer["error"]["code"] == -32803 and "request_timeout" in answer["error"]["message"]
    finally:
        await stop(s)


async def _streams_closed(backend: Backend) -> bool:
    """Counts the backend's open streams down to zero (the server closes them); a safety net, not a speed test."""
    for _ in range(500):
        if backend.open_streams == 0:
            return True
        await asyncio.sleep(0.01)
    return False


async def test_failures_are_logged_quietly_and_never_popped_up(session: Session):
    session.backend.script = ["http500"]
    uri = session.open("x = ")
    answer = await session.complete(uri, 0, 4)
    assert answer["error"]["code"] == -32803 and answer["error"].get("data") is None
    session.client.notify("textDocument/didChange", {"textDocument": {"uri": "file:///never/opened.py", "version": 2},
                                                     "contentChanges": [{"text": "x"}]})
    assert "result" in await session.ask("infill/stats", {})
    assert session.client.show_messages == []
    assert "Traceback" not in session.server.log_text()


async def test_a_pulled_configuration_replaces_what_the_client_pushed_before(session: Session):
    """A change without settings means "pull them": the pulled configuration is the client's whole current one, so
    what it pushed earlier must not override it (the fuzz of issue 27 found a pushed 2-token prefix budget still in
    force after the client had pulled whole-document budgets)."""
    uri = session.open("def f(x):\n    return x\n")
    pushed = merge(session.client.settings, {"completion": {"max_prefix_tokens": 2}})
    session.client.notify("workspace/didChangeConfiguration", {"settings": {"infill": pushed}})
    assert "error" not in await session.complete(uri, 1, 4)
    assert len(session.backend.calls[-1][0]) <= 8  # 2 tokens: 8 characters without a tokenizer
    session.client.settings = merge(session.client.settings, {"completion": {"max_prefix_tokens": 1024}})
    session.client.notify("workspace/didChangeConfiguration", {"settings": None})
    assert "error" not in await session.complete(uri, 1, 5)
    assert session.backend.calls[-1][0] == "def f(x):\n    r"


@pytest.mark.parametrize("uri", ["http://[::1/a.py", "file:///work/sample/\ud800.py", "untitled:Untitled-1", ""])
async def test_documents_with_odd_uris_are_served(session: Session, uri: str):
    """URIs urllib cannot parse (an unbalanced "[") or re-encode (a lone surrogate, legal in JSON) made every
    request for the document fail with InternalError."""
    session.client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                                     "version": 1, "text": "x = 1\n"}})
    session.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "text": "y"}]})
    assert "error" not in await session.complete(uri, 0, 4)
    assert session.backend.calls[-1] == ("y = ", "1\n")
    answer = await session.ask("textDocument/copilotInlineEdit", {"textDocument": {"uri": uri, "version": 2},
                                                                  "position": {"line": 0, "character": 4}})
    assert "result" in answer or (uri == "" and answer["error"]["code"] == -32602), answer
    assert "Traceback" not in session.server.log_text()


@pytest.mark.parametrize("language", [5, None, "", "x" * 100_000])
async def test_a_language_id_that_is_not_a_name_is_plain_text(session: Session, language: Any):
    """lsprotocol passes any JSON number through as a languageId: the document was opened, and every completion
    in it failed with InternalError where the language table lower-cased the id."""
    uri = session.open("x = 1\n", language=language)
    assert "error" not in await session.complete(uri, 0, 4)
    assert session.backend.calls[-1] == ("x = ", "1\n")
    assert "Traceback" not in session.server.log_text()


async def test_two_spellings_of_one_uri_keep_their_own_text(session: Session):
    """Issue 27: a client opened `f.py` with code and `f%2Epy` empty; requests for `f.py` were completed from the
    empty text (an empty prefix). Each spelling is a document of its own; its requests and edits use its text."""
    text = "def area(r):\n    return 3.14 * r * r\n"
    session.open(text, name="f.py")
    session.open("", name="f%2Epy")
    session.client.notify("textDocument/didChange", {"textDocument": {"uri": "file:///work/sample/f.py",
                                                                      "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 0}}, "text": "#"}]})
    assert "error" not in await session.complete("file:///work/sample/f.py", 1, 12)
    assert session.backend.calls[-1] == ("def area(r):\n    return 3", ".14 * r * r\n#")
    session.client.notify("textDocument/didClose", {"textDocument": {"uri": "file:///work/sample/f%2Epy"}})
    assert "error" not in await session.complete("file:///work/sample/f.py", 1, 11)  # still open as f.py
    assert session.backend.calls[-1] == ("def area(r):\n    return ", "3.14 * r * r\n#")
