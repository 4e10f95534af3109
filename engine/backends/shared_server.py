"""Speculation that yields on a model server others share (a team's llama-server, the `llama.cpp/*` kinds).

A prefetch or a cache warm-up is a guess; on a shared server it takes a slot another user's keystroke may need, and
llama-server makes a request that finds no idle slot wait (`requests_deferred`) until one frees. So speculative work
asks the server first and steps aside:

- it is sent only when, after it takes a slot, `HEADROOM` (two) slots are still idle, and nobody is waiting; or,
  on a server no other client was seen on (`others_seen`), when nobody else is busy this moment: then the only
  request that could want the slot is this user's own, which cancels its prefetch before it calls the model. So
  a 2-slot server others use gets no guesses;
- while it runs, the server is looked at every `POLL_S`; it is cancelled (llama-server frees a slot whose
  connection closes after its current batch) when a request is deferred, and already when fewer than `HEADROOM`
  slots are idle while another client uses the server: the gate cannot see a request before it waits, so a guess
  that stays on a full server makes the next user's keystroke wait (the multi-user benchmark counted 2 such waits
  in 718 samples when guesses yielded only to a deferred request);
- on a server others use, a guess whose prompt is mostly new to this client (more than `GUESS_NEW_CHARS` beyond
  what it last sent) is not sent: its prefill is one batch that llama-server finishes before it notices the cancel,
  so such a guess cannot step aside; for the same reason no cache warm-up (a whole prompt's prefill) is sent to a
  server others may use at all (`LlamaCppCompletion.warm`; `completion.shared = false` says a server is this
  editor's alone);
- after a 429 or 503 from the server, nothing speculative is sent for `BACKOFF_S` (or what Retry-After says).

What the server says comes from `GET /slots` (each slot's `is_processing`; on by default) and `GET /metrics`
(`requests_deferred`, `requests_processing`; needs `--metrics`). A server that answers neither is not gated (there
is nothing to see), which is what the counters show as `blind`.

Requests are not pinned to slots here (`id_slot`): on a server several clients use, a pin to a slot another client
is using makes the request wait for that slot while others are idle (measured in bench/replay/multi_user.py)."""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

log = logging.getLogger(__name__)

#: How often a running speculative request looks at the server (two small GETs; a report this fresh is shared by
#: every guess of this client).
POLL_S = 0.05
#: No speculation for this long after the server answered 429 or 503.
BACKOFF_S = 5.0
#: Longest a look at the server may take. A look that times out tells nothing, like a server that reports nothing
#: ("blind": not gated): counting it as "busy" would hold every guess whenever this machine, not the server, is slow
#: (a loaded laptop answering its own loopback GET late), and a server that hangs holds the user's requests as well.
REPORT_TIMEOUT_S = 0.5
#: A report this fresh is reused (several speculative requests deciding in the same moment).
REPORT_TTL_S = 0.05
#: Why nothing speculative is sent during the back-off after a 429 or 503.
BACKOFF_REASON = "the server answered 429/503 a moment ago"
#: A server on which another client was seen busy within this long counts as used by others now.
OTHERS_WINDOW_S = 300.0
#: On a server others use, a guess whose prompt goes this many characters beyond the longest beginning it shares
#: with the last prompt this client sent is held: its prefill would be long (~500 tokens, ~1.5 s on a 2-core CPU,
#: the whole prompt when another client's request has taken the slot that held this client's prompt), and a
#: prefill cannot be cancelled midway. A prefetch after an accept adds the accepted text only.
GUESS_NEW_CHARS = 1500
#: Gate events kept for inspection (SharedServerGate.events).
EVENTS_KEPT = 1000


@dataclass(frozen=True)
class Load:
    """What the server reports. `deferred` is None without `/metrics`."""

    slots: int
    busy: int
    deferred: int | None = None

    @property
    def idle(self) -> int:
        return max(0, self.slots - self.busy)


#: Idle slots a guess leaves to other clients' next requests.
#:
#: One is not enough: a cancelled guess frees its slot only when llama-server has noticed the closed connection
#: and finished its current batch (a prompt's prefill is one batch), and a request arriving meanwhile waits. In the
#: multi-user benchmark (N = 4, 600 keystrokes, two runs each) one slot of headroom let a request wait behind a
#: guess in 72 samples of one run, two in none, with requests deferred in 3.4-3.7 % of the samples instead of
#: 18-22 % at the same keystrokes saved. (Warm-ups, whose prefill is the longest, are not sent at all to a server
#: others may use: LlamaCppCompletion.warm.) A server of two slots has none to spare: on one that others use, no
#: guess is sent (`admit_reason`); with one slot of headroom there, the guess owner's own next request waited
#: behind its guess once in ~2,900 samples a run at N = 2.
HEADROOM = 2


