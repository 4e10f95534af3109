"""engine.deadlines.wait_for: asyncio.wait_for without the lost cancellation of Python < 3.12 (gh-86296)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from engine import deadlines


async def _cancelled_as_it_finishes(wait_for) -> asyncio.Task:
    """A task waiting in `wait_for` whose awaited future finishes in the same loop turn as the task is cancelled."""
    awaited = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(wait_for(awaited, 10.0))
    await asyncio.sleep(0)  # the task now waits
    awaited.set_result("done")
    task.cancel()
    return task


async def test_a_cancellation_in_the_turn_the_awaited_one_finishes_is_raised():
    task = await _cancelled_as_it_finishes(deadlines.wait_for)
    if sys.version_info < (3, 11):
        pytest.skip("Python 3.10 has no Task.cancelling(): the cancellation cannot be told apart")
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 fixed asyncio.wait_for itself")
async def test_asyncio_wait_for_loses_that_cancellation_here():
    """The fault the helper exists for, on this Python: the cancelled task goes on with the result."""
    task = await _cancelled_as_it_finishes(asyncio.wait_for)
    assert await task == "done"


async def test_results_timeouts_and_plain_cancellations_are_as_with_asyncio():
    assert await deadlines.wait_for(asyncio.sleep(0, "x"), 1.0) == "x"
    assert await deadlines.wait_for(asyncio.sleep(0, "y"), None) == "y"
    with pytest.raises(asyncio.TimeoutError):
        await deadlines.wait_for(asyncio.sleep(10), 0.01)
    task = asyncio.ensure_future(deadlines.wait_for(asyncio.sleep(10), 10.0))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancellation_caught_before_does_not_cancel_a_later_wait():
    """A task that caught (and handled) an earlier cancellation without uncancel() still counts it: only one asked
    for during this wait is raised."""
    async def body() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            pass  # handled: the task goes on
        return await deadlines.wait_for(asyncio.sleep(0, "after"), 1.0)

    task = asyncio.ensure_future(body())
    await asyncio.sleep(0)
    task.cancel()
    assert await task == "after"
