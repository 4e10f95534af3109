"""Speculation that yields on a shared llama-server (engine/backends/shared_server.py): the rules alone, and against
the real llama-server (--parallel 2, the tiny model), counting what the server and the gate report. No timing
assertions: every wait is for an event (a slot busy, a token, a deferred request), with a safety bound."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from engine.backends.llama_cpp import LlamaCppCompletion
from engine.backends.shared_server import (Load, SharedServerGate, admit_reason, new_chars, parse_metrics,
                                           parse_slots, yield_reason)
from engine.config import LocalServerSettings
from engine.errors import SpeculationHeld
from engine.local.supervisor import LlamaServerSupervisor
from engine.types import CompletionOptions, Prompt
from tests.engine.test_llama_cpp import sse, sse_response

# --- the rules --------------------------------------------------------------------------------------------------


def test_admitted_only_when_a_slot_stays_free_for_a_user():
    assert admit_reason(Load(slots=2, busy=0)) is None
    assert admit_reason(Load(slots=4, busy=1)) is None
    # more than two slots: two stay free (a cancelled guess frees its slot only after llama-server's current batch)
    assert admit_reason(Load(slots=4, busy=2)) == "2 of 4 slots busy"
    assert admit_reason(Load(slots=8, busy=5)) is None
    assert admit_reason(Load(slots=2, busy=1)) == "1 of 2 slots busy"  # it would take the last free slot
    assert admit_reason(Load(slots=1, busy=0)) is None  # nobody else there: the user's own request cancels it
    assert admit_reason(Load(slots=2, busy=1), own_running=1) is None  # the busy one is this client's own guess
    assert admit_reason(Load(slots=8, busy=1, deferred=1)) == "1 request(s) waiting for a slot"


def test_a_running_guess_yields_when_someone_waits():
    assert yield_reason(Load(slots=2, busy=2, deferred=1)) == "1 request(s) waiting for a slot"
    assert yield_reason(Load(slots=4, busy=2, deferred=0)) is None  # two slots still free for the next requests
    assert yield_reason(Load(slots=1, busy=1)) is None  # only the guess itself


def test_a_running_guess_does_not_hold_the_last_free_slot_while_another_client_uses_the_server():
    """Nobody waits yet, but the next request to arrive would wait behind the guess (the multi-user benchmark saw
    it when guesses yielded only to a deferred request): the guess steps aside first, with or without /metrics."""
    assert yield_reason(Load(slots=2, busy=2, deferred=0)) == "2 of 2 slots busy, 1 with other clients' requests"
    assert yield_reason(Load(slots=2, busy=2)) == "2 of 2 slots busy, 1 with other clients' requests"
    assert yield_reason(Load(slots=4, busy=4, deferred=0), own_running=2) is not None
    # more than two slots: the guess leaves when fewer than two are idle
    assert yield_reason(Load(slots=4, busy=3, deferred=0)) == "3 of 4 slots busy, 2 with other clients' requests"
    assert yield_reason(Load(slots=2, busy=1, deferred=0)) is None
    # the other busy slots are this client's own: its next request supersedes the guess before it is sent
    assert yield_reason(Load(slots=2, busy=2, deferred=0), own_running=1, own_requests=1) is None
    assert yield_reason(Load(slots=2, busy=2, deferred=0), own_running=2) is None


def test_reports_are_parsed():
    assert parse_slots([{"id": 0, "is_processing": True}, {"id": 1, "is_processing": False}]) == (2, 1)
    assert parse_slots({"error": "x"}) is None
    metrics = parse_metrics("# HELP x\nllamacpp:requests_processing 2\nllamacpp:requests_deferred 1\n")
    assert metrics == {"requests_processing": 2.0, "requests_deferred": 1.0}


def gate_for(handler) -> tuple[SharedServerGate, httpx.AsyncClient]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))

    async def base_url() -> str:
        return "http://shared.test"

    return SharedServerGate(lambda: client, base_url), client


async def test_after_a_503_nothing_speculative_is_sent_for_a_while():
    now = [100.0]
    gate, client = gate_for(lambda request: httpx.Response(200, json=[{"is_processing": False}] * 2))
    gate._clock = lambda: now[0]
    assert await gate.admit() is None
    gate.note_status(503)
    assert await gate.admit() is not None and gate.stats.held_backoff == 1
    now[0] += 6.0  # past BACKOFF_S
    assert await gate.admit() is None
    assert (gate.stats.admitted, gate.stats.overloads) == (2, 1)
    await client.aclose()


async def test_work_that_may_wait_is_told_to_while_others_hold_the_slots():
    """`busy_with_others` (the in-burst early call asks it) says what `admit` would, without counting a guess."""
    slots = [[{"is_processing": True}, {"is_processing": True}]]
    gate, client = gate_for(lambda request: httpx.Response(200, json=slots[0]) if request.url.path == "/slots"
                            else httpx.Response(404))
    now = [100.0]
    gate._clock = lambda: now[0]
    assert await gate.busy_with_others() == "2 of 2 slots busy"
    slots[0] = [{"is_processing": False}, {"is_processing": False}]
    now[0] += 1.0  # a fresh report
    assert await gate.busy_with_others() is None
    gate.note_status(429)
    assert await gate.busy_with_others() == "the server answered 429/503 a moment ago"
    assert (gate.stats.admitted, gate.stats.held_busy, gate.stats.held_backoff) == (0, 0, 0)
    assert ("early-held", "2 of 2 slots busy") in gate.events
    await client.aclose()


async def test_a_server_that_reports_nothing_is_not_gated():
    gate, client = gate_for(lambda request: httpx.Response(501, text="not supported"))
    assert await gate.admit() is None and await gate.admit() is None
    assert gate.stats.blind == 2
    await client.aclose()


async def test_the_gate_keeps_a_bounded_number_of_events_however_many_guesses_were_sent():
    """Every speculative request adds an event, all session long (issue 27's soak)."""
    from engine.backends.shared_server import EVENTS_KEPT

    gate, client = gate_for(lambda request: httpx.Response(404))
    for _ in range(2 * EVENTS_KEPT):
        assert await gate.admit() is None
    assert gate.stats.admitted == 2 * EVENTS_KEPT and len(gate.events) == EVENTS_KEPT
    assert list(gate.events)[-1] == ("admitted", "blind")
    await client.aclose()


async def test_the_gate_counts_this_clients_user_requests_as_its_own():
    """A user's request on the shared server is not "another client" for this client's guesses."""
    seen: list[int] = []
    backend: LlamaCppCompletion

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/completion":
            assert backend.gate is not None
            seen.append(backend.gate.own_requests)
            return sse_response(sse({"content": "x", "stop": False}, {"content": "", "stop": True}))
        return httpx.Response(404)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    backend = LlamaCppCompletion("http://shared.test", shared=True, client=client)
    prompt = Prompt(text="def f(", prefix="def f(", suffix=None, language="python")
    pieces = [p async for p in backend.generate(prompt, CompletionOptions(max_decoding_tokens=4))]
    assert pieces == ["x"] and seen == [1]
    assert backend.gate is not None and backend.gate.own_requests == 0
    await client.aclose()


def test_new_chars_counts_what_a_slot_holding_the_last_prompt_would_prefill():
    assert new_chars("def f(x):\n    return x", "def f(x):\n") == len("    return x")
    assert new_chars("abc", None) == 3
    assert new_chars("abc", "abcdef") == 0
    assert new_chars("xyz", "abc") == 3


async def test_a_guess_with_a_long_new_prefill_is_held_while_other_clients_use_the_server():
    """A prefill is one batch llama-server finishes before it notices a cancel: a guess whose prompt this client has
    not just sent (another client's request took the slot that held it) cannot step aside. A prefetch that extends
    the last prompt by the accepted text is sent; on a server nobody else uses, a long one is sent too."""
    sent: list[str] = []
    slots = [[{"is_processing": False}] * 4]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/slots":
            return httpx.Response(200, json=slots[0])
        sent.append(request.url.path)
        return sse_response(sse({"content": "x", "stop": False}, {"content": "", "stop": True}))

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    backend = LlamaCppCompletion("http://shared.test", shared=True, client=client)
    assert backend.gate is not None
    now = [1000.0]
    backend.gate._clock = lambda: now[0]
    head = "import os\n" + "x = 1\n" * 400
    user = Prompt(text=head, prefix=head, suffix=None, language="python")
    options = CompletionOptions(max_decoding_tokens=4)
    guess_options = CompletionOptions(max_decoding_tokens=4, speculative=True)

    async def run(prompt: Prompt, opts: CompletionOptions) -> list[str]:
        async with contextlib.aclosing(backend.generate(prompt, opts)) as pieces:
            return [p async for p in pieces]

    far = Prompt(text="y = 2\n" * 400, prefix="y = 2\n" * 400, suffix=None, language="python")
    assert await run(far, guess_options) == ["x"]  # nobody else seen: a long prefill may be sent
    assert await run(user, options) == ["x"]
    now[0] += 1.0
    slots[0] = [{"is_processing": True}] + [{"is_processing": False}] * 3  # another client's request
    assert await backend.gate.busy_with_others() is None  # seen
    sent.clear()
    accepted = Prompt(text=head + "def main():\n", prefix=head + "def main():\n", suffix=None, language="python")
    now[0] += 1.0
    assert await run(accepted, guess_options) == ["x"]  # extends the last prompt: a short prefill, sent
    assert sent == ["/completion"]
    now[0] += 1.0
    with pytest.raises(SpeculationHeld) as held:
        await run(far, guess_options)
    assert "characters new, and a prefill cannot step aside" in str(held.value) and not held.value.yielded
    assert sent == ["/completion"] and backend.gate.stats.held_busy == 1
    await client.aclose()


async def test_no_cache_warm_up_goes_to_a_server_others_may_use():
    """A warm-up's prefill cannot step aside midway (llama-server finishes the batch first, and a queued request's
    slot frees only after it): none is sent to a llama-server Infill did not start (68 samples of a request deferred
    behind one at N = 4 in the multi-user benchmark while others used the server; 77 and 79 at N = 8 when the
    editors started together, before any look could see the others), unless the user says it is this editor's
    alone (`completion.shared = false`: no gate)."""
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.path)
        if request.url.path == "/slots":
            return httpx.Response(200, json=[{"is_processing": False}] * 4)
        return httpx.Response(200, json={"content": ""}) if request.url.path == "/infill" else httpx.Response(404)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    prompt = Prompt(text="import os\n", prefix="import os\n", suffix="", language="python")
    shared = LlamaCppCompletion("http://shared.test", use_infill=True, shared=True, client=client)
    with pytest.raises(SpeculationHeld) as held:
        await shared.warm(prompt)
    assert "completion.shared = false" in str(held.value) and sent == []  # not even a look: nothing to decide
    own = LlamaCppCompletion("http://mine.test", use_infill=True, shared=False, client=client)
    assert own.gate is None
    await own.warm(prompt)
    assert sent == ["/infill"]
    await client.aclose()


