"""Engine.predict_next_edit against a scripted loopback llama-server and a scripted chat server: the prompt that
reaches `/completion` (or the chat endpoint), the edit that comes back, the discard reasons, and cancellation
closing the HTTP request."""

from __future__ import annotations

import asyncio
import json

from engine.api import Engine, check_next_edit_model
from engine.config import EngineConfig, HttpSettings, ModelConfig
from engine.next_edit.formats import render
from engine.next_edit.types import EditEvent, NextEditOptions, NextEditRequest, TextEdit

HTTP = HttpSettings(connect_timeout=5.0, read_timeout=10.0, max_retries=0)

TEXT = "def area(width, height):\n    return width * height\n\nprint(area(2, 3))\nprint(area(4, 5))\n"
REQUEST = NextEditRequest(
    path="src/shapes.py", language="python", text=TEXT, cursor=TEXT.index("print"),
    history=(EditEvent("src/shapes.py", 0, "def area(w, h):\n    return w * h\n",
                       "def area(width, height):\n    return width * height\n"),))
REWRITE = TEXT.replace("area(4, 5)", "area(width=4, height=5)")


def llama_events(pieces: list[str], stop_type: str = "eos") -> list[str]:
    events = [json.dumps({"content": p, "stop": False, "tokens_predicted": i + 1, "tokens_evaluated": 50})
              for i, p in enumerate(pieces)]
    events.append(json.dumps({"content": "", "stop": True, "stop_type": stop_type, "tokens_predicted": len(pieces),
                              "tokens_evaluated": 50, "timings": {"prompt_n": 50, "predicted_n": len(pieces)}}))
    return [f"data: {e}\n\n" for e in events]


def completion_server(pieces: list[str], stop_type: str = "eos"):
    async def handler(request, responder):
        await responder.start()
        for event in llama_events(pieces, stop_type):
            await responder.send(event)
        await responder.end()
    return handler


def engine_for(base: str, kind: str = "llama.cpp/completion", model: str | None = None) -> Engine:
    return Engine(EngineConfig(completion=ModelConfig(kind=kind, api_endpoint=base, model=model, http=HTTP)))


def chunks(text: str, size: int = 7) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


async def predict(engine: Engine, options: NextEditOptions = NextEditOptions(format="sweep"),
                  request: NextEditRequest = REQUEST):
    try:
        await engine.start()
        return await engine.predict_next_edit(request, options, ready_timeout=10, request_timeout=10)
    finally:
        await engine.close()


async def test_sweep_prompt_reaches_completion_and_the_rewrite_becomes_one_edit(serve):
    server, base = await serve(completion_server(chunks(REWRITE + "<|file_sep|>junk after the stop")))
    prediction = await predict(engine_for(base))
    body = server.requests[0].json()
    assert server.requests[0].path == "/completion"
    assert body["prompt"] == render(REQUEST, NextEditOptions(), "sweep").text
    assert body["temperature"] == 0.0 and body["cache_prompt"] is True and body["n_predict"] == 512
    assert prediction.reason == "edit" and prediction.format == "sweep"
    start = TEXT.index("4, 5")
    assert prediction.edit == TextEdit(start, start + len("4, "), "width=4, height=")
    applied = TEXT[:prediction.edit.start] + prediction.edit.text + TEXT[prediction.edit.end:]
    assert applied == REWRITE
    assert prediction.raw == REWRITE  # cut before the stop word


async def test_infill_kind_still_sends_the_raw_prompt_to_completion(serve):
    server, base = await serve(completion_server(chunks(REWRITE)))
    prediction = await predict(engine_for(base, kind="llama.cpp/infill"))
    assert [r.path for r in server.requests] == ["/completion"]
    assert prediction.reason == "edit"


async def test_zeta2_needs_its_end_marker(serve):
    server, base = await serve(completion_server(chunks(REWRITE + ">>>>>>> UPDATED\n")))
    prediction = await predict(engine_for(base), NextEditOptions(format="zeta2"))
    assert server.requests[0].json()["prompt"].endswith("=======\n<[fim-middle]>")
    assert prediction.reason == "edit" and prediction.format == "zeta2"

    server, base = await serve(completion_server(chunks(REWRITE)))  # ended on EOS without the marker
    prediction = await predict(engine_for(base), NextEditOptions(format="zeta2"))
    assert prediction.edit is None and prediction.reason == "truncated"

    server, base = await serve(completion_server(["NO_EDITS\n", ">>>>>>> UPDATED\n"]))
    prediction = await predict(engine_for(base), NextEditOptions(format="zeta2"))
    assert prediction.edit is None and prediction.reason == "no change"


async def test_hitting_max_tokens_is_truncated(serve):
    server, base = await serve(completion_server(chunks(REWRITE[:60]), stop_type="limit"))
    prediction = await predict(engine_for(base))
    assert prediction.edit is None and prediction.reason == "truncated"


