"""Next-edit suggestions through the real server over stdio, against a scripted loopback model (no llama-server).

The loopback answers llama-server's `/completion` with what the test scripts: the true rewrite of the editable window
(read back from the sweep prompt it received), junk, leaked markers, a huge rewrite, or a stream that never ends
(for cancellation). Requests are sent as copilot-lsp sends them (`{textDocument:{uri,version}, position}`) and as
sidekick.nvim does (with `context:{triggerKind:2}`)."""

from __future__ import annotations

import asyncio
import re
from typing import Any, Callable

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol.json_rpc import JsonRPCNotification
from pytest_lsp import LanguageClient

from tests.engine.backends.fake_server import FakeServer, Request, Responder, llama_server_rest
from tests.engine.backends.vendor_formats import SSE, llama_content, sse

from .lsp_support import capabilities, config, edit, open_doc, record_status, remote_options, stats, wait_status

pytestmark = pytest.mark.asyncio(loop_scope="module")

METHOD = "textDocument/copilotInlineEdit"
ACCEPT = "infill.acceptInlineEdit"
_CURRENT = re.compile(r"<\|file_sep\|>current/[^\n]*\n(.*?)<\|file_sep\|>updated/", re.S)


class Model:
    """What the loopback model answers to `/completion`: `rewrite(window) -> output`, or a stall."""

    def __init__(self) -> None:
        self.rewrite: Callable[[str], str] | None = None
        self.stall = False
        self.prompts: list[str] = []

    async def __call__(self, request: Request, responder: Responder) -> None:
        if request.path == "/completion":
            prompt = request.json()["prompt"]
            self.prompts.append(prompt)
            await responder.start(content_type=SSE)
            if self.stall:  # one token, then nothing until the client closes the stream
                await responder.send(llama_content("x"))
                return
            match = _CURRENT.search(prompt)
            output = self.rewrite(match.group(1) if match else "") if self.rewrite else ""
            await responder.send(llama_content(output) + sse({"index": 0, "content": "", "stop": True,
                                                              "stop_type": "word", "stopping_word": "<|file_sep|>",
                                                              "tokens_predicted": 3}))
            await responder.end()
        elif request.path == "/infill":
            await responder.start(content_type=SSE)
            await responder.send(llama_content("Y") + sse({"index": 0, "content": "", "stop": True,
                                                           "stop_type": "eos", "tokens_predicted": 1}))
            await responder.end()
        else:
            await llama_server_rest(request, responder)


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient):
    model = Model()
    fake = FakeServer(model)
    url = await fake.start()
    record_status(lsp_client)
    options = remote_options(url, max_tokens=4, speculation={"prefetch": False}, context={"enabled": False},
                             next_edit={"model": {"kind": "llama.cpp/completion", "api_endpoint": url}})
    options["completion"]["prompt_template"] = "{prefix}<fill>{suffix}"
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities(["utf-16"]), initialization_options=options))
    await wait_status(lsp_client, "ready")
    lsp_client.fake, lsp_client.model, lsp_client.init_result = fake, model, result  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()
    await fake.close()


@pytest.fixture(autouse=True)
def fresh_model(client: LanguageClient):
    model: Model = client.model  # type: ignore[attr-defined]
    model.rewrite, model.stall = None, False


def plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def params(uri: str, version: int, line: int, character: int, trigger: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"textDocument": {"uri": uri, "version": version},
                           "position": {"line": line, "character": character}}
    if trigger is not None:
        out["context"] = {"triggerKind": trigger}
    return out


async def inline_edit(client: LanguageClient, uri: str, version: int, line: int, character: int,
                      trigger: int | None = None, msg_id: str | None = None) -> dict[str, Any]:
    kwargs = {"msg_id": msg_id} if msg_id else {}
    return plain(await client.protocol.send_request_async(METHOD, params(uri, version, line, character, trigger),
                                                          **kwargs))


async def next_edit_stats(client: LanguageClient) -> dict[str, Any]:
    return plain((await stats(client))["next_edit"])


def notify_raw(client: LanguageClient, method: str, params: Any) -> None:
    """A notification for a method LSP defines as a request (pygls's own `notify` refuses to build one)."""
    client.protocol._send_data(JsonRPCNotification(method=method, params=params, jsonrpc="2.0"))


def rename_in(client: LanguageClient, uri: str, version: int, line: int, start: int, end: int, text: str) -> None:
    edit(client, uri, version, line, start, text, end=(line, end))