async def test_the_shared_setting_decides_the_gate():
    from engine.backends import create_completion_stream
    from engine.config import ModelConfig

    unsaid = create_completion_stream(ModelConfig(kind="llama.cpp/completion", api_endpoint="http://127.0.0.1:1"))
    mine = create_completion_stream(ModelConfig(kind="llama.cpp/completion", api_endpoint="http://127.0.0.1:1",
                                                shared=False))
    try:
        assert unsaid.inner.gate is not None and mine.inner.gate is None  # type: ignore[attr-defined]
    finally:
        await unsaid.close()
        await mine.close()


# --- the real llama-server --------------------------------------------------------------------------------------

#: Long enough (8192 tokens a slot) that a request started here is still running when the test looks at it.
SHARED = LocalServerSettings(parallel=2, ctx_size=16384, start_timeout=60.0, extra_args=("--metrics",))
LONG = 8000


@pytest.fixture(scope="module")
def shared_server(llama_server_binary: str, tiny_model: Path) -> Iterator[str]:
    """A llama-server of its own (the session one must keep its slots for other tests)."""
    supervisor = LlamaServerSupervisor(llama_server_binary, tiny_model, SHARED)
    try:
        yield supervisor.start_blocking()
    finally:
        supervisor.stop_blocking()


async def metrics(url: str) -> dict[str, float]:
    async with httpx.AsyncClient(trust_env=False, timeout=10.0) as http:
        return parse_metrics((await http.get(url + "/metrics")).text)


