"""Reusing the generation in flight, through the real server and the real llama-server (tiny model).

An automatic request starts a long generation; while it streams, the user types characters it has already produced
and the editor asks again at the new position. The newer request must be served by the same generation: one model
call (Infill's `infill/stats`), one generation (llama-server's /slots and /metrics), the older request answered
empty (superseded), and the newer one's item is the rest of the generation after the typed characters. Typing
something else makes a second generation.

Nothing is timed. The test waits until llama-server has generated some tokens and reads the text so far from
/slots (the fixture starts it with LLAMA_SERVER_SLOTS_DEBUG), then types a beginning of that text. A round is
retried in a fresh document only when the test missed it: the generation ended before the test saw it streaming,
or before the newer request was read (the older request then carries the answer), or it began with bytes that are
not text. Any other outcome fails with what the round saw."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.fixtures.llama import predicted_tokens_when_idle

from .lsp_support import (
    complete,
    config,
    edit,
    generating_slot,
    inline_params,
    open_doc,
    start_remote_session,
    stats,
)

pytestmark = [pytest.mark.llama_server, pytest.mark.asyncio(loop_scope="module")]

#: A long generation (the tiny model never emits an end token, multi-line mode has no "\n" stop, no time box), so it
#: is still streaming when the test types: over a second on an idle 2-core machine (600 tokens took 270 ms, too
#: short for a busy test process to see it streaming), half a minute on one busy with other model servers. No
#: prefetch, no workspace context: its cache warming and the prefetch would add llama-server tasks of their own.
BUDGET = 1500
SETTINGS = {"max_tokens": BUDGET, "temperature": 0.0, "multiline": "always", "context": {"enabled": False},
            "speculation": {"prefetch": False, "time_budget_ms": 0, "invoked_time_budget_ms": 0}}
#: The cursor follows "(", not a space, so the characters typed are the generation's own to the letter (after a space
#: an item's leading spaces are dropped; tests/lsp_server/test_speculation.py covers joining there).
TEXT = "def job_{n}(x):\n    y = x + 1\n    return max("
#: Tokens llama-server has generated before the test reads the text so far and types (at most TYPED characters of it).
STREAMED = 3
TYPED = 3
ATTEMPTS = 6


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, llama_server: str):
    await start_remote_session(lsp_client, llama_server, **SETTINGS)
    yield
    await lsp_client.shutdown_session()


async def slots(base_url: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=base_url, timeout=5.0, trust_env=False) as http:
        return (await http.get("/slots")).json()


def end_of(text: str) -> tuple[int, int]:
    """The LSP position (utf-16) of the end of `text`."""
    lines = text.split("\n")
    return len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2


def item_text(result: types.InlineCompletionList) -> str:
    text = result.items[0].insert_text
    assert isinstance(text, str)
    return text


@dataclass
class Round:
    """What one round saw: the generation's text when the test typed, what it typed, the answers, the counts."""

    uri: str
    text: str
    streamed: str
    typed: str
    task: int
    older: types.InlineCompletionList
    newer: types.InlineCompletionList
    before: dict[str, Any]
    after: dict[str, Any]
    tokens: int
    slots_after: list[dict[str, Any]]

    def delta(self, key: str) -> int:
        return self.after[key] - self.before[key]

    @property
    def model_calls_for_document(self) -> int:
        events = [tuple(e) for e in self.after["speculation_events"][len(self.before["speculation_events"]):]]
        return events.count(("model-call", self.uri))

    def later_tasks(self) -> list[dict[str, Any]]:
        """llama-server slots whose last task came after the round's first generation."""
        return [s for s in self.slots_after if s.get("id_task", -1) > self.task]

    def describe(self) -> str:
        return (f"streamed {short(self.streamed)}, typed {self.typed!r}; older answer {short(self.older.items)}; "
                f"newer answer {short(self.newer.items)}; model calls {self.delta('model_calls')}, reused "
                f"{self.delta('reused_inflight')}, superseded {self.delta('superseded')}, tokens generated "
                f"{self.tokens}; timings {self.after['timings'][len(self.before['timings']):]}")


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + "…"


