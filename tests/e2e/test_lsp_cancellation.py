"""Supersession and $/cancelRequest: every request is answered and the model stream is closed, so llama-server
stops generating (counted on its /metrics endpoint: the superseded or cancelled generation makes far fewer tokens
than the same generation makes when nothing stops it)."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.fixtures.llama import predicted_tokens_when_idle

from .lsp_support import capabilities, complete, config, inline_params, open_doc, record_status, remote_options, \
    wait_generating, wait_status

pytestmark = [pytest.mark.llama_server, pytest.mark.asyncio(loop_scope="module")]

#: Long enough that an unstopped generation would run for about a second on the tiny model.
BUDGET = 1500
#: These tests count the tokens llama-server generates: no prefetch adding generations of its own, no time box
#: ending them early (tests/e2e/test_lsp_speculation.py covers both).
NO_SPECULATION = {"prefetch": False, "time_budget_ms": 0, "invoked_time_budget_ms": 0}


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, llama_server: str):
    record_status(lsp_client)
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities(["utf-16"]),
        initialization_options=remote_options(llama_server, max_tokens=BUDGET, temperature=0.0,
                                              speculation=NO_SPECULATION)))
    await wait_status(lsp_client, "ready")
    yield
    await lsp_client.shutdown_session()


#: With the tiny model at temperature 0 these lines' completions run for hundreds of tokens before a stop word.
#: The tiny model's random weights make its choice of token sensitive to rounding, which differs between CPUs and
#: between a fresh and a cached prompt; so each candidate is measured twice and the one whose shorter run is the
#: longest is used.
CANDIDATES = ("def job_2(x):\n    y = \n", "def job_4(x):\n    y = \n", "def job_11(x):\n    y = \n")
_measured: dict[str, int] = {}


async def _reference(client: LanguageClient, base_url: str, text: str) -> int:
    """How many tokens the generation at 1:8 of `text` makes when nothing stops it."""
    before = await predicted_tokens_when_idle(base_url)
    result = await complete(client, open_doc(client, text), 1, 8)
    assert result.items
    return await predicted_tokens_when_idle(base_url) - before


async def _long_generation(client: LanguageClient, base_url: str) -> tuple[str, int]:
    """The candidate text with the longest uncancelled generation, and its length in tokens (measured once)."""
    if not _measured:
        for text in CANDIDATES:
            _measured[text] = min([await _reference(client, base_url, text) for _ in range(2)])
    text = max(_measured, key=_measured.get)
    assert _measured[text] >= 150, f"the reference generations are too short to observe a cancellation: {_measured}"
    return text, _measured[text]


#: On a loaded 2-core machine the server can be starved long enough for a whole generation to finish before the
#: cancellation is read; such a round proves nothing either way and is tried again with a fresh document.
ATTEMPTS = 4


async def _supersede_once(client: LanguageClient, llama_server: str, text: str, full: int) -> str | None:
    """None when the older request was superseded and its generation stopped early; else what happened."""
    uri = open_doc(client, text)
    cached_first = await complete(client, uri, 0, 4)  # fills the cache for this position
    assert cached_first.items
    before = await predicted_tokens_when_idle(llama_server)
    # the long generation (not in the cache) …
    older = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(uri, 1, 8)))
    if await wait_generating(llama_server, min_decoded=5, pending=older) is None:
        await older
        return "answered before llama-server had generated 5 tokens"
    # … is superseded by a newer request for the same document (answered from the cache at once: an automatic one,
    # since an explicit request always asks the model afresh)
    newer = await complete(client, uri, 0, 4, invoked=False)
    assert [i.insert_text for i in newer.items] == [i.insert_text for i in cached_first.items]
    old_result = await older
    decoded = await predicted_tokens_when_idle(llama_server) - before
    assert isinstance(old_result, types.InlineCompletionList)  # answered, never dropped
    if old_result.items:
        return f"finished ({decoded} tokens) before the newer request was read"
    # Left alone the generation made at least `full` tokens in both reference runs; the newer request needed no model
    # call. Far fewer means our closing of the model stream stopped llama-server (how much sooner: the benchmark).
    return None if decoded < full // 2 else f"superseded, but llama-server generated {decoded} of {full} tokens"


async def _until_stopped_early(round_: Callable[[int], Awaitable[str | None]], full: int) -> None:
    """Run up to ATTEMPTS rounds until one stops the generation early; fail with what each round saw."""
    missed = []
    for n in range(ATTEMPTS):
        outcome = await round_(n)
        if outcome is None:
            return
        missed.append(outcome)
    raise AssertionError(f"no round stopped the generation early (full: {full} tokens): {missed}")


async def test_newer_request_supersedes_older(client: LanguageClient, llama_server: str):
    text, full = await _long_generation(client, llama_server)
    await _until_stopped_early(lambda n: _supersede_once(client, llama_server, text, full), full)


async def _cancel_once(client: LanguageClient, llama_server: str, text: str, full: int, n: int) -> str | None:
    """None when the request was cancelled and its generation stopped early; else what happened."""
    uri = open_doc(client, text)
    msg_id = f"infill-cancel-test-{n}"
    before = await predicted_tokens_when_idle(llama_server)
    future = asyncio.ensure_future(client.protocol.send_request_async(
        types.TEXT_DOCUMENT_INLINE_COMPLETION, inline_params(uri, 1, 8), msg_id=msg_id))
    if await wait_generating(llama_server, min_decoded=5, pending=future) is None:
        await future
        return "answered before llama-server had generated 5 tokens"
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    try:
        result = await future
    except JsonRpcException as exc:
        assert exc.code == -32800  # RequestCancelled: answered, not dropped
        decoded = await predicted_tokens_when_idle(llama_server) - before
        return None if decoded < full // 2 else f"cancelled, but llama-server generated {decoded} of {full} tokens"
    assert isinstance(result, types.InlineCompletionList)  # finished before the cancellation was read
    decoded = await predicted_tokens_when_idle(llama_server) - before
    return f"finished ({decoded} tokens, {len(result.items)} items) before the cancellation was read"


async def test_cancel_request_is_honoured(client: LanguageClient, llama_server: str):
    text, full = await _long_generation(client, llama_server)
    await _until_stopped_early(lambda n: _cancel_once(client, llama_server, text, full, n), full)
    # the server keeps working afterwards
    uri2 = open_doc(client, "x = 1\n")
    assert isinstance(await complete(client, uri2, 1, 0), types.InlineCompletionList)


async def _superseded_count(client: LanguageClient) -> int:
    stats = await client.protocol.send_request_async("infill/stats", {})
    return stats["superseded"] if isinstance(stats, dict) else stats.superseded


async def test_burst_of_automatic_requests_all_answered(client: LanguageClient):
    """Five requests at once: each is answered; one that a newer request superseded is answered empty. Which ones
    are superseded depends on how the server reads the pipe (on a busy machine the first may be served before the
    second arrives), so the empty answers are counted against the server's own count of supersessions."""
    uri = open_doc(client, "def burst(n):\n    ")
    before = await _superseded_count(client)
    futures = [client.text_document_inline_completion_async(inline_params(uri, 1, 4, invoked=False))
               for _ in range(5)]
    results = await asyncio.gather(*futures)
    superseded = await _superseded_count(client) - before
    assert all(isinstance(r, types.InlineCompletionList) for r in results)
    assert results[-1].items  # the last one is served
    served = [r for r in results[:-1] if r.items]
    # one served before the next arrived answers what the last one answers (same document, same position)
    assert all(r.items[0].insert_text == results[-1].items[0].insert_text for r in served)
    assert len(results) - 1 - len(served) == superseded