def admit_reason(load: Load, own_running: int = 0, others_seen: bool = False) -> str | None:
    """Why a new speculative request must not be sent now (None: send it). `own_running`: this client's
    speculative requests already on the server; `others_seen`: other clients used it lately.

    "Nobody else busy this moment" is room only on a server no other client was seen on: on one others use, the
    next of their requests would find the guess in the slot it needs."""
    if load.deferred:
        return f"{load.deferred} request(s) waiting for a slot"
    if load.idle >= 1 + HEADROOM:
        return None
    if load.idle >= 1 and load.busy - own_running <= 0:
        if not others_seen:
            return None
        return f"{load.busy} of {load.slots} slots busy, no {HEADROOM} to spare for the other clients"
    return f"{load.busy} of {load.slots} slots busy"


def yield_reason(load: Load, own_running: int = 1, own_requests: int = 0) -> str | None:
    """Why a running speculative request must give its slot up (None: it may go on). `own_running`: this client's
    speculative requests on the server (this one included); `own_requests`: this client's user requests there.

    A request is waiting; or fewer than `HEADROOM` slots are idle while another client holds one: the next
    requests to arrive would wait behind the guess, and the gate sees them only after they waited. On a full
    server that only this client uses, its own next request supersedes its guess before it is sent."""
    if load.deferred:
        return f"{load.deferred} request(s) waiting for a slot"
    others = load.busy - own_running - own_requests
    if load.idle < HEADROOM and others > 0:
        return f"{load.busy} of {load.slots} slots busy, {others} with other clients' requests"
    return None


def new_chars(text: str, last: str | None) -> int:
    """Characters of `text` beyond its longest common beginning with `last` (the prompt this client sent last):
    about what a slot that still holds `last` prefills anew for `text`."""
    if not last:
        return len(text)
    return len(text) - len(os.path.commonprefix([text, last]))


def parse_slots(reply: Any) -> tuple[int, int] | None:
    """(slots, busy) from `/slots`; None for a reply of another shape."""
    if not isinstance(reply, list) or not reply:
        return None
    slots = [s for s in reply if isinstance(s, dict)]
    if not slots:
        return None
    busy = sum(1 for s in slots if s.get("is_processing") or s.get("state") == 1)
    return len(slots), busy