async def play(client: LanguageClient, base_url: str, n: int, typing: str) -> Round | str:
    """Open a fresh document, start an automatic request at its end, wait until llama-server has generated STREAMED
    tokens, type (`typing`: "stream" types the first TYPED characters of what it generated so far; "other" one
    character that differs from it) and ask again at the new position. A string says why the round proves nothing
    (the test missed it)."""
    text = TEXT.format(n=n)
    uri = open_doc(client, text)
    line, character = end_of(text)
    before = await stats(client)
    tokens_before = await predicted_tokens_when_idle(base_url)
    older_future = asyncio.ensure_future(client.text_document_inline_completion_async(
        inline_params(uri, line, character, invoked=False)))
    slot = await generating_slot(base_url, STREAMED, pending=older_future)
    if slot is None:
        older = await older_future
        after = await stats(client)
        return (f"answered before llama-server had generated {STREAMED} tokens ({short(older.items)}; timings "
                f"{after['timings'][len(before['timings']):]}, model calls "
                f"{after['model_calls'] - before['model_calls']}, tokens "
                f"{await predicted_tokens_when_idle(base_url) - tokens_before})")
    streamed = slot.get("generated")
    assert isinstance(streamed, str) and streamed, \
        f"llama-server's /slots shows no generated text (is LLAMA_SERVER_SLOTS_DEBUG set?): {slot}"
    if typing == "stream":
        typed = streamed[:TYPED]
        if "\ufffd" in typed:  # the random model's bytes are no valid UTF-8 there: not text a user could type
            client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
            await older_future  # closing the document answers the request and stops its generation
            return f"the generation starts with bytes that are not text: {short(streamed)}"
    else:
        typed = "#" if not streamed.startswith("#") else "@"
    edit(client, uri, 2, line, character, typed)
    newer_future = asyncio.ensure_future(client.text_document_inline_completion_async(
        inline_params(uri, *end_of(text + typed), invoked=False)))
    if typing != "stream" and await generating_slot(base_url, 1, newer_future, after_task=slot["id_task"]):
        # A second generation runs: seen, so stop it rather than wait for its end (closing the document answers
        # the request and cancels its generation).
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    newer = await newer_future
    older = await older_future
    assert isinstance(older, types.InlineCompletionList) and isinstance(newer, types.InlineCompletionList)  # answered
    tokens = await predicted_tokens_when_idle(base_url) - tokens_before
    return Round(uri, text, streamed, typed, slot["id_task"], older, newer, before, await stats(client), tokens,
                 await slots(base_url))


async def a_round(client: LanguageClient, base_url: str, first: int, typing: str) -> Round:
    """The first of up to ATTEMPTS rounds (documents `first`, `first + 1`, …) that the test did not miss: the
    newer request arrived while the older one's generation was still running, so the older was superseded."""
    missed = []
    for n in range(first, first + ATTEMPTS):
        seen = await play(client, base_url, n, typing)
        if isinstance(seen, str):
            missed.append(seen)
        elif seen.older.items:
            missed.append(f"the generation ended before the newer request was read ({seen.describe()})")
        else:
            assert seen.delta("superseded") == 1, seen.describe()  # answered empty, never dropped
            return seen
    pytest.fail(f"in {ATTEMPTS} rounds the generation always ended before the test could type: {missed}")


async def test_typing_what_the_generation_produced_is_served_by_it(client: LanguageClient, llama_server: str):
    seen = await a_round(client, llama_server, 400, "stream")
    # The newer request waited for the older one's generation.
    assert seen.delta("model_calls") == 1 and seen.model_calls_for_document == 1, seen.describe()
    assert seen.delta("reused_inflight") == 1, seen.describe()
    assert seen.newer.items, seen.describe()
    assert [source for source, _ in seen.after["timings"][len(seen.before["timings"]):]][-1] == "in-flight"
    # llama-server ran one generation: no task on any slot after the one the test saw streaming, and no more
    # tokens than one generation makes.
    assert not seen.later_tasks(), seen.slots_after
    assert 0 < seen.tokens <= BUDGET, seen.describe()
    (slot,) = [s for s in seen.slots_after if s.get("id_task") == seen.task]
    assert slot["generated"].startswith(seen.typed), (short(slot["generated"]), seen.describe())
    # The item is the rest of the generation after the typed characters: what the first request would have shown
    # (its text is in the cache: back at the first position it is served from there) less what was typed.
    edit(client, seen.uri, 3, *end_of(seen.text), "", end=end_of(seen.text + seen.typed))
    whole = item_text(await complete(client, seen.uri, *end_of(seen.text), invoked=False))
    assert whole.startswith(seen.typed) and item_text(seen.newer) == whole[len(seen.typed):], \
        (short(whole), seen.describe())
    assert (await stats(client))["model_calls"] == seen.after["model_calls"]  # served from the cache


async def test_typing_something_else_makes_a_new_generation(client: LanguageClient, llama_server: str):
    seen = await a_round(client, llama_server, 500, "other")
    assert seen.delta("model_calls") == 2 and seen.model_calls_for_document == 2, seen.describe()
    assert seen.delta("reused_inflight") == 0, seen.describe()
    assert seen.later_tasks(), seen.slots_after  # llama-server ran a second generation
