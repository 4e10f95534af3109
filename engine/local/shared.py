"""One llama-server per machine for the same model and server settings: one Infill process runs it, the others use it.

Why: every `infill serve` process (one per editor window) would start its own llama-server for `kind = "local"`.
Two VS Code windows and Neovim made three servers, each loading the model and each taking the CPU threads: three
times the memory (a 7B model on a GPU did not load a second time) and three servers fighting for a laptop's cores.

How (no daemon, no orphans):

- The run directory (`run_dir`): `$INFILL_RUN_DIR`, else `$XDG_RUNTIME_DIR/infill`, else
  `$XDG_CACHE_HOME/infill/run` (`~/.cache/infill/run`), created 0700. One that another user owns, or that others may
  write to, is refused: the process then runs its own server, as without sharing, and says why.
- A key (`server_key`) per llama-server binary, model file (resolved path, size, mtime) and the settings that shape
  the server's command line (the settings, not the live arguments: the adaptive thread count changes while it runs).
- Election: the process that takes `flock(LOCK_EX | LOCK_NB)` on `<key>.lock` is the OWNER. It runs the usual
  LlamaServerSupervisor (its llama-server is its child and dies with it) and, each time the server becomes healthy
  (also after a restart on a new port), writes `<key>.json` (pid, port, base URL, owner pid, model, generation)
  atomically; it removes the file when it stops. The lock is held for as long as it runs.
- Every other process with the same key is ATTACHED: a thread polls, every `POLL_S`, the lock (non-blocking, so it
  is never stuck in a call it cannot leave) and, while the lock is held, the json and the server's `/health`. The
  base URL is the json's once `/health` answers 200; meanwhile callers wait as they wait for a restart. When it takes
  the lock (the owner stopped or was killed, and its llama-server with it), it becomes the owner itself.
- What the json says is checked, never trusted: a 127.0.0.1 URL whose port is the record's, a live owner, and a live
  process whose command line is a server on that port; anything else counts as no record.

Each attached process holds a shared flock on `<key>.users`, so the owner can tell (one non-blocking flock per request)
whether others use its server. While they do, none of them, the owner included, pins requests to slots
(llama-server chooses; engine.local.server.LocalCompletion); guesses go on as on a server of one's own, since the
processes are one person's editors. An owner alone pins as Infill does on its own server (engine.local.slots)."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import errno
import hashlib
import json
import logging
import os
import stat
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import httpx

try:  # POSIX file locks; where there are none (Windows), every process runs its own llama-server
    import fcntl
except ImportError:  # pragma: no cover - not on the platforms the tests run on
    fcntl = None  # type: ignore[assignment]

from ..config import LocalServerSettings
from ..errors import BackendUnavailable
from ..types import StatusEvent
from .supervisor import HEALTH_POLL_SECONDS, LlamaServerSupervisor

log = logging.getLogger(__name__)

VENDOR = "llama-server"
RUN_DIR_ENV = "INFILL_RUN_DIR"
#: How often an attached process looks at the owner's lock, its record and its server's /health.
POLL_S = 0.5
#: The longest a /health look may take before it counts as "not ready".
HEALTH_TIMEOUT_S = 2.0
#: Settings that do not shape llama-server's command line, so processes that differ only in them share a server.
#: (`binary` is in the key as the resolved executable.)
NOT_IN_KEY = frozenset({"binary", "start_timeout", "share"})


class ModelServer(Protocol):
    """What LocalServer uses of its llama-server: a supervisor this process runs, or a SharedLlamaServer."""

    settings: LocalServerSettings

    @property
    def base_url(self) -> str: ...

    @property
    def failed_reason(self) -> str | None: ...

    async def wait_ready(self, timeout: float | None = 60.0) -> str: ...

    async def stop(self) -> None: ...


# ---------------------------------------------------------------------------------------------------------------------
# The run directory, the key and the record


class RunDirError(Exception):
    """The run directory cannot be used safely (or at all); the message names it."""


def run_dir() -> Path:
    """Where the locks and records live (not checked or created here; see `prepare_run_dir`)."""
    configured = os.environ.get(RUN_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "infill"
    cache = os.environ.get("XDG_CACHE_HOME")
    return (Path(cache) if cache else Path.home() / ".cache") / "infill" / "run"


def prepare_run_dir(path: Path) -> Path:
    """Create `path` (mode 0700) and check that it is this user's directory and nobody else may write to it."""
    if fcntl is None:
        raise RunDirError("this system has no POSIX file locks (fcntl), which sharing llama-server needs")
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(path)
    except OSError as exc:
        raise RunDirError(f"cannot use the run directory {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise RunDirError(f"the run directory {path} is not a directory")
    if info.st_uid != os.geteuid():
        raise RunDirError(f"the run directory {path} belongs to another user (uid {info.st_uid})")
    if info.st_mode & 0o022:
        raise RunDirError(f"the run directory {path} may be written by other users (mode {info.st_mode & 0o777:o})")
    return path


def server_key(binary: str | os.PathLike, model_path: str | os.PathLike, settings: LocalServerSettings) -> str:
    """A short hex key that is the same exactly when two processes would start the same llama-server: the same
    executable, the same model file (also not rewritten since: size and mtime) and the same server settings."""
    model = Path(model_path).resolve()
    info = model.stat()
    shaping = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings) if f.name not in NOT_IN_KEY}
    data = {"binary": str(Path(binary).resolve()), "model": str(model), "size": info.st_size,
            "mtime_ns": info.st_mtime_ns, "settings": shaping}
    text = json.dumps(data, sort_keys=True, default=list)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Record:
    """`<key>.json`: the owner's running llama-server."""

    pid: int
    port: int
    base_url: str
    owner_pid: int
    model: str
    generation: int

    @staticmethod
    def parse(data: Any) -> "Record | None":
        """The record in `data`, or None when it is not a well-formed record of a server on 127.0.0.1."""
        if not isinstance(data, dict):
            return None
        try:
            record = Record(**{f.name: data[f.name] for f in dataclasses.fields(Record)})
        except (KeyError, TypeError):
            return None
        ints = (record.pid, record.port, record.owner_pid, record.generation)
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in ints) or not isinstance(record.model, str):
            return None
        if record.pid <= 0 or record.owner_pid <= 0 or not 0 < record.port < 65536:
            return None
        if record.base_url != f"http://127.0.0.1:{record.port}":  # never anything but this machine's loopback
            return None
        return record


