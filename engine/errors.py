"""Errors the engine raises. Every message names the setting, backend or file at fault, because the LSP layer
shows it to the user as is."""

from __future__ import annotations


class InfillError(Exception):
    """Base of every error Infill raises on purpose."""


class ConfigError(InfillError, ValueError):
    """A configuration value is wrong. `key` is the dotted path of the setting (e.g. ``model.completion.kind``)."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"{key}: {message}")


class BackendError(InfillError):
    """A model backend failed a request. Carries the vendor, HTTP status and the start of the body when known."""

    def __init__(self, vendor: str, message: str, status: int | None = None, body: str | bytes | None = None):
        self.vendor = vendor
        self.status = status
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        self.body = (body or "")[:200]
        detail = f" (HTTP {status})" if status is not None else ""
        tail = f": {self.body}" if self.body else ""
        super().__init__(f"{vendor}{detail}: {message}{tail}")


class DeadlineExceeded(BackendError):
    """The generation produced nothing before the caller's deadline (setting `request_timeout`)."""

    @classmethod
    def after(cls, seconds: float) -> DeadlineExceeded:
        return cls("infill", f"no completion within {seconds:g} s (setting request_timeout)")


class SpeculationHeld(BackendError):
    """Speculative work (a prefetch, a cache warm-up) was not sent, or gave its slot up, because the shared model
    server is busy: it would have delayed someone's request. `yielded`: it was running and was cancelled."""

    def __init__(self, vendor: str, message: str, *, yielded: bool = False):
        super().__init__(vendor, message)
        self.yielded = yielded


class BackendUnavailable(BackendError):
    """The backend cannot serve requests now (still starting past its deadline, crashed too often, no binary)."""


class ModelError(InfillError):
    """A model could not be found, assembled, downloaded or verified."""
