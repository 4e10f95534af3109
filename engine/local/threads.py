"""How many threads the supervised llama-server gets, from how busy the machine is (`completion.local.threads`
unset).

Why it matters: llama.cpp's threads meet at a barrier after every layer. When another program holds a core, the
thread that shares it runs in time slices and the others spin waiting for it: on the 2-core machine two threads
made 60 tokens/s idle but 24 beside one busy process and 15 beside two, one thread 40 / 41 / 23 (issue 25); on a
machine loaded far past its cores two threads fell below 1 token/s where one made 9 (bench/replay/busy_machine.py,
docs/busy-machine.md). So the server gets one thread per core that other programs leave free, at least one, for
generation and prompt processing alike, and the supervisor restarts it with another count when the load has changed
for a while and it is idle (a restart costs the model load and the prompt cache, so it is rare: hysteresis).

What "other programs" use is read from /proc (Linux): all CPU time minus llama-server's own and that of Infill's
server, which supervises it. Elsewhere, and when the user sets `threads`, the count is fixed."""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable

#: Seconds between looks at the machine while llama-server runs.
TUNE_INTERVAL_S = 5.0
#: Looks in a row that must agree on a new thread count before the server is restarted with it (~30 s).
STABLE_SAMPLES = 6
#: The look at the machine before llama-server starts (it takes seconds to load the model: this is not noticed).
INITIAL_SAMPLE_S = 0.2


def choose_threads(cpus: int, others_busy: float) -> int:
    """One thread per core the other programs leave free, at least one. A core counts as taken when they use more
    than three quarters of it: the editor, the language server itself and a test runner's bursts must not cost a
    thread (and a restart)."""
    free = cpus - max(0.0, others_busy)
    return max(1, min(cpus, int(free + 0.75)))


@dataclass
class ThreadTuner:
    """Decides when a different thread count is worth a restart: only when STABLE_SAMPLES looks in a row say the
    same new count (a build that runs for a minute, not a burst)."""

    cpus: int
    current: int
    stable: int = STABLE_SAMPLES
    _recent: deque[int] = field(default_factory=deque)

    def observe(self, others_busy: float) -> int | None:
        """A new look; the thread count to restart with, or None."""
        self._recent.append(choose_threads(self.cpus, others_busy))
        while len(self._recent) > self.stable:
            self._recent.popleft()
        if len(self._recent) == self.stable and len(set(self._recent)) == 1 and self._recent[0] != self.current:
            return self._recent[0]
        return None

    def switched(self, threads: int) -> None:
        self.current = threads
        self._recent.clear()


def _proc_stat() -> tuple[int, int] | None:
    """(busy ticks, all ticks) of the whole machine from /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()[1:]
    except OSError:
        return None
    values = [int(v) for v in fields[:8]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return sum(values) - idle, sum(values)


def _process_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            text = fh.read()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15 of stat)


class CpuSampler:
    """Cores kept busy by programs other than llama-server and the process that supervises it (Infill's server,
    whose work is the same user's requests) since the last look (Linux /proc); None elsewhere.

    The supervising process is left out because it is busiest exactly while the user types (documents, context,
    post-processing, next edits): counted as another program, it took a thread from llama-server in the middle of
    typing (the typing replay with next-edit requests on an idle machine: a run where the server fell to one thread
    made 107 model calls and 219 shown suggestions where the others made 168-189 and 269-284)."""

    def __init__(self, own_pid: Callable[[], int | None], host_pid: Callable[[], int | None] = os.getpid) -> None:
        self._own_pid = own_pid
        self._host_pid = host_pid
        #: Other Infill processes that use this llama-server (engine.local.shared): their servers' work is the same
        #: user's typing, left out like the host's.
        self.guest_pids: Callable[[], Iterable[int]] = tuple
        self._last: tuple[int, int, dict[int, int]] | None = None  # machine busy, machine all, ticks per own pid
        self.cpus = os.cpu_count() or 1

    def initial(self, window_s: float = INITIAL_SAMPLE_S) -> float | None:
        """Before llama-server runs: the cores other programs keep busy over a short look (`window_s`), else the
        1-minute load average. The load average lags a minute behind: right after a build or a test run it still
        says "busy", and llama-server started with one thread and was restarted with two half a minute later
        (seen between the runs of the typing replay)."""
        self._last = None
        if self.others_busy() is None and self._last is not None:
            time.sleep(window_s)
            busy = self.others_busy()
            self._last = None  # the look before llama-server runs is not the baseline of the next one
            if busy is not None:
                return busy
        try:
            return min(float(self.cpus), os.getloadavg()[0])
        except OSError:
            return None

    def others_busy(self) -> float | None:
        machine = _proc_stat()
        mine = {p for p in (self._own_pid(), self._host_pid()) if p is not None}
        ticks: dict[int, int] = {}
        for pid in mine:
            value = _process_ticks(pid)
            if value is None:
                return None
            ticks[pid] = value
        for pid in set(self.guest_pids()) - mine:  # a guest may come and go between looks
            value = _process_ticks(pid)
            if value is not None:
                ticks[pid] = value
        if machine is None:
            return None
        busy, total = machine
        last, self._last = self._last, (busy, total, ticks)
        if last is None or total <= last[1]:
            return None
        # per process, so that one that came, went or was restarted (a new pid) between two looks does not count
        # its whole lifetime's time into this interval
        own = sum(value - last[2][pid] for pid, value in ticks.items() if last[2].get(pid, value + 1) <= value)
        others = max(0, (busy - last[0]) - own)
        return self.cpus * others / (total - last[1])