def write_record(path: Path, record: Record) -> None:
    """Write `path` atomically (a temporary file renamed over it): a reader sees the old record or the new one."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(dataclasses.asdict(record), file)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_record(path: Path) -> Record | None:
    """The record at `path`; None when there is none or it is malformed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        with os.fdopen(fd, "r", encoding="utf-8") as file:
            data = json.loads(file.read(65536))
    except (OSError, ValueError):
        return None
    return Record.parse(data)


def attached_pids_in(proc_locks: str, inode: int) -> list[int]:
    """The pids holding a shared flock on the file `inode` in `proc_locks` (the text of /proc/locks: lines such as
    `1: FLOCK  ADVISORY  READ 11175 fe:00:2466609 0 EOF`; a waiting lock's line has `->` after the number)."""
    pids = []
    for line in proc_locks.splitlines():
        parts = line.split()
        if len(parts) < 6 or parts[1:4] != ["FLOCK", "ADVISORY", "READ"] or not parts[4].isdigit():
            continue
        try:
            if int(parts[5].rsplit(":", 1)[1]) == inode:
                pids.append(int(parts[4]))
        except (IndexError, ValueError):
            continue
    return pids


def _own_process_alive(pid: int) -> bool:
    """Whether a process of this user has this pid: another user's (EPERM) is not one of ours, so it does not count."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: not one of ours
        return False
    return True


def _processes_live(record: Record) -> bool:
    """Whether the record's owner and its llama-server both still run."""
    return _own_process_alive(record.owner_pid) and _own_process_alive(record.pid)


