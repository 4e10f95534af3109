"""Next edits through the real server and the real llama-server with the tiny test model: the prompt reaches
`/completion` in the chosen form (never `/infill`, where completions go), with the edit history in it; the tiny
model's answer runs into max_tokens, which the pipeline calls truncated (no edit), and the server keeps serving.
A separate `next_edit.model` gets the prompts, the completion model the ghost text."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
import pytest_lsp
from pytest_lsp import LanguageClient

from .lsp_support import (capabilities, complete, config, edit, open_doc, record_status, remote_options, stats,
                          wait_status)
from .test_lsp_context import RecordingProxy

pytestmark = pytest.mark.llama_server

METHOD = "textDocument/copilotInlineEdit"
#: The edit (" * d" after line 4's `w * h`) recurs nowhere, so propagation has nothing and the model is asked.
TEXT = "def area(w, h):\n    return h * w\n\ndef volume(w, h, d):\n    return w * h\n"


async def _session(client: LanguageClient, completion_url: str, **settings: Any) -> None:
    record_status(client)
    options = remote_options(completion_url, max_tokens=4, temperature=0.0, speculation={"prefetch": False},
                             context={"enabled": False}, **settings)
    await client.initialize_session(types.InitializeParams(capabilities=capabilities(["utf-16"]),
                                                           initialization_options=options))
    await wait_status(client, "ready")


async def _ask(client: LanguageClient) -> tuple[str, dict[str, Any]]:
    uri = open_doc(client, TEXT, name="shapes.py")
    edit(client, uri, 2, 4, 16, " * d")  # new code, not a substitution: only a model can answer
    result = await client.protocol.send_request_async(METHOD, {"textDocument": {"uri": uri, "version": 2},
                                                               "position": {"line": 4, "character": 20}})
    return uri, result if isinstance(result, dict) else result._asdict()


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.fixture
async def proxy(llama_server: str):
    recorder = RecordingProxy(llama_server)
    recorder.url = await recorder.start()  # type: ignore[attr-defined]
    yield recorder
    await recorder.close()


def _generating(proxy: RecordingProxy, path: str) -> list[dict[str, Any]]:
    return [body for p, body, _ in proxy.exchanges if p == path and body.get("n_predict", 1) != 0]


async def test_the_completion_model_answers_in_the_sweep_form(client: LanguageClient, proxy: RecordingProxy):
    await _session(client, proxy.url, next_edit={"format": "sweep", "max_tokens": 8})  # type: ignore[attr-defined]
    before = len(proxy.exchanges)
    uri, result = await _ask(client)
    assert list(result["edits"]) == []
    sent = [body for p, body, _ in proxy.exchanges[before:] if p == "/completion"]
    assert len(sent) == 1 and not _generating(proxy, "/infill")
    prompt = sent[0]["prompt"]
    assert prompt.endswith("<|file_sep|>updated/shapes.py\n")
    assert "<|file_sep|>original/shapes.py\n" in prompt and "<|file_sep|>current/shapes.py\n" in prompt
    assert "return w * h * d" in prompt and "original:\n" in prompt  # the current text and the history
    assert sent[0]["n_predict"] == 8 and sent[0]["temperature"] == 0.0
    discarded = (await stats(client))["next_edit"]
    discarded = discarded if isinstance(discarded, dict) else discarded._asdict()
    assert discarded["model_calls"] == 1
    # ghost text still goes to /infill
    await complete(client, uri, 4, 20)
    assert _generating(proxy, "/infill")


async def test_a_separate_next_edit_model_gets_the_prompts_in_the_zeta2_form(client: LanguageClient,
                                                                            llama_server: str,
                                                                            proxy: RecordingProxy):
    await _session(client, llama_server, next_edit={  # completions straight to llama-server, next edits via proxy
        "format": "zeta2", "max_tokens": 8,
        "model": {"kind": "llama.cpp/completion", "api_endpoint": proxy.url}})  # type: ignore[attr-defined]
    _, result = await _ask(client)
    assert list(result["edits"]) == []
    sent = _generating(proxy, "/completion")
    assert len(sent) == 1 and not _generating(proxy, "/infill")
    assert sent[0]["prompt"].startswith("<[fim-suffix]>") and "<filename>edit_history\n" in sent[0]["prompt"]
    assert "<[fim-middle]>" in sent[0]["prompt"]


def _next_edit_servers(model: Path) -> list[int]:
    """Pids of llama-servers serving `model` with the next-edit model's settings below (-np 1, --ctx-size 2048; the
    session's shared server runs -np 2 --ctx-size 4096)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in args]
        if words and words[0].endswith("llama-server") and str(model) in words and "2048" in words \
                and "-np" in words and words[words.index("-np") + 1:words.index("-np") + 2] == ["1"]:
            pids.append(int(entry.name))
    return pids


@pytest_lsp.fixture(config=config())
async def bare(lsp_client: LanguageClient):
    yield lsp_client  # the test shuts the server down itself


async def test_a_local_next_edit_model_runs_its_own_supervised_llama_server(bare: LanguageClient, llama_server: str,
                                                                           llama_server_binary: str,
                                                                           tiny_model: Path):
    client = bare
    local = {"binary": llama_server_binary, "parallel": 1, "ctx_size": 2048, "start_timeout": 120}
    await _session(client, llama_server, next_edit={"format": "sweep", "max_tokens": 8,
                                                     "model": {"kind": "local", "model": str(tiny_model),
                                                               "local": local}})
    uri = open_doc(client, TEXT, name="shapes.py")
    edit(client, uri, 2, 4, 16, " * d")
    for _ in range(120):  # the model may still be loading (a request waits 10 s at most): ask until it answered
        result = await client.protocol.send_request_async(METHOD, {"textDocument": {"uri": uri, "version": 2},
                                                                   "position": {"line": 4, "character": 20}})
        assert list((result if isinstance(result, dict) else result._asdict())["edits"]) == []
        counters = (await stats(client))["next_edit"]
        discarded = counters["discarded"] if isinstance(counters, dict) else counters.discarded._asdict()
        if discarded.get("truncated"):  # the tiny model's answer always runs into max_tokens
            break
    else:
        raise AssertionError(f"the next-edit model never answered: {discarded}")
    assert len(_next_edit_servers(tiny_model)) == 1
    await client.shutdown_session()
    for _ in range(100):  # stopped with the server (a safety net, not a speed assertion)
        if not _next_edit_servers(tiny_model):
            break
        await asyncio.sleep(0.1)
    assert _next_edit_servers(tiny_model) == []