async def test_auto_format_follows_the_model_name(serve):
    server, base = await serve(completion_server(chunks(REWRITE + ">>>>>>> UPDATED\n")))
    prediction = await predict(engine_for(base, model="zed-industries/zeta-2"), NextEditOptions())
    assert prediction.format == "zeta2" and prediction.reason == "edit"


async def test_model_errors_are_a_reason_not_an_exception(serve):
    async def fail(request, responder):
        await responder.full(400, {"error": {"message": "bad request"}})
    server, base = await serve(fail)
    prediction = await predict(engine_for(base))
    assert prediction.edit is None and prediction.reason.startswith("model error:")


async def test_cancelling_the_task_closes_the_request(serve):
    sent = asyncio.Event()

    async def stall(request, responder):
        await responder.start()
        await responder.send(llama_events([TEXT[:10]])[0])
        sent.set()  # and no end: the fake server then waits for the client to close the connection
    server, base = await serve(stall)
    engine = engine_for(base)
    await engine.start()
    task = asyncio.create_task(engine.predict_next_edit(REQUEST, NextEditOptions(format="sweep"), 10, 60))
    try:
        await asyncio.wait_for(sent.wait(), 10)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        await asyncio.wait_for(server.client_closed.wait(), 10)
        assert task.cancelled()
    finally:
        await engine.close()


def chat_server(text: str, finish: str = "stop"):
    async def handler(request, responder):
        await responder.start()
        for piece in chunks(text):
            event = {"choices": [{"delta": {"content": piece}, "finish_reason": None}]}
            await responder.send(f"data: {json.dumps(event)}\n\n")
        await responder.send(f"data: {json.dumps({'choices': [{'delta': {}, 'finish_reason': finish}]})}\n\n")
        await responder.send("data: [DONE]\n\n")
        await responder.end()
    return handler


async def test_a_chat_kind_gets_the_instruction_form(serve):
    server, base = await serve(chat_server("<updated>\n" + REWRITE + "</updated>\nThat is all."))
    engine = engine_for(base, kind="openai/chat", model="some-chat-model")
    prediction = await predict(engine, NextEditOptions())
    body = server.requests[0].json()
    assert server.requests[0].path.endswith("/chat/completions")
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "<|cursor|>print(area(2, 3))" in body["messages"][1]["content"]
    assert prediction.format == "instruction" and prediction.reason == "edit"


async def test_a_chat_answer_without_the_markers_is_malformed(serve):
    server, base = await serve(chat_server("Sure! Here is the code:\n" + REWRITE))
    prediction = await predict(engine_for(base, kind="openai/chat", model="m"), NextEditOptions())
    assert prediction.edit is None and prediction.reason == "malformed"


def test_check_next_edit_model_takes_completion_and_chat_kinds():
    check_next_edit_model(ModelConfig(kind="openai/chat", api_endpoint="http://127.0.0.1:1", model="m"))
    check_next_edit_model(ModelConfig(kind="llama.cpp/completion", api_endpoint="http://127.0.0.1:1"))
    check_next_edit_model(ModelConfig(kind="local"))
    try:
        check_next_edit_model(ModelConfig(kind="voyage/embedding", api_endpoint="http://127.0.0.1:1"))
    except ValueError as exc:
        assert "next_edit.model.kind" in str(exc)
    else:
        raise AssertionError("an embedding kind was accepted")


async def test_a_chat_answer_cut_at_the_token_limit_is_truncated(serve):
    server, base = await serve(chat_server("<updated>\n" + REWRITE[:40], finish="length"))
    prediction = await predict(engine_for(base, kind="openai/chat", model="m"), NextEditOptions())
    assert prediction.edit is None and prediction.reason == "truncated"


async def test_a_chat_model_engine_refuses_completions_clearly(serve):
    from engine.errors import BackendUnavailable
    from engine.types import CompletionOptions, CompletionRequest

    server, base = await serve(chat_server("unused"))
    engine = engine_for(base, kind="openai/chat", model="m")
    try:
        await engine.start()
        try:
            await engine.complete(CompletionRequest(prefix="x"), CompletionOptions(), ready_timeout=10)
        except BackendUnavailable as exc:
            assert "chat model" in str(exc) and "next-edit suggestions only" in str(exc)
        else:
            raise AssertionError("a chat-model engine completed")
        assert engine.status.kind == "ready"
    finally:
        await engine.close()
    assert server.requests == []


async def test_a_completion_form_on_a_chat_model_is_a_model_error(serve):
    server, base = await serve(chat_server("unused"))
    prediction = await predict(engine_for(base, kind="openai/chat", model="m"), NextEditOptions(format="sweep"))
    assert prediction.edit is None and prediction.reason.startswith("model error: the sweep format needs")
    assert server.requests == []


async def test_a_refused_request_never_reaches_the_model(serve):
    server, base = await serve(completion_server(chunks(REWRITE)))
    request = NextEditRequest(path="a.py", language="python", text="x = '<|file_sep|>'\n", cursor=0)
    prediction = await predict(engine_for(base), request=request)
    assert prediction.edit is None and prediction.reason.startswith("refused: ")
    assert server.requests == []
