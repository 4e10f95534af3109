"""Logging to the editor (`window/logMessage`) and to a file in the user's state directory.

Logs end up in bug reports, so API keys are always redacted and prompt/completion text is replaced by its length
unless debug logging is on. Never log to stdout: in `--stdio` mode stdout is the LSP channel."""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
from pathlib import Path
from typing import Callable, Iterable, Mapping

from lsprotocol import types

from engine.redact import redact

def state_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "infill"


def show_text(text: str, debug: bool) -> str:
    """Prompt or completion text for a log line: itself in debug mode, else only its size."""
    return repr(text) if debug else f"<{len(text)} chars>"


class RedactingFilter(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        record.msg = redact(message, self.secrets)
        record.args = None
        return True


class LspLogHandler(logging.Handler):
    """Forwards records to the client as window/logMessage."""

    LEVELS = {logging.ERROR: types.MessageType.Error, logging.WARNING: types.MessageType.Warning,
              logging.INFO: types.MessageType.Info, logging.DEBUG: types.MessageType.Log}

    def __init__(self, send: Callable[[types.LogMessageParams], None]) -> None:
        super().__init__()
        self._send = send

    def emit(self, record: logging.LogRecord) -> None:
        kind = self.LEVELS.get(record.levelno, types.MessageType.Error if record.levelno > logging.ERROR
                               else types.MessageType.Log)
        try:
            self._send(types.LogMessageParams(type=kind, message=self.format(record)))
        except Exception:
            pass


class SharedRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A RotatingFileHandler for a log file that several processes write: every editor window runs its own
    `infill serve`, and they all log to the same infill.log.

    The plain handler keeps writing to the file it opened: after another process rotated the log, its lines went
    into infill.log.1 (and when it rotated in turn, it renamed the other's fresh infill.log away), so the lines of
    all but one editor were missing from infill.log. This one reopens the file when the name points to another file
    than the one it holds, and rotates under a lock file, rotating only when nobody else rotated meanwhile."""

    def _stale(self) -> bool:
        if self.stream is None:
            return False
        try:
            held = os.fstat(self.stream.fileno())
            current = os.stat(self.baseFilename)
        except (OSError, ValueError):
            return True
        return (held.st_dev, held.st_ino) != (current.st_dev, current.st_ino)

    def _reopen(self) -> None:
        if self.stream is not None:
            with contextlib.suppress(OSError):
                self.stream.close()
        self.stream = self._open()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._stale():
                self._reopen()
        except OSError:
            self.handleError(record)
            return
        super().emit(record)

    def doRollover(self) -> None:
        try:
            import fcntl
        except ImportError:  # not POSIX: one process rotates as the plain handler does
            super().doRollover()
            return
        with open(self.baseFilename + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if self._stale():  # another process rotated while this one waited: write to the new file
                    self._reopen()
                    return
                super().doRollover()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


class LoggingSetup:
    """Owns the handlers on the `engine` and `lsp_server` loggers; `configure` may be called again on config change."""

    LOGGERS = ("engine", "lsp_server")

    def __init__(self) -> None:
        self.filter = RedactingFilter()
        self._handlers: list[logging.Handler] = []

    def configure(self, level: str, send: Callable[[types.LogMessageParams], None] | None,
                  log_file: str | None = None, secrets: Iterable[str] = ()) -> Path | None:
        self.close()
        self.filter.secrets = {s for s in secrets if s}
        numeric = getattr(logging, level.upper(), logging.INFO)
        handlers: list[logging.Handler] = []
        if send is not None:
            lsp = LspLogHandler(send)
            lsp.setLevel(max(numeric, logging.INFO) if numeric > logging.DEBUG else logging.DEBUG)
            lsp.setFormatter(logging.Formatter("%(name)s: %(message)s"))
            handlers.append(lsp)
        path: Path | None = None
        try:
            path = Path(log_file).expanduser() if log_file else state_dir() / "infill.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            fh = SharedRotatingFileHandler(path, maxBytes=2_000_000, backupCount=2, encoding="utf-8",
                                           errors="backslashreplace")
            # the process id: every editor window's server writes to this file (which llama-server, which window)
            fh.setFormatter(logging.Formatter("%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s"))
            handlers.append(fh)
        except OSError:
            path = None
        for handler in handlers:
            handler.addFilter(self.filter)
        for name in self.LOGGERS:
            logger = logging.getLogger(name)
            logger.setLevel(numeric)
            for handler in handlers:
                logger.addHandler(handler)
        self._handlers = handlers
        return path

    def close(self) -> None:
        for name in self.LOGGERS:
            logger = logging.getLogger(name)
            for handler in self._handlers:
                logger.removeHandler(handler)
        for handler in self._handlers:
            handler.close()
        self._handlers = []