async def test_the_initialize_result_advertises_next_edits(client: LanguageClient):
    caps = client.init_result.capabilities  # type: ignore[attr-defined]
    assert plain(caps.experimental)["infill"]["nextEdit"] == {"method": METHOD, "acceptCommand": ACCEPT}
    assert ACCEPT in caps.execute_command_provider.commands


async def test_a_rename_is_propagated_to_the_next_use_copilot_lsp_shape(client: LanguageClient):
    text = "def area(width, height):\n    return width * height\n\nprint(area(2, 3))\n"
    uri = open_doc(client, text)
    rename_in(client, uri, 2, 0, 9, 14, "w")  # width → w in the signature
    before = await next_edit_stats(client)
    prompts = len(client.model.prompts)  # type: ignore[attr-defined]
    result = await inline_edit(client, uri, 2, 0, 10)
    assert result == {"edits": [{
        "text": "w",
        "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 16}},
        "textDocument": {"uri": uri, "version": 2},
        "command": {"title": "Accept next edit", "command": ACCEPT, "arguments": [result["edits"][0]["command"][
            "arguments"][0]]}}]}
    after = await next_edit_stats(client)
    assert after["propagated"] == before["propagated"] + 1 and after["requests"] == before["requests"] + 1
    assert len(client.model.prompts) == prompts  # type: ignore[attr-defined]  # instantly: no model call


async def test_sidekick_shape_and_chaining_through_accept_in_both_forms(client: LanguageClient):
    text = "total = 0\nprint(total)\n\nsave(total)\n"  # uses two lines apart: two edits (adjacent ones are one)
    uri = open_doc(client, text)
    rename_in(client, uri, 2, 0, 0, 5, "amount")
    before = await next_edit_stats(client)
    first = (await inline_edit(client, uri, 2, 0, 6, trigger=2))["edits"][0]
    assert first["range"]["start"] == {"line": 1, "character": 6} and first["text"] == "amount"
    client.protocol.notify("textDocument/didShowInlineEdit", {"item": {"command": first["command"]}})
    # the client applies the edit and runs the command (a request, as Neovim's exec_cmd does)
    rename_in(client, uri, 3, 1, 6, 11, "amount")
    answer = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=ACCEPT, arguments=first["command"]["arguments"]))
    assert answer is None
    second = (await inline_edit(client, uri, 3, 1, 12, trigger=2))["edits"][0]
    assert second["range"]["start"] == {"line": 3, "character": 5} and second["text"] == "amount"
    rename_in(client, uri, 4, 3, 5, 10, "amount")
    # copilot.el sends the command as a notification
    notify_raw(client, types.WORKSPACE_EXECUTE_COMMAND, {"command": ACCEPT,
                                                         "arguments": second["command"]["arguments"]})
    assert await inline_edit(client, uri, 4, 3, 11) == {"edits": []}  # no occurrence left
    after = await next_edit_stats(client)
    assert after["accepted"] == before["accepted"] + 2
    assert after["shown"] == before["shown"] + 1


async def test_junk_arguments_to_the_accept_command_are_refused_and_not_counted(client: LanguageClient):
    """`["<id>", {"x": 2}]` counted as accepting the edit; no argument or one that is no id was a silent no-op.
    Now each is refused naming the problem (a request: -32602; a notification: a log line) and counts nothing."""
    uri = open_doc(client, "total = 0\nprint(total)\n")
    rename_in(client, uri, 2, 0, 0, 5, "sum_")
    edit_id = (await inline_edit(client, uri, 2, 0, 4))["edits"][0]["command"]["arguments"][0]
    before = await next_edit_stats(client)
    for arguments in [[edit_id, {"x": 2}], [edit_id, edit_id], [], [{"id": edit_id}], [True], [1.5], [None]]:
        with pytest.raises(JsonRpcException) as refused:
            await client.workspace_execute_command_async(types.ExecuteCommandParams(command=ACCEPT,
                                                                                    arguments=arguments))
        assert refused.value.code == -32602 and ACCEPT in refused.value.message
        notify_raw(client, types.WORKSPACE_EXECUTE_COMMAND, {"command": ACCEPT, "arguments": arguments})
    assert (await next_edit_stats(client))["accepted"] == before["accepted"]
    assert await client.workspace_execute_command_async(types.ExecuteCommandParams(command=ACCEPT,
                                                                                   arguments=[edit_id])) is None
    assert (await next_edit_stats(client))["accepted"] == before["accepted"] + 1