def parse_metrics(text: str) -> dict[str, float]:
    """`llamacpp:name value` lines of the Prometheus text format."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.partition(" ")
        try:
            out[name.removeprefix("llamacpp:")] = float(value.split()[0])
        except (ValueError, IndexError):
            continue
    return out


@dataclass
class GateStats:
    admitted: int = 0
    held_busy: int = 0
    held_backoff: int = 0
    #: Cancelled while running because someone else needed the slot.
    yielded: int = 0
    #: 429/503 answers seen (each starts a backoff).
    overloads: int = 0
    #: Admitted without a report (the server answers neither /slots nor /metrics).
    blind: int = 0


class SharedServerGate:
    """One per completion backend pointed at a shared llama-server."""

    def __init__(self, client: Callable[[], httpx.AsyncClient], base_url: Callable[[], Awaitable[str]],
                 headers: Callable[[], dict[str, str]] = dict, clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._base_url = base_url
        self._headers = headers
        self._clock = clock
        self._hold_until = 0.0
        self._report: tuple[float, Load | None] | None = None
        self._has_metrics: bool | None = None  # None: not known yet
        self._has_slots: bool | None = None
        #: This client's speculative requests on the server now.
        self.running = 0
        #: This client's own user requests on the server now (not speculative): not "another client".
        self.own_requests = 0
        #: When a look last saw a slot busy with another client's request (None: never).
        self._others_seen_at: float | None = None
        self.stats = GateStats()
        #: (event, detail), newest last, for tests that count what happened. Bounded: every speculative request adds
        #: one, for as long as the server runs (a list grew by ~150 bytes per prefetch all session).
        self.events: collections.deque[tuple[str, str]] = collections.deque(maxlen=EVENTS_KEPT)

    # --- what the server says -------------------------------------------------------------------------------

    async def _get(self, path: str) -> httpx.Response | None:
        base = (await self._base_url()).rstrip("/")
        try:
            return await self._client().get(base + path, headers=self._headers(), timeout=REPORT_TIMEOUT_S)
        except httpx.HTTPError as exc:
            log.debug("shared server: GET %s failed: %s", path, exc)
            return None

    async def load(self) -> Load | None:
        """The server's load now (reused for REPORT_TTL_S); None when it reports nothing."""
        now = self._clock()
        if self._report is not None and now - self._report[0] < REPORT_TTL_S:
            return self._report[1]
        slots: tuple[int, int] | None = None
        deferred: int | None = None
        processing: int | None = None
        if self._has_slots is not False:
            response = await self._get("/slots")
            if response is not None and response.status_code == 200:
                try:
                    slots = parse_slots(response.json())
                except ValueError:
                    slots = None
                self._has_slots = slots is not None
            elif response is not None and response.status_code in (404, 501):
                self._has_slots = False
        if self._has_metrics is not False:
            response = await self._get("/metrics")
            if response is not None and response.status_code == 200:
                metrics = parse_metrics(response.text)
                if "requests_deferred" in metrics:
                    deferred = int(metrics["requests_deferred"])
                    processing = int(metrics.get("requests_processing", 0))
                self._has_metrics = deferred is not None
            elif response is not None and response.status_code in (404, 501):
                self._has_metrics = False
        load: Load | None
        if slots is not None:
            load = Load(slots[0], slots[1], deferred)
        elif processing is not None:  # no /slots: the slot count is unknown; assume the busy ones plus one
            load = Load(processing + 1, processing, deferred)
        else:
            load = None
        self._report = (self._clock(), load)
        return load

    # --- the rules ------------------------------------------------------------------------------------------

    def note_status(self, status: int, retry_after: float | None = None) -> None:
        """Any answer of the server: 429 and 503 mean it is overloaded (or loading): hold speculation."""
        if status not in (429, 503):
            return
        self.stats.overloads += 1
        self._hold_until = max(self._hold_until, self._clock() + (retry_after or BACKOFF_S))
        self.events.append(("overload", str(status)))

    async def _verdict(self, guess: bool = False) -> tuple[str, str | None, Load | None]:
        """What the rules say of one more speculative request now: ("backoff" | "blind" | "busy" | "free", why
        not (None: it may be sent), the load seen). `guess`: for a request that takes a slot from the others (the
        rule for a server others use applies), not work that only waits (`busy_with_others`)."""
        if self._clock() < self._hold_until:
            return "backoff", BACKOFF_REASON, None
        load = await self.load()
        if load is None:
            return "blind", None, None
        self._note_others(load)
        reason = admit_reason(load, self.running, others_seen=guess and self.others_seen())
        return ("busy" if reason is not None else "free"), reason, load

    def _note_others(self, load: Load) -> None:
        if load.busy - self.running - self.own_requests > 0:
            self._others_seen_at = self._clock()

    def others_seen(self) -> bool:
        """Whether another client was seen using the server within OTHERS_WINDOW_S: a server of one's own (a
        user's llama-server that only this editor uses) is not shared in that sense."""
        return self._others_seen_at is not None and self._clock() - self._others_seen_at < OTHERS_WINDOW_S

    async def admit(self, new: int = 0) -> str | None:
        """None: a speculative request may be sent now; else why not (counted). `new`: characters of its prompt this
        client has not sent just before (`new_chars`); a long new prefill is not sent while others use the server."""
        kind, reason, load = await self._verdict(guess=True)
        if reason is None and new > GUESS_NEW_CHARS and self.others_seen():
            kind, reason = "busy", f"its prompt is {new} characters new, and a prefill cannot step aside"
        if kind == "backoff":
            self.stats.held_backoff += 1
            self.events.append(("held", "backoff"))
        elif kind == "busy":
            self.stats.held_busy += 1
            self.events.append(("held", reason or ""))
        else:
            self.stats.blind += kind == "blind"
            self.stats.admitted += 1
            self.events.append(("admitted", "blind" if load is None else f"{load.busy}/{load.slots} busy"))
        return reason

    async def busy_with_others(self) -> str | None:
        """Why work that may wait (a request fired before the user pauses) should wait now: the reason a speculative
        request would be held (`admit`'s rules), None when it would be admitted. Not counted as a speculative
        request."""
        _, reason, _ = await self._verdict()
        if reason is not None and reason != BACKOFF_REASON:
            self.events.append(("early-held", reason))
        return reason

    async def watch(self, on_yield: Callable[[str], None]) -> None:
        """Look at the server every POLL_S while a speculative request runs; call `on_yield(reason)` once and
        return when it has to step aside. Cancelled by the caller when the request ends."""
        while True:
            await asyncio.sleep(POLL_S)
            if self._clock() < self._hold_until:
                reason: str | None = "the server answered 429/503"
            else:
                reason = None
                load = await self.load()
                if load is not None:
                    self._note_others(load)
                    reason = yield_reason(load, self.running, self.own_requests)
            if reason is not None:
                self.stats.yielded += 1
                self.events.append(("yielded", reason))
                on_yield(reason)
                return
