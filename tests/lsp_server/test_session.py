"""Supersession, cancellation and debounce."""

import asyncio

import pytest

from lsp_server.session import Sessions, Superseded, adaptive_delay_ms


async def test_newer_request_supersedes_older_and_cancels_its_work():
    sessions = Sessions()
    started = asyncio.Event()
    cancelled = []

    async def slow():
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "old"

    async def fast():
        return "new"

    older = asyncio.create_task(sessions.run("u", slow))
    await started.wait()
    assert await sessions.run("u", fast) == "new"
    with pytest.raises(Superseded):
        await older
    assert cancelled == [True]
    assert sessions.superseded_count == 1


async def test_other_documents_are_independent():
    sessions = Sessions()
    gate = asyncio.Event()

    async def wait_gate():
        await gate.wait()
        return "a"

    a = asyncio.create_task(sessions.run("a", wait_gate))
    await asyncio.sleep(0)
    assert await sessions.run("b", lambda: asyncio.sleep(0, "b")) == "b"
    gate.set()
    assert await a == "a"


async def test_own_cancellation_propagates_and_cancels_the_work():
    sessions = Sessions()
    inner_cancelled = asyncio.Event()

    async def slow():
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            inner_cancelled.set()
            raise

    outer = asyncio.create_task(sessions.run("u", slow))
    await asyncio.sleep(0.01)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert inner_cancelled.is_set()
    assert sessions.active_count() == 0


async def test_debounce_delay_is_cancelled_by_supersession():
    sessions = Sessions()
    calls = []

    async def work():
        calls.append(1)
        return "x"

    first = asyncio.create_task(sessions.run("u", work, delay_s=30))
    await asyncio.sleep(0)
    assert await sessions.run("u", work, delay_s=0) == "x"
    with pytest.raises(Superseded):
        await first
    assert calls == [1]  # the debounced request never reached the model


def test_adaptive_delay():
    assert adaptive_delay_ms([], [], 25, 600) == 25  # no history: minimum
    assert adaptive_delay_ms([100, 120, 110], [], 25, 600) == pytest.approx(165)  # 1.5 × median interval
    assert adaptive_delay_ms([100, 120, 110], [50, 60, 70], 25, 600) == 60  # a fast model is cheap to call
    assert adaptive_delay_ms([900, 1000], [2000], 25, 600) == 600  # clamped
    assert adaptive_delay_ms([5000, 9000], [100], 25, 600) == 25  # pauses are not typing rhythm


def test_fixed_and_adaptive_from_recorded_history():
    t = [0.0]
    sessions = Sessions(clock=lambda: t[0])
    assert sessions.debounce_ms("u", "fixed", 150, 25, 600) == 150
    for step in (0.0, 0.1, 0.1, 0.1):
        t[0] += step
        sessions.note_automatic("u")
    assert sessions.debounce_ms("u", "adaptive", 150, 25, 600) == pytest.approx(150)
    sessions.record_latency(40)
    assert sessions.debounce_ms("u", "adaptive", 150, 25, 600) == pytest.approx(40)


async def test_cancellation_wins_over_work_that_swallows_it():
    """A cancelled request is reported as cancelled even if the work ignores the cancellation and returns."""
    import sys
    if sys.version_info < (3, 11):
        pytest.skip("Task.cancelling() needs Python 3.11")
    sessions = Sessions()
    started = asyncio.Event()

    async def stubborn():
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "partial"

    outer = asyncio.create_task(sessions.run("u", stubborn))
    await started.wait()
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
