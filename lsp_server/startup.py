"""`infill serve` starts with Python's garbage collector paused, until `initialize` is answered.

Importing and building the server creates some 100,000 objects that live as long as it does (lsprotocol's classes,
the cattrs hooks, pygls, the server's modules). The collector's passes over them cost about 60 ms of CPU before the
`initialize` answer could be sent (one full pass alone about 40 ms), more than all of Infill's own imports, and an
editor waits for that answer before it does anything else (bench/latency/startup.py). So `infill serve` pauses the
collector before it imports the server, and the server ends the pause once the answer is written and its parts are
built (InfillServer.load): one full collection then frees the garbage of the start (some 8 MB), and `gc.freeze()`
leaves everything that survived out of all later collections. Without the freeze, the objects of the start, all
young at once, would be walked again by the next young, middle and full passes soon after (the server's CPU time to
the first completion stayed as before with the freeze; with a plain pause the first completion came later), and
every later full pass would walk them too.

This module imports nothing else, so that pausing costs nothing itself."""

from __future__ import annotations

import gc

_paused = False


def pause_collector() -> None:
    """Turn the collector off for the start (nothing happens when something else already turned it off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def end_pause() -> None:
    """If `pause_collector` turned the collector off: collect once, freeze the survivors, turn it back on. Later
    calls, and calls without a pause, do nothing."""
    global _paused
    if _paused:
        _paused = False
        gc.collect()
        gc.freeze()
        gc.enable()