async def wait_for(check, what: str, attempts: int = 6000) -> None:
    """Poll `check()` until true; the bound only stops a broken test (60 s), it is not a speed assertion."""
    for _ in range(attempts):
        if await check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never saw: {what}")


async def busy_slots(url: str) -> int:
    async with httpx.AsyncClient(trust_env=False, timeout=10.0) as http:
        parsed = parse_slots((await http.get(url + "/slots")).json())
    assert parsed is not None
    return parsed[1]


class UserStream:
    """A user's long streaming request, read in the background; counts the tokens it received."""

    def __init__(self, url: str, prompt: str) -> None:
        self.url = url
        self.prompt = prompt
        self.tokens = 0
        self.task: asyncio.Task | None = None

    def start(self) -> UserStream:
        self.task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        body = {"prompt": self.prompt, "n_predict": LONG, "temperature": 0.0, "stream": True, "cache_prompt": True}
        async with httpx.AsyncClient(trust_env=False, timeout=120.0) as http:
            async with http.stream("POST", self.url + "/completion", json=body) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        self.tokens += 1

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
            await self.task


def speculative_backend(url: str) -> LlamaCppCompletion:
    return LlamaCppCompletion(url, use_infill=False, shared=True)


def guess() -> tuple[Prompt, CompletionOptions]:
    return (Prompt(text="def guessed_next_line(x):\n", prefix="def guessed_next_line(x):\n", suffix=None,
                   language="python"),
            CompletionOptions(max_decoding_tokens=LONG, sampling_temperature=0.0, speculative=True))