async def test_an_outdated_version_gets_no_edit(client: LanguageClient):
    uri = open_doc(client, "count = 1\nprint(count)\n")
    rename_in(client, uri, 2, 0, 0, 5, "n")
    assert await inline_edit(client, uri, 1, 0, 1) == {"edits": []}
    assert (await inline_edit(client, uri, 2, 0, 1))["edits"]


async def test_bad_input_gets_a_clear_answer(client: LanguageClient):
    with pytest.raises(JsonRpcException) as unopened:
        await inline_edit(client, "file:///work/sample/never-opened.py", 1, 0, 0)
    assert unopened.value.code == -32602 and "not open" in unopened.value.message
    uri = open_doc(client, "a = 1\n")
    with pytest.raises(JsonRpcException) as no_version:
        await client.protocol.send_request_async(METHOD, {"textDocument": {"uri": uri},
                                                          "position": {"line": 0, "character": 0}})
    assert no_version.value.code == -32602 and "textDocument.version" in no_version.value.message
    with pytest.raises(JsonRpcException) as negative:
        await inline_edit(client, uri, 1, -1, 0)
    assert negative.value.code == -32602 and "position.line" in negative.value.message
    # a position past the end is clamped (LSP's rule), never an error
    assert "edits" in await inline_edit(client, uri, 1, 99, 99)
    client.protocol.notify("textDocument/didFocus", {"textDocument": {"uri": uri}})
    client.protocol.notify("textDocument/didShowInlineEdit", {"item": {}})  # nothing to count, no failure
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command=ACCEPT, arguments=["nope"]))
    assert (await next_edit_stats(client))["requests"] > 0  # still serving


async def test_an_excluded_file_never_reaches_the_model_nor_the_history(client: LanguageClient):
    model: Model = client.model  # type: ignore[attr-defined]
    model.rewrite = lambda window: window.replace("1", "2")
    uri = open_doc(client, "API_KEY = 1\nOTHER = API_KEY\n", name=".env")
    rename_in(client, uri, 2, 0, 0, 7, "TOKEN")
    prompts = len(model.prompts)
    assert await inline_edit(client, uri, 2, 0, 0) == {"edits": []}
    assert len(model.prompts) == prompts
    # nor does its edit show in another file's prompt
    other = open_doc(client, "def f():\n    pass\n")
    await inline_edit(client, other, 1, 1, 4)
    assert all("API_KEY" not in p and "TOKEN" not in p for p in model.prompts[prompts:])


async def test_the_model_answers_when_there_is_nothing_to_propagate(client: LanguageClient):
    model: Model = client.model  # type: ignore[attr-defined]
    text = "def f(x):\n    return x\n\ndef g(y):\n    return y\n"
    uri = open_doc(client, text)
    edit(client, uri, 2, 1, 12, " + 1")  # new code, not a substitution
    model.rewrite = lambda window: window.replace("return y\n", "return y + 1\n")
    prompts = len(model.prompts)
    result = await inline_edit(client, uri, 2, 1, 16)
    sent = model.prompts[prompts:]
    assert len(sent) == 1 and "<|file_sep|>current/" in sent[0] and "return x + 1" in sent[0]  # the sweep form
    assert "original:\n" in sent[0] and "updated:\n" in sent[0]  # the history
    assert result["edits"][0]["text"] == " + 1"
    assert result["edits"][0]["range"]["start"] == {"line": 4, "character": 12}
    assert (await next_edit_stats(client))["model"] >= 1


async def test_a_shown_model_edit_prefetches_the_next_one_and_the_accept_gets_it_without_a_model_call(
        client: LanguageClient):
    model: Model = client.model  # type: ignore[attr-defined]
    text = "def f(x):\n    return x\n\ndef g(y):\n    return y\n\ndef h(z):\n    return z\n"
    uri = open_doc(client, text)
    edit(client, uri, 2, 1, 12, " + 1")  # new code: the model answers
    model.rewrite = lambda window: re.sub(r"return (\w)\n", r"return \1 + 1\n", window, count=1)
    prompts, before = len(model.prompts), await next_edit_stats(client)
    first = (await inline_edit(client, uri, 2, 1, 16))["edits"][0]
    assert first["range"]["start"] == {"line": 4, "character": 12} and first["text"] == " + 1"
    client.protocol.notify("textDocument/didShowInlineEdit", {"item": {"command": first["command"]}})
    for _ in range(600):  # the prefetch: a second prompt, for the text the shown edit makes
        if len(model.prompts) >= prompts + 2:
            break
        await asyncio.sleep(0.05)
    window = _CURRENT.search(model.prompts[prompts + 1])
    assert window is not None and "return y + 1\n" in window.group(1)
    edit(client, uri, 3, 4, 12, " + 1")  # the client applies the edit and runs its command
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=ACCEPT, arguments=first["command"]["arguments"]))
    second = (await inline_edit(client, uri, 3, 4, 16))["edits"][0]
    assert second["range"]["start"] == {"line": 7, "character": 12} and second["text"] == " + 1"
    assert len(model.prompts) == prompts + 2  # the prefetched prediction answered
    after = await next_edit_stats(client)
    assert (after["prefetched"], after["prefetch_used"]) == (before["prefetched"] + 1, before["prefetch_used"] + 1)


