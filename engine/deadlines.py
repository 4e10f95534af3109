"""`wait_for`: asyncio.wait_for that never swallows a cancellation.

Before Python 3.12, asyncio.wait_for returns the awaited result when that finished in the same loop turn as the
caller's cancellation (CPython gh-86296): the cancelled task goes on as if nothing had happened. A completion
cancelled by a newer keystroke at the moment the model became ready then ran its whole generation for nobody, taking
a slot the newer request waited for; a prefetch cancelled as it ended counted as one that swallowed its cancellation
(lsp_server.prefetch). Here the cancellation is raised after all, read from the task's count of cancellations asked
for (Python 3.11: `Task.cancelling()`; 3.12 fixed wait_for itself; 3.10 has neither, and keeps the old behaviour).

`cancellations()` reads that count: the one place the code asks whether the current task is being cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def wait_for(awaitable: Awaitable[T], timeout: float | None) -> T:
    """asyncio.wait_for(awaitable, timeout), but a cancellation of the calling task asked for while it waited is
    raised even when the awaitable finished in that same turn."""
    before = cancellations()
    result = await asyncio.wait_for(awaitable, timeout)
    if cancellations() > before:
        raise asyncio.CancelledError
    return result


def cancellations() -> int:
    """How many cancellations of the current task are asked for and not yet handled (`Task.cancelling()`); above 0:
    the task itself is being cancelled ($/cancelRequest, supersession), not only something it awaited. Always 0 on
    Python 3.10, which has no such count, and outside a task."""
    cancelling = getattr(asyncio.current_task(), "cancelling", None)
    return cancelling() if cancelling is not None else 0
