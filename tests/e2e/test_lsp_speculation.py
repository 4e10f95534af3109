"""Speculative prefetch through the real server and the real llama-server (tiny model), checked by counting the
server's own events (`infill/stats`) and llama-server's /metrics, never by timing.

- A shown suggestion starts a prefetch of the accepted state; a user request that needs the model cancels it
  before its own model call begins (the guess never competes with the user), and the request is answered.
- A change that leaves the path to the accepted state cancels the prefetch; no prefetch is found running at the
  next message, and llama-server goes idle.
- Accepting the suggestion is answered by the prefetch (joined while running, or from the cache)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import AsyncIterator

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.fixtures.llama import predicted_tokens_when_idle

from .lsp_support import (
    config,
    edit,
    inline_params,
    open_doc,
    start_remote_session,
    stats,
)

pytestmark = [pytest.mark.llama_server, pytest.mark.asyncio(loop_scope="module")]

#: Long generations (the tiny model never emits an end token; multi-line mode has no "\n" stop), no time box, so a
#: prefetch is still running when the test acts on it.
SETTINGS = {"max_tokens": 400, "temperature": 0.0, "multiline": "always",
            "speculation": {"time_budget_ms": 0, "invoked_time_budget_ms": 0}}
TEXT = "def job_{n}(x):\n    y = x + 1\n    return "
ROUNDS = 4


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, llama_server: str):
    await start_remote_session(lsp_client, llama_server, **SETTINGS)
    yield
    await lsp_client.shutdown_session()


@contextlib.asynccontextmanager
async def prefetch_held_still(client: LanguageClient, pid: int, n: int) -> AsyncIterator[tuple[str, str, int] | None]:
    """Open a document and get an automatic suggestion at its end (this client does not report showing, so the
    answer counts as shown), which starts a prefetch; then hold llama-server still (SIGSTOP, SIGCONT on leaving) so
    that the prefetch cannot finish while the test acts on it: the tiny model writes its 400 tokens in about a
    second, faster than a starved test process could watch for them. Yields (uri, suggestion, events seen so far),
    or None when the prefetch had already finished before llama-server stopped (a round the test missed)."""
    text = TEXT.format(n=n)
    uri = open_doc(client, text)
    before = await stats(client)
    result = await client.text_document_inline_completion_async(inline_params(uri, 2, 11, invoked=False))
    os.kill(pid, signal.SIGSTOP)
    try:
        assert result is not None and result.items, "the tiny model always gives a suggestion"
        suggestion = result.items[0].insert_text
        assert isinstance(suggestion, str)
        after = await stats(client)
        assert after["prefetch_started"] == before["prefetch_started"] + 1
        if after["prefetch_completed"] > before["prefetch_completed"]:
            yield None
        else:
            yield uri, suggestion, len(after["speculation_events"])
    finally:
        os.kill(pid, signal.SIGCONT)


async def test_a_user_request_cancels_the_prefetch_before_its_model_call(
        client: LanguageClient, llama_server_supervisor):
    for n in range(ROUNDS):
        async with prefetch_held_still(client, llama_server_supervisor.pid, 100 + n) as shown:
            if shown is None:
                continue
            other = open_doc(client, "import os\n\nprint(os.getcwd())\n")
            # The cancel only closes the prefetch's HTTP request, which needs nothing of llama-server; the user's
            # own generation waits until llama-server runs again, after its model call has begun.
            request = asyncio.ensure_future(
                client.text_document_inline_completion_async(inline_params(other, 1, 0, invoked=True)))
            for _ in range(3000):  # a safety net, not a speed assertion
                seen = [tuple(e) for e in (await stats(client))["speculation_events"]][shown[2]:]
                if ("model-call", other) in seen or request.done():
                    break
                await asyncio.sleep(0.005)
        result = await request
        assert isinstance(result, types.InlineCompletionList)  # answered
        events = [tuple(e) for e in (await stats(client))["speculation_events"]][shown[2]:]
        call = events.index(("model-call", other))
        # Still running when the user's request came, and cancelled before the user's generation began.
        assert ("prefetch-done", "") not in events[:call]
        assert ("prefetch-cancel", "yielded to a user request") in events[:call]
        assert (await stats(client))["prefetch_stale_running"] == 0
        return
    pytest.fail(f"in {ROUNDS} rounds the prefetch always finished before the test could act")


async def test_a_diverging_change_cancels_the_prefetch_and_llama_server_stops(
        client: LanguageClient, llama_server, llama_server_supervisor):
    for n in range(ROUNDS):
        async with prefetch_held_still(client, llama_server_supervisor.pid, 200 + n) as shown:
            if shown is None:
                continue
            uri, suggestion, _ = shown
            before = await stats(client)
            typo = "#" if not suggestion.startswith("#") else "@"
            edit(client, uri, 2, 2, 11, typo)  # not the suggestion's first character
            after = await stats(client)
        assert after["prefetch_completed"] == before["prefetch_completed"]  # it could not finish: held still
        assert after["prefetch_cancelled"] == before["prefetch_cancelled"] + 1
        assert list(after["speculation_events"][-1]) == ["prefetch-cancel", "diverged"]
        await predicted_tokens_when_idle(llama_server)  # raises if llama-server keeps generating
        assert (await stats(client))["prefetch_stale_running"] == 0
        return
    pytest.fail(f"in {ROUNDS} rounds the prefetch always finished before the test could act")


async def test_accepting_is_answered_by_the_prefetch(client: LanguageClient, llama_server):
    """The tiny model's text after an accepted suggestion may be cut to nothing by the filters (its greedy output
    differs between a fresh and a cached prompt): a round whose answer after Tab is empty is retried in a fresh
    document; in the round that shows something, that answer came from the prefetch."""
    seen = []
    for n in range(300, 300 + ROUNDS):
        text = TEXT.format(n=n)
        uri = open_doc(client, text)
        before = await stats(client)
        first = await client.text_document_inline_completion_async(inline_params(uri, 2, 11, invoked=False))
        assert first is not None and first.items
        suggestion = first.items[0].insert_text
        assert isinstance(suggestion, str)
        # Tab: the client inserts the item and asks again at the end of it.
        edit(client, uri, 2, 2, 11, suggestion)
        lines = (text + suggestion).split("\n")
        second = await client.text_document_inline_completion_async(
            inline_params(uri, len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2, invoked=False))
        assert isinstance(second, types.InlineCompletionList)
        after = await stats(client)
        served_by_prefetch = (after["prefetch_joined"] - before["prefetch_joined"]) + \
            (after["prefetch_hits"] - before["prefetch_hits"])
        events = [tuple(e) for e in after["speculation_events"][len(before["speculation_events"]):]]
        started = after["prefetch_started"] - before["prefetch_started"]
        seen.append((n, len(second.items), started, served_by_prefetch, events.count(("model-call", uri))))
        if not second.items or not started:
            continue  # nothing to show, or the prefetch was skipped (by design: a user generation was running)
        assert served_by_prefetch == 1, seen
        # the first suggestion's model call; the accepted state's was prefetched
        assert events.count(("model-call", uri)) == 1, seen
        return
    pytest.fail(f"no round showed a suggestion after Tab: {seen}")
