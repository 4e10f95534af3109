"""The next edit after a shown one, predicted while the user looks at it (`textDocument/didShowInlineEdit`).

With a model, accepting an edit and asking for the next costs a whole model call, and the chain of edits (accept,
the next one appears, accept …) waits for each. So when a model's edit is shown, the document as it will be once
the edit is applied is sent to the model at once, the way Copilot does (microsoft/vscode-copilot-chat, PR #222).
When the user accepts, the client's didChange makes exactly that text, and the request that follows takes the
prediction, finished or still running, instead of starting a new one. Anything else the user does makes it stale: a
request for another text, or with the cursor outside the window the prediction rewrote, cancels it and asks the
model as usual.

One prefetch at a time (the newest shown edit's): the model competes with ghost text for the same cores
(gate.py still puts completions first), and Copilot found that prefetching on every show tripled its requests."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Awaitable, Callable

from engine.next_edit.types import Prediction


@dataclass
class _Prefetched:
    uri: str
    #: The document's text (LF breaks) once the shown edit is applied.
    text: str
    #: The cursor lines the prediction's editable window covers, first and last.
    lines: tuple[int, int]
    task: asyncio.Future[Prediction]


class Prefetch:
    def __init__(self) -> None:
        self._current: _Prefetched | None = None

    def start(self, uri: str, text: str, lines: tuple[int, int],
              work: Callable[[], Awaitable[Prediction]]) -> None:
        """Prefetch the prediction for `text` of `uri` (a prefetch for an earlier shown edit is cancelled)."""
        self.cancel()
        task = asyncio.ensure_future(work())
        task.add_done_callback(_retrieved)
        self._current = _Prefetched(uri, text, lines, task)

    def take(self, uri: str, text: str, line: int) -> asyncio.Future[Prediction] | None:
        """The prediction prefetched for this text of `uri`, with the cursor on `line`, finished or running (then
        it is no longer kept), or None (a stale one is cancelled). One that failed or yielded to ghost text is
        None too: the caller asks the model afresh."""
        current, self._current = self._current, None
        if current is None:
            return None
        usable = current.uri == uri and current.text == text and current.lines[0] <= line <= current.lines[1]
        if not usable or (current.task.done() and (current.task.cancelled() or current.task.exception())):
            current.task.cancel()
            return None
        return current.task

    def cancel(self, uri: str | None = None) -> None:
        """Cancel the prefetch (of `uri` only, when given)."""
        if self._current is not None and (uri is None or self._current.uri == uri):
            self._current.task.cancel()
            self._current = None


def _retrieved(task: asyncio.Future[Prediction]) -> None:
    """A prediction nobody takes may end in an error (a model error, Yielded): read it, so asyncio does not log it
    as never retrieved."""
    if not task.cancelled():
        task.exception()
