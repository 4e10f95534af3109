"""What the user sees of the server's state: `infill/didChangeStatus` notifications and `$/progress` while the model
starts.

The engine reports StatusEvents through a plain callback; this module turns them into LSP messages. Work-done
progress is only used when the client declares `window.workDoneProgress` (the spec requires creating the token
first and waiting for the client's answer, so progress messages are sent from one ordered task queue)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from lsprotocol import types

from engine.api import StatusEvent

log = logging.getLogger(__name__)

STATUS_METHOD = "infill/didChangeStatus"


def status_payload(event: StatusEvent) -> dict[str, Any]:
    payload: dict[str, Any] = {"kind": event.kind, "message": event.message}
    if event.detail:
        payload["detail"] = event.detail
    if event.percent is not None:  # while a model loads or downloads; the clients show it (`starting 40%`)
        payload["percent"] = event.percent
    return payload


@dataclass
class _Progress:
    token: str
    created: asyncio.Future


class StatusReporter:
    def __init__(self, notify: Callable[[str, Any], None], progress: Any | None = None,
                 progress_supported: Callable[[], bool] = lambda: False,
                 ready_note: Callable[[], str | None] = lambda: None) -> None:
        self._notify = notify
        #: Added to the engine's "ready" detail: what the server decided about the endpoint (e.g. prefetch on or
        #: off, and why), where a user looks when something they expected does not happen.
        self._ready_note = ready_note
        self._progress_api = progress
        self._progress_supported = progress_supported
        self._progress: _Progress | None = None
        self._queue: asyncio.Task | None = None
        self.current = StatusEvent("starting", "Infill is starting")
        #: the engine's own last state, shown again when completion is turned back on
        self.engine_current = self.current
        self.history: list[StatusEvent] = []
        self._disabled_reported: set[str] = set()

    # --- engine events -----------------------------------------------------------------------------------------

    def on_engine_status(self, event: StatusEvent) -> None:
        if event.kind == "ready":
            try:
                note = self._ready_note()
            except Exception:
                log.debug("status note failed", exc_info=True)
                note = None
            if note:
                event = dataclasses.replace(event, detail=f"{event.detail}\n{note}" if event.detail else note)
        self.engine_current = event
        self.publish(event)
        if self._progress_api is not None and self._progress_supported():
            self._chain(self._update_progress(event))

    def publish(self, event: StatusEvent) -> None:
        """Send a status notification when the status changed (busy↔ready flips are sent every time)."""
        if event == self.current and self.history:
            return
        self.current = event
        self.history.append(event)
        del self.history[:-50]
        try:
            self._notify(STATUS_METHOD, status_payload(event))
        except Exception:  # the client may be gone; status is best effort
            log.debug("status notification failed", exc_info=True)

    def ready(self) -> None:
        """Back to "ready" after a request (busy) or a failed one: the engine's own ready status again, with its
        detail (who runs the model server, prefetch on or off), which a plain "Infill is ready" took out of the
        editor's tooltip at the first keystroke."""
        ready = self.engine_current if self.engine_current.kind == "ready" else StatusEvent("ready", "Infill is ready")
        self.publish(ready)

    def disabled_once(self, key: str, message: str, detail: str | None = None) -> None:
        """Report "disabled" for a reason (an excluded file, completion turned off) once, not on every keystroke."""
        if key in self._disabled_reported:
            return
        self._disabled_reported.add(key)
        self.publish(StatusEvent("disabled", message, detail))

    def show_enabled(self, enabled: bool) -> None:
        """After a configuration change: turned off shows at once (not at the next keystroke); turned back on
        shows the engine's state again instead of a stale "disabled"."""
        if not enabled:
            self.publish(StatusEvent("disabled", "Infill is turned off (enabled = false)"))
        elif self.current.kind == "disabled":
            self.publish(self.engine_current)

    def reset_disabled(self) -> None:
        self._disabled_reported.clear()

    # --- $/progress --------------------------------------------------------------------------------------------

    def _chain(self, coro) -> None:
        previous = self._queue

        async def run() -> None:
            if previous is not None:
                try:
                    await previous
                except Exception:
                    pass
            try:
                await coro
            except Exception:
                log.debug("progress update failed", exc_info=True)

        try:
            self._queue = asyncio.ensure_future(run())
        except RuntimeError:  # no running loop (e.g. during shutdown)
            coro.close()

    async def _update_progress(self, event: StatusEvent) -> None:
        api = self._progress_api
        if api is None:  # on_engine_status only schedules this when there is a progress API
            return
        if event.kind == "starting":
            if self._progress is None:
                token = f"infill-start-{uuid.uuid4().hex[:8]}"
                await api.create_async(token)
                self._progress = _Progress(token, asyncio.get_running_loop().create_future())
                api.begin(token, types.WorkDoneProgressBegin(
                    title="Infill", message=event.message, percentage=event.percent, cancellable=False))
            else:
                api.report(self._progress.token, types.WorkDoneProgressReport(
                    message=event.message, percentage=event.percent))
        elif self._progress is not None:
            api.end(self._progress.token, types.WorkDoneProgressEnd(message=event.message))
            api.tokens.pop(self._progress.token, None)
            self._progress = None

    async def drain(self) -> None:
        if self._queue is not None:
            try:
                await self._queue
            except Exception:
                pass
