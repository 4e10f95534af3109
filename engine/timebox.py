"""Time-boxed generation: once a budget is spent, the completion ends at the next line break.

A suggestion is worth most when it arrives while the user still looks at the place it is for; a long multi-line
block generated at 50 tokens/s on a laptop CPU can take seconds. Cutting at a line break keeps every suggestion made
of whole lines (llama.vim and Copilot do the same). llama-server does this itself with `t_max_predict_ms`; this cut
is the same rule on the client side, for remote backends and as a guarantee for servers that ignore the field.
The budget counts from the first piece of text, as llama-server's does, so prompt processing is not cut short.
A budget of 0 keeps exactly the first line with content (used for "the next line" after an accepted one)."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]


class TimeBox:
    def __init__(self, budget_ms: int | None, clock: Clock = time.monotonic) -> None:
        self.budget_ms = budget_ms
        self._clock = clock
        self._started: float | None = None
        self._content = False  # some non-blank text has been kept: a line break may end the completion
        #: The budget was spent and the text was cut at a line break.
        self.expired = False

    def cut(self, piece: str) -> tuple[str, bool]:
        """(the part of `piece` to keep, whether generation must stop now)."""
        if self.budget_ms is None or not piece:
            return piece, False
        now = self._clock()
        if self._started is None:
            self._started = now
        if (now - self._started) * 1000.0 >= self.budget_ms:
            start = 0 if self._content else len(piece) - len(piece.lstrip())
            newline = piece.find("\n", start)
            if newline >= 0 and (self._content or piece[:newline].strip()):
                self.expired = True
                return piece[:newline], True
        self._content = self._content or bool(piece.strip())
        return piece, False
