"""`infill serve` keeps Python's garbage collector out of the way of the `initialize` answer.

Importing the server creates some 50,000 objects that live as long as it does (lsprotocol's classes, pygls, the
server's modules). The first full collection came while the server was being built, before the answer could be sent,
and walked all of them: about 40 ms of CPU, more than all of Infill's own imports (an editor waits for that answer
before it does anything else: bench/latency/startup.py). So once the imports are done, `infill serve` freezes what
exists (`gc.freeze()`: no later collection walks it; the collections during the imports have freed all but ~0.1 MB
of their garbage) and pauses the collector until the answer is written and the server's parts are built
(InfillServer.load). The pause ends with one collection, of what was made since the freeze only, and a second
freeze of what survived (the parts and the modules behind them).

Pausing the collector from the very start instead answered sooner still (it also skipped the young collections
during the imports, ~30 ms), but the imports' garbage (some 8 MB) was then freed all at once, too late for its
memory to be reused: the server's resident memory stayed ~6 MB higher (62.4 against 56.6 MB after 300 requests,
bench/reliability/lsp_memory.py).

This module imports nothing else, so that it costs nothing itself."""

from __future__ import annotations

import gc

_paused = False


def freeze_and_pause() -> None:
    """Leave every object that exists now out of all later collections, and turn the collector off until
    `end_pause` (unless something else already turned it off)."""
    global _paused
    gc.freeze()
    if gc.isenabled():
        gc.disable()
        _paused = True


def end_pause() -> None:
    """If `freeze_and_pause` turned the collector off: collect once, freeze the survivors, turn it back on. Later
    calls, and calls without a pause, do nothing."""
    global _paused
    if _paused:
        _paused = False
        gc.collect()
        gc.freeze()
        gc.enable()
