"""A memory probe for hunting growth in long runs (issue 27's soak), off unless asked for.

With `INFILL_TRACEMALLOC=<frames>` in the server's environment, Python's allocations are traced from the start
(`tracemalloc`, `<frames>` frames per traceback) and the server answers `infill/memory`: live traced memory, the
allocation sites whose size grew most since the first `infill/memory` (or the last one with `"reset": true`),
object counts by type (`gc`) and their change since the previous call, the process's RSS and glibc malloc's own
figures (what it holds from the system and what of that is in use: when RSS grows while live memory does not, the
difference is there).

Tracing slows the server down by a third or more, so it is never on by default and the request does not exist
without the variable. Used by hand: `INFILL_TRACEMALLOC=8 python -m bench.replay.soak --loopback ...`."""

from __future__ import annotations

import collections
import gc
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # ctypes and tracemalloc are imported by the probe itself: the server's start pays nothing without it
    import tracemalloc

ENV = "INFILL_TRACEMALLOC"
METHOD = "infill/memory"


def frames_requested() -> int:
    """The number of frames asked for in INFILL_TRACEMALLOC (0: off)."""
    try:
        return max(0, int(os.environ.get(ENV, "0") or 0))
    except ValueError:
        return 0


def malloc_info() -> dict[str, int] | None:
    """glibc's `mallinfo2()`: bytes malloc got from the system (arena + mmapped) and bytes in use; None elsewhere."""
    import ctypes
    import ctypes.util

    class _MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                     "keepcost")]

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _MallInfo2
    info = fn()
    return {"system_bytes": info.arena + info.hblkhd, "in_use_bytes": info.uordblks + info.hblkhd,
            "free_bytes": info.fordblks}


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class MemoryProbe:
    def __init__(self, frames: int) -> None:
        import tracemalloc

        tracemalloc.start(frames)
        self._baseline: tracemalloc.Snapshot | None = None
        self._types: collections.Counter[str] = collections.Counter()

    def report(self, top: int = 20, reset: bool = False) -> dict[str, Any]:
        """`reset`: after this report (compared with the baseline so far) this snapshot becomes the baseline later
        ones compare with (the end of a warm-up)."""
        import linecache
        import tracemalloc

        gc.collect()
        snapshot = tracemalloc.take_snapshot().filter_traces((tracemalloc.Filter(False, tracemalloc.__file__),
                                                              tracemalloc.Filter(False, linecache.__file__)))
        growth = snapshot.compare_to(self._baseline or snapshot, "traceback")
        if self._baseline is None or reset:
            self._baseline = snapshot
        types = collections.Counter(type(o).__name__ for o in gc.get_objects())
        changed = {name: count - self._types.get(name, 0) for name, count in types.items()
                   if count != self._types.get(name, 0)}
        self._types = types
        current, peak = tracemalloc.get_traced_memory()
        return {
            "traced_bytes": current, "traced_peak_bytes": peak, "rss_bytes": rss_bytes(), "malloc": malloc_info(),
            # file:line only: formatting with source lines would fill linecache, which then shows as growth
            "growth": [{"bytes": s.size_diff, "count": s.count_diff,
                        "where": [f"{f.filename}:{f.lineno}" for f in s.traceback][-8:]} for s in growth[:top]],
            "types": dict(types.most_common(top)),
            "types_changed": dict(sorted(changed.items(), key=lambda kv: -abs(kv[1]))[:top]),
        }


def register(server: Any) -> None:
    """Register `infill/memory` when INFILL_TRACEMALLOC asks for it (see the module docstring)."""
    frames = frames_requested()
    if not frames:
        return
    probe = MemoryProbe(frames)

    @server.feature(METHOD)
    def on_memory(ls: Any, params: Any) -> dict[str, Any]:
        def param(name: str) -> Any:
            return getattr(params, name, None) or (params.get(name) if isinstance(params, dict) else None)

        top = param("top")
        return probe.report(top if isinstance(top, int) else 20, reset=param("reset") is True)