async def test_a_guess_is_not_sent_while_it_would_take_the_last_free_slot(shared_server: str):
    user = UserStream(shared_server, "class Inventory:\n").start()
    backend = speculative_backend(shared_server)
    try:
        await wait_for(lambda: _has_tokens(user), "the user's request generating")
        before = await metrics(shared_server)
        prompt, options = guess()
        with pytest.raises(SpeculationHeld) as held:
            async with contextlib.aclosing(backend.generate(prompt, options)) as pieces:
                async for _ in pieces:
                    pass
        assert not held.value.yielded and "1 of 2 slots busy" in str(held.value)
        assert backend.gate is not None
        assert (backend.gate.stats.held_busy, backend.gate.stats.admitted) == (1, 0)
        # the server saw no new prompt: the guess was never sent
        assert (await metrics(shared_server))["prompt_tokens_total"] == before["prompt_tokens_total"]
    finally:
        await user.stop()
        await backend.close()


async def _has_tokens(stream: UserStream) -> bool:
    return stream.tokens > 0


async def test_a_running_guess_gives_its_slot_to_a_waiting_user_request(shared_server: str):
    await wait_for(lambda: _idle(shared_server), "an idle server")
    backend = speculative_backend(shared_server)
    prompt, options = guess()
    pieces: list[str] = []

    async def speculate() -> None:
        async with contextlib.aclosing(backend.generate(prompt, options)) as stream:
            async for piece in stream:
                pieces.append(piece)

    speculation = asyncio.ensure_future(speculate())
    users: list[UserStream] = []
    try:
        await wait_for(lambda: _true(bool(pieces) or speculation.done()), "the guess generating")
        assert not speculation.done(), "the guess was not admitted on an idle server"
        # two users type: one takes the free slot, the other would wait behind the guess
        users = [UserStream(shared_server, "def first_user(a):\n").start(),
                 UserStream(shared_server, "def second_user(b):\n").start()]
        with pytest.raises(SpeculationHeld) as yielded:
            await asyncio.wait_for(speculation, 60)
        # whichever the gate saw first: the second user waiting, or the first one taking the last free slot
        assert yielded.value.yielded
        assert "waiting for a slot" in str(yielded.value) or "other clients' requests" in str(yielded.value)
        assert backend.gate is not None and backend.gate.stats.yielded == 1
        # both users are served: the waiting one got the guess's slot
        await wait_for(lambda: _true(all(u.tokens > 0 for u in users)), "both user requests generating")
        assert (await metrics(shared_server))["requests_deferred"] == 0
    finally:
        speculation.cancel()
        for user in users:
            await user.stop()
        await backend.close()


async def _true(value: bool) -> bool:
    return value


async def _idle(url: str) -> bool:
    return await busy_slots(url) == 0


async def test_a_two_slot_server_others_use_gets_no_guesses():
    """Nobody else busy this moment is room enough on a server nobody else uses; on one others use, a guess needs
    `HEADROOM` idle slots beyond its own, which two slots do not have: the other user's next request would take
    the last one and the guess owner's own next request would wait behind its guess (once in ~2,900 samples a
    run at N = 2)."""
    slots = [[{"is_processing": False}] * 2]
    gate, client = gate_for(lambda request: httpx.Response(200, json=slots[0]) if request.url.path == "/slots"
                            else httpx.Response(404))
    now = [100.0]
    gate._clock = lambda: now[0]
    assert await gate.admit() is None  # nobody else seen: both idle is room enough
    now[0] += 1.0
    slots[0] = [{"is_processing": True}, {"is_processing": False}]  # another client's request
    assert await gate.admit() == "1 of 2 slots busy"
    now[0] += 1.0
    slots[0] = [{"is_processing": False}] * 2  # idle again, but others use this server
    assert await gate.admit() == "0 of 2 slots busy, no 2 to spare for the other clients"
    now[0] += 1.0
    slots[0] = [{"is_processing": False}] * 4  # four slots: two stay idle after the guess
    assert await gate.admit() is None
    await client.aclose()
