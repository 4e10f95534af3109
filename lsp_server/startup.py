"""`infill serve` starts with Python's garbage collector turned off, until `initialize` is answered.

Start-up creates some 100,000 objects that live as long as the server (lsprotocol's classes, the cattrs hooks,
pygls) and little garbage. The collector's passes over them cost about 60 ms of CPU before the `initialize` answer
could be sent, one full pass alone about 40 ms: more than all of Infill's own imports, and an editor waits for that
answer before it does anything else (bench/latency/startup.py). So `infill serve` pauses the collector before it
imports the server, and the server resumes it once the answer is written and its parts are built
(InfillServer.load): the garbage of the start is then collected as usual, off the path the editor waits on.

This module imports nothing else, so that pausing costs nothing itself."""

from __future__ import annotations

import gc

_paused = False


def pause_collector() -> None:
    """Turn the collector off for the start (a no-op when something else already turned it off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collector() -> None:
    """Turn the collector back on if `pause_collector` turned it off; later calls do nothing."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()