def _command_line(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.decode("utf-8", "replace").split("\0")


def plausible(record: Record) -> bool:
    """The record describes a live server of a live Infill process: its owner runs, and its pid is a process whose
    command line serves 127.0.0.1 on the record's port (where /proc can tell). A stale record (a dead pid, a pid
    reused by another program, another port) is not."""
    if not _processes_live(record):
        return False
    args = _command_line(record.pid)
    if args is None:
        return not Path("/proc/self").exists()  # no /proc on this system: the /health look decides
    pairs = set(zip(args, args[1:]))
    return ("--port", str(record.port)) in pairs and ("--host", "127.0.0.1") in pairs


def _healthy(client: httpx.Client, base_url: str) -> bool:
    try:
        return client.get(f"{base_url}/health").status_code == 200
    except httpx.HTTPError:
        return False


def _open_lock_file(path: Path) -> int:
    """A lock or users file of the run directory, created private, never through a symbolic link."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)


# ---------------------------------------------------------------------------------------------------------------------

_LIVE: "weakref.WeakSet[SharedLlamaServer]" = weakref.WeakSet()


@atexit.register
def _withdraw_at_exit() -> None:
    """A record outlives its owner's normal exit otherwise (the supervisor's own hook stops the child)."""
    for server in list(_LIVE):
        try:
            server._withdraw()
        except Exception:  # exiting anyway; never raise from atexit
            pass


class SharedLlamaServer:
    """The llama-server of one key on this machine, owned (this process runs it) or attached (another Infill process
    runs it). An attached one becomes the owner when the owner goes away.

    States: "new" → "waiting" ⇄ "ready" (attached) or "owner" (then the supervisor's state says more); "failed";
    "stopped"."""

    poll_interval: float = POLL_S

    def __init__(self, binary: str, model_path: str | os.PathLike, settings: LocalServerSettings, directory: Path,
                 key: str, on_status: Callable[[StatusEvent], None] | None = None):
        self.binary = binary
        self.model_path = Path(model_path)
        self.settings = settings
        self.key = key
        self.lock_path = directory / f"{key}.lock"
        self.record_path = directory / f"{key}.json"
        #: Attached processes hold a shared flock on it, so the owner can tell whether anyone else uses its server.
        self.users_path = directory / f"{key}.users"
        self._users_fd: int | None = None
        self._users_locked = False
        self._on_status = on_status
        self._loop: asyncio.AbstractEventLoop | None = None
        self._mutex = threading.Lock()
        self._lock_fd: int | None = None
        self._stopping = threading.Event()
        #: Set to make the watch look now instead of at its next poll (a request found the owner gone).
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._state = "new"
        self._base_url: str | None = None
        self._failed_reason: str | None = None
        #: This process's supervisor, once it owns the server (kept after stop, for its counters).
        self.supervisor: LlamaServerSupervisor | None = None
        #: The owner's record, while attached (the last plausible one seen).
        self.record: Record | None = None
        #: Times this process took the server over from an owner that went away.
        self.takeovers = 0

    # --- state --------------------------------------------------------------------------------------------------

    @property
    def owns(self) -> bool:
        return self.supervisor is not None

    @property
    def owner_pid(self) -> int | None:
        if self.owns:
            return os.getpid()
        return self.record.owner_pid if self.record is not None else None

    @property
    def pid(self) -> int | None:
        """The llama-server's pid (this process's child, or the owner's)."""
        if self.supervisor is not None:
            return self.supervisor.pid
        return self.record.pid if self.record is not None else None

    @property
    def state(self) -> str:
        return self._state

    @property
    def base_url(self) -> str:
        if self.supervisor is not None:
            return self.supervisor.base_url
        url = self._base_url
        if url is None:
            raise BackendUnavailable(VENDOR, self._failed_reason or self._waiting_for())
        return url

    @property
    def failed_reason(self) -> str | None:
        if self.supervisor is not None:
            return self.supervisor.failed_reason
        return self._failed_reason

    def others_attached(self) -> bool:
        """Whether other Infill processes use this process's server now (asked per request: one flock call)."""
        with self._mutex:
            if self._users_fd is None:
                try:
                    self._users_fd = _open_lock_file(self.users_path)
                except OSError:
                    return False
            try:
                fcntl.flock(self._users_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(self._users_fd, fcntl.LOCK_UN)
            return False

    def attached_pids(self) -> list[int]:
        """The pids of the Infill processes attached now: the holders of a shared flock on the users file, from
        /proc/locks (Linux; none elsewhere). The kernel drops a crashed process's lock, so the list is never stale."""
        try:
            inode = os.stat(self.users_path).st_ino
            text = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
        except OSError:
            return []
        return attached_pids_in(text, inode)

    def _register_as_user(self) -> None:
        """Attached: hold a shared lock on the users file (tried at every look until it is taken: the owner holds it
        exclusively only for the moment of its check)."""
        with self._mutex:
            if self._users_locked:
                return
            try:
                if self._users_fd is None:
                    self._users_fd = _open_lock_file(self.users_path)
                fcntl.flock(self._users_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return
            self._users_locked = True

    def _unregister_as_user(self) -> None:
        with self._mutex:
            fd, self._users_fd, self._users_locked = self._users_fd, None, False
        if fd is not None:
            os.close(fd)

    def describe(self) -> str:
        """Who runs the model server, for the status and the log."""
        if self.owns:
            return (f"this process runs the model server (llama-server pid {self.pid}) for every Infill process on "
                    "this machine with the same model and server settings")
        owner = self.owner_pid
        if owner is None:
            return "waiting for the Infill process that runs the model server"
        return f"using the llama-server started by Infill process {owner}"

    def _waiting_for(self) -> str:
        owner = self.owner_pid
        who = f"Infill process {owner}" if owner is not None else "the Infill process that runs it"
        return f"waiting for the llama-server of {who} ({self.model_path.name})"

    # --- start / wait / stop ------------------------------------------------------------------------------------

    async def start(self) -> str:
        """Own the server (start it) or attach to the owner's; returns the base URL once it answers. Raises
        BackendUnavailable when it does not within the start timeout (or this process's own start failed)."""
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        _LIVE.add(self)
        try:
            self._lock_fd = _open_lock_file(self.lock_path)
            if self._try_lock():
                self._own()
            else:
                self._state = "waiting"
                self._thread = threading.Thread(target=self._watch, daemon=True,
                                                name=f"llama-server of another process {self.model_path.name}")
                self._thread.start()
            return await self.wait_ready(None if self.owns else self.settings.start_timeout)
        except BaseException:
            await self.stop()
            raise

    async def wait_ready(self, timeout: float | None = 60.0) -> str:
        """The base URL once the server answers (at once when it does); waits, up to `timeout`, while the owner starts
        or restarts it, or while this process takes it over."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            supervisor = self.supervisor
            if supervisor is not None:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                return await supervisor.wait_ready(remaining)
            url = self._base_url
            if self._state == "ready" and url:
                if not self._owner_gone():
                    return url
                # The owner died (its llama-server with it) since the watch last looked: a request sent now would fail.
                # The watch looks at once, and this process may be the one that takes the server over.
                with self._mutex:
                    if self._base_url == url and self._state == "ready":
                        self._state, self._base_url = "waiting", None
                self._wake.set()
            if self._state == "failed":
                raise BackendUnavailable(VENDOR, self._failed_reason or "llama-server failed")
            if self._state == "stopped":
                raise BackendUnavailable(VENDOR, "the local model server was stopped")
            if deadline is not None and time.monotonic() >= deadline:
                raise BackendUnavailable(VENDOR, f"{self._waiting_for()}: not ready after {timeout:g} s")
            await asyncio.sleep(HEALTH_POLL_SECONDS)

    def _owner_gone(self) -> bool:
        """Whether the owner or its llama-server has exited since the record was read (two signal-0 calls: cheap
        enough for every request, and it closes the half second between an owner's death and the watch's next look,
        in which a request went to a port nobody listens on)."""
        record = self.record
        return record is not None and not _processes_live(record)

    async def stop(self) -> None:
        await asyncio.to_thread(self.stop_blocking)

    def stop_blocking(self) -> None:
        """Stop watching (attached) or withdraw the record, stop llama-server and release the lock (owner)."""
        self._stopping.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=HEALTH_TIMEOUT_S + 5.0)
        with self._mutex:
            if self._state != "failed":
                self._state = "stopped"
            self._base_url = None
        supervisor = self.supervisor
        if supervisor is not None:
            self._withdraw()  # first: nobody attaches to a server that is going away
            supervisor.stop_blocking()
        self._release()
        self._unregister_as_user()
        _LIVE.discard(self)

    # --- owner ----------------------------------------------------------------------------------------------------

    def _try_lock(self) -> bool:
        with self._mutex:
            if self._lock_fd is None:
                return False
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return False
                raise
            return True

    def _release(self) -> None:
        with self._mutex:
            fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # releases the lock: the next process to look becomes the owner

    def _own(self) -> None:
        """Start this process's supervisor (it does not wait for the server to answer)."""
        supervisor = LlamaServerSupervisor(self.binary, self.model_path, self.settings, on_status=self._on_status)
        supervisor._loop = self._loop  # its events go to the caller's loop, also when started from the watch thread
        supervisor.on_state = lambda state: self._owner_state(supervisor, state)
        # the attached processes' servers work for the same user's typing: not "other programs" to the thread policy
        supervisor.cpu_sampler.guest_pids = self.attached_pids
        supervisor.launch()
        with self._mutex:
            self.supervisor = supervisor
            self._state = "owner"
            self._base_url = None
        log.info("this process runs llama-server for %s for every Infill process on this machine with the same model "
                 "and server settings (%s)", self.model_path.name, self.lock_path)

    def _owner_state(self, supervisor: LlamaServerSupervisor, state: str) -> None:
        """From the supervisor's thread: publish the server when it is ready; give the lock up when it failed, so that
        another process may try (and report its own reason)."""
        if state == "ready":
            base_url, pid = supervisor._base_url, supervisor.pid
            port = supervisor._port
            if base_url is None or pid is None or port is None or self._stopping.is_set():
                return
            record = Record(pid=pid, port=port, base_url=base_url, owner_pid=os.getpid(),
                            model=str(self.model_path), generation=time.time_ns())
            try:
                write_record(self.record_path, record)
            except OSError as exc:
                log.warning("could not publish the llama-server to other Infill processes (%s): %s",
                            self.record_path, exc)
        elif state == "failed":
            self._withdraw()
            self._release()

    def _withdraw(self) -> None:
        """Remove the record if it is this process's."""
        if self.supervisor is None:
            return
        record = read_record(self.record_path)
        if record is not None and record.owner_pid == os.getpid():
            with contextlib.suppress(OSError):
                os.unlink(self.record_path)

    # --- attached -------------------------------------------------------------------------------------------------

    def _emit(self, event: StatusEvent) -> None:
        callback, loop = self._on_status, self._loop
        if callback is None:
            return
        try:
            if loop is not None and not loop.is_closed() and loop.is_running():
                loop.call_soon_threadsafe(callback, event)
            else:
                callback(event)
        except Exception:  # a status listener must never break the watch
            log.exception("llama-server status callback failed")

    def _watch(self) -> None:
        try:
            with httpx.Client(trust_env=False, timeout=httpx.Timeout(HEALTH_TIMEOUT_S, connect=1.0)) as client:
                while not self._stopping.is_set():
                    if self._try_lock():
                        self._take_over()
                        return
                    self._register_as_user()
                    self._look(client)
                    self._wake.wait(self.poll_interval)
                    self._wake.clear()
        except Exception as exc:  # never let the thread die silently: callers must learn why
            log.exception("watching the shared llama-server failed")
            with self._mutex:
                self._state, self._base_url = "failed", None
                self._failed_reason = f"watching llama-server failed: {exc}"

    def _look(self, client: httpx.Client) -> None:
        record = read_record(self.record_path)
        if record is not None and not plausible(record):
            record = None
        healthy = record is not None and _healthy(client, record.base_url)
        if not healthy and record is not None and record == self.record and self._state == "ready":
            # The server in use still runs (the record is plausible: its pid lives on its port): a /health look that
            # failed is a loaded machine or a hang, which the owner's supervisor judges (a hung server is killed and
            # restarted, with a new record). Staying ready keeps the editors' status from flickering to "starting".
            return
        with self._mutex:
            if self._stopping.is_set():
                return
            was = (self._state, self.record.owner_pid if self.record else None)
            if record is not None:
                self.record = record
            self._base_url = record.base_url if healthy and record is not None else None
            self._state = "ready" if healthy else "waiting"
            now = (self._state, self.record.owner_pid if self.record else None)
        if now == was:
            return
        if healthy:
            log.info("%s (%s, pid %s, %s)", self.describe(), self.model_path.name, self.pid, self._base_url)
            self._emit(StatusEvent("ready", f"Using the llama-server started by Infill process {self.owner_pid} "
                                            f"({self.model_path.name})", percent=100))
        else:
            log.info("%s", self._waiting_for())
            self._emit(StatusEvent("starting", self._waiting_for()[0].upper() + self._waiting_for()[1:],
                                   percent=None))

    def _take_over(self) -> None:
        """The owner released the lock (it stopped, or died and took its llama-server with it): run it here."""
        previous = self.owner_pid
        with self._mutex:
            if self._stopping.is_set():
                return
            self._base_url = None
        self.takeovers += 1
        self._unregister_as_user()  # its own shared lock would make its check see a user
        who = f"Infill process {previous}" if previous is not None else "the Infill process that ran it"
        log.info("the llama-server of %s has gone; this process starts it now", who)
        self._emit(StatusEvent("starting", f"The llama-server of {who} has gone: starting it in this process"))
        self._own()


def report(binary: str, model_path: str | os.PathLike, settings: LocalServerSettings) -> str:
    """For `infill doctor`: whether Infill processes share a llama-server for this model and these settings, and
    which process runs it now. Reads the record only (it never takes the lock: an editor starting meanwhile must not
    find the doctor owning a server it does not run)."""
    if not settings.share:
        return "not shared: each Infill process starts its own llama-server (completion.local.share = false)"
    directory = run_dir()
    try:
        prepare_run_dir(directory)
        key = server_key(binary, model_path, settings)
    except (RunDirError, OSError) as exc:
        return f"not shared: {exc}"
    record = read_record(directory / f"{key}.json")
    if record is not None and plausible(record):
        with httpx.Client(trust_env=False, timeout=httpx.Timeout(HEALTH_TIMEOUT_S, connect=1.0)) as client:
            if _healthy(client, record.base_url):
                return (f"shared: Infill process {record.owner_pid} runs llama-server (pid {record.pid}, "
                        f"{record.base_url}) for this model and these settings; editors started now use it")
    return ("shared: no Infill process runs llama-server for this model and these settings now; the first editor "
            f"to start runs it for the others ({directory})")
