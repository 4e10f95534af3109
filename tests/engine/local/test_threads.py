"""The thread policy of the supervised llama-server (engine/local/threads.py): the rule, the hysteresis, and a
restart with another thread count against the real llama-server, driven by a scripted view of the machine."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.config import LocalServerSettings
from engine.local.supervisor import LlamaServerSupervisor
from engine.local.threads import CpuSampler, ThreadTuner, choose_threads


def test_one_thread_per_core_left_free():
    assert choose_threads(2, 0.0) == 2
    assert choose_threads(2, 0.7) == 2  # the editor and the language server's bursts do not take a core
    assert choose_threads(2, 0.8) == 1
    assert choose_threads(2, 1.0) == 1  # a job keeps one core busy
    assert choose_threads(2, 2.0) == 1  # never fewer than one
    assert choose_threads(8, 3.2) == 5
    assert choose_threads(4, -1.0) == 4


def test_a_restart_only_for_a_lasting_change():
    tuner = ThreadTuner(cpus=2, current=2, stable=3)
    assert [tuner.observe(b) for b in (1.0, 1.0, 0.0, 1.0, 1.0)] == [None] * 5  # a burst does not count
    assert tuner.observe(1.0) == 1
    tuner.switched(1)
    assert [tuner.observe(b) for b in (1.0, 1.0, 1.0)] == [None] * 3  # already there


def test_the_supervising_process_is_not_another_program(monkeypatch):
    """Infill's server is busiest while the user types: counted as another program, it cost llama-server a thread."""
    from engine.local import threads

    machine = iter([(1000, 4000), (1000 + 150, 4000 + 200)])  # 150 busy ticks of 200 (2 cores x 100 ticks)
    ticks = {11: iter([500, 550]), 22: iter([300, 380])}  # llama-server 50, the server 80: others 20
    monkeypatch.setattr(threads, "_proc_stat", lambda: next(machine))
    monkeypatch.setattr(threads, "_process_ticks", lambda pid: next(ticks[pid]))
    sampler = CpuSampler(lambda: 11, lambda: 22)
    sampler.cpus = 2
    assert sampler.others_busy() is None  # the baseline
    assert sampler.others_busy() == 2 * 20 / 200


def test_other_infill_processes_on_the_shared_server_are_not_other_programs(monkeypatch):
    """Editors that use this llama-server (engine.local.shared) work for the same user's typing, like the host; one
    that attaches or detaches between two looks counts no time it spent before."""
    from engine.local import threads

    machine = iter([(1000, 4000), (1000 + 150, 4000 + 200), (1150 + 150, 4200 + 200)])
    ticks = {11: iter([500, 550, 600]), 22: iter([300, 310, 320]), 33: iter([900, 960, 1020]),
             44: iter([7000, 7050])}
    guests = iter([[33], [33, 44], [44]])
    monkeypatch.setattr(threads, "_proc_stat", lambda: next(machine))
    monkeypatch.setattr(threads, "_process_ticks", lambda pid: next(ticks[pid]))
    sampler = CpuSampler(lambda: 11, lambda: 22)
    sampler.guest_pids = lambda: next(guests)
    sampler.cpus = 2
    assert sampler.others_busy() is None  # the baseline
    # llama-server 50, the host 10, the guest 60 of 150 busy ticks: others 30 (the newcomer 44 is not subtracted)
    assert sampler.others_busy() == 2 * 30 / 200
    # 33 has gone; 44 was there both times: llama-server 50, host 10, 44 50 of 150: others 40
    assert sampler.others_busy() == 2 * 40 / 200


def test_the_first_count_comes_from_a_short_look_not_the_lagging_load_average(monkeypatch):
    """The 1-minute load average still says "busy" right after a build: a short look says what is busy now."""
    from engine.local import threads

    machine = iter([(1000, 4000), (1000 + 10, 4000 + 40)])  # 10 busy ticks of 40: a quarter of the machine
    monkeypatch.setattr(threads, "_proc_stat", lambda: next(machine))
    monkeypatch.setattr(threads, "_process_ticks", lambda pid: 0)
    monkeypatch.setattr(threads.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (2.0, 2.0, 2.0))
    sampler = CpuSampler(lambda: None, lambda: None)
    sampler.cpus = 2
    assert sampler.initial() == 2 * 10 / 40
    assert choose_threads(2, 2 * 10 / 40) == 2  # where the load average (2.0) would have given one thread
    # Without /proc: the load average.
    monkeypatch.setattr(threads, "_proc_stat", lambda: None)
    assert sampler.initial() == 2.0


def test_the_sampler_reads_this_machine():
    sampler = CpuSampler(lambda: None, lambda: None)
    assert sampler.others_busy() is None  # the first look is the baseline
    end = time.monotonic() + 0.2
    while time.monotonic() < end:  # some CPU time of our own, counted as "other programs" (own pid is None)
        pass
    busy = sampler.others_busy()
    assert busy is not None and 0.0 <= busy <= sampler.cpus


class ScriptedMachine:
    """Two cores, idle when llama-server starts, then a job keeps one busy."""

    cpus = 2

    def __init__(self) -> None:
        self.looks = 0

    def initial(self) -> float:
        return 0.0

    def others_busy(self) -> float:
        self.looks += 1
        return 1.0


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


@pytest.mark.llama_server
def test_the_server_is_restarted_with_fewer_threads_when_a_job_takes_a_core(llama_server_binary, tiny_model):
    sup = LlamaServerSupervisor(llama_server_binary, tiny_model, LocalServerSettings(parallel=1, ctx_size=512))
    machine = ScriptedMachine()
    sup.cpu_sampler = machine  # type: ignore[assignment]
    sup.tune_interval = 0.02
    try:
        sup.start_blocking()
        first = sup.pid
        assert first is not None
        args = _cmdline(first)
        assert args[args.index("--threads") + 1] == "2" and args[args.index("--threads-batch") + 1] == "2"
        for _ in range(3000):  # counted looks, not time: the bound only stops a broken test
            if sup.retunes == 1 and sup.state == "ready" and sup.pid not in (None, first):
                break
            time.sleep(0.01)
        assert sup.retunes == 1 and sup.state == "ready"
        args = _cmdline(sup.pid)
        assert args[args.index("--threads") + 1] == "1" and args[args.index("--threads-batch") + 1] == "1"
        assert sup.crashes == 0 and sup.threads == 1
        looks = machine.looks
        for _ in range(100):
            if machine.looks >= looks + 10:
                break
            time.sleep(0.01)
        assert sup.retunes == 1  # the load stayed: no more restarts
    finally:
        sup.stop_blocking()


def test_fixed_threads_are_left_alone(tmp_path):
    sup = LlamaServerSupervisor("llama-server", tmp_path / "m.gguf", LocalServerSettings(threads=3))
    assert not sup.adaptive_threads and sup._child_settings().threads == 3
    flags = LlamaServerSupervisor("llama-server", tmp_path / "m.gguf",
                                  LocalServerSettings(extra_args=("--threads", "1")))
    assert not flags.adaptive_threads