@pytest.mark.parametrize("output,reason", [
    ("", "no_change"),
    ("<|file_sep|>garbage NO_EDITS", None),
    ("x" * 20000, None),
    ("\x00\x01 random junk \ud7ff", None),
])
async def test_junk_from_the_model_is_no_edit_and_the_server_keeps_serving(client: LanguageClient, output: str,
                                                                          reason: str | None):
    model: Model = client.model  # type: ignore[attr-defined]
    uri = open_doc(client, "def f(x):\n    return x\n")
    edit(client, uri, 2, 1, 12, " * 2")
    model.rewrite = lambda window: output
    before = await next_edit_stats(client)
    assert await inline_edit(client, uri, 2, 1, 16) == {"edits": []}
    after = await next_edit_stats(client)
    assert sum(after["discarded"].values()) == sum(before["discarded"].values()) + 1
    if reason:
        assert after["discarded"].get(reason, 0) == before["discarded"].get(reason, 0) + 1


async def _stalled_request(client: LanguageClient, added: str, msg_id: str | None = None
                           ) -> tuple[str, asyncio.Future]:
    """A next-edit request whose model call is streaming (one token, then nothing): (uri, the pending answer)."""
    model: Model = client.model  # type: ignore[attr-defined]
    fake: FakeServer = client.fake  # type: ignore[attr-defined]
    uri = open_doc(client, "def f(x):\n    return x\n")
    edit(client, uri, 2, 1, 12, added)
    model.stall = True
    fake.client_closed.clear()
    count = len(model.prompts)
    pending = asyncio.ensure_future(inline_edit(client, uri, 2, 1, 16, msg_id=msg_id))
    for _ in range(3000):  # a safety net, not a speed assertion
        if len(model.prompts) > count:
            model.stall = False
            return uri, pending
        await asyncio.sleep(0.01)
    raise AssertionError("the model never received the prompt")


async def _wait_closed(fake: FakeServer) -> None:
    await asyncio.wait_for(fake.client_closed.wait(), 60)  # a safety net


async def test_cancel_stops_the_model_stream(client: LanguageClient):
    _, pending = await _stalled_request(client, " - 1", msg_id="nes-cancel")
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="nes-cancel"))
    with pytest.raises(JsonRpcException) as cancelled:
        await pending
    assert cancelled.value.code == -32800
    await _wait_closed(client.fake)  # type: ignore[attr-defined]  # the stream was closed: llama-server would stop


async def test_an_inline_completion_request_makes_the_model_call_yield(client: LanguageClient):
    fake: FakeServer = client.fake  # type: ignore[attr-defined]
    before = await next_edit_stats(client)
    uri, pending = await _stalled_request(client, " / 2")
    completion = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=1, character=16),
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked)))
    assert isinstance(completion, types.InlineCompletionList)
    assert await pending == {"edits": []}
    await _wait_closed(fake)
    after = await next_edit_stats(client)
    assert after["discarded"].get("yielded", 0) == before["discarded"].get("yielded", 0) + 1


async def test_requests_during_a_burst_of_changes_are_all_answered(client: LanguageClient):
    model: Model = client.model  # type: ignore[attr-defined]
    model.rewrite = lambda window: window
    uri = open_doc(client, "name = 1\nprint(name)\nprint(name)\n")
    asked = []
    for version in range(2, 8):
        edit(client, uri, version, 0, 4, "e")  # typing "nameeee…"
        asked.append(version - 1 if version % 2 else version)  # every other request is for the previous version
    results = await asyncio.gather(*[inline_edit(client, uri, v, 0, 5) for v in asked], return_exceptions=True)
    for version, result in zip(asked, results):
        assert isinstance(result, dict) and "edits" in result, result
        if version % 2:
            assert result == {"edits": []}  # outdated when it was sent
        for item in result["edits"]:  # a current one may be outdated by the time it is served: no edit then
            assert item["textDocument"] == {"uri": uri, "version": version}
