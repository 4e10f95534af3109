"""Which engine answers next-edit prompts: a separate one for `next_edit.model`, else the completion engine.

A separate model is a second `Engine` built from the same engine settings with that model as its completion
model, so a `kind = "local"` model gets its own supervised llama-server and a remote kind its own client, and the
engine's own rules (ready wait, cancellation closes the stream) apply unchanged. It starts with the server when
model-based next edits are on and is replaced, ready before the old one closes, when its settings change. Its
status goes to the log, not to the editor's status line, which shows the completion model."""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable

from engine.api import Engine, StatusEvent
from engine.config import EngineConfig
from engine.errors import InfillError
from engine.next_edit.types import NextEditOptions, NextEditRequest, Prediction

from .settings import NextEditSettings

log = logging.getLogger(__name__)


def engine_config(base: EngineConfig, settings: NextEditSettings) -> EngineConfig | None:
    """The separate engine's configuration, or None when next edits use the completion model."""
    if settings.model is None:
        return None
    return dataclasses.replace(base, completion=settings.model, chat=None, embedding=None)


def options(settings: NextEditSettings) -> NextEditOptions:
    return NextEditOptions(format=settings.format, lines_above=settings.lines_above, lines_below=settings.lines_below,
                           max_tokens=settings.max_tokens)


def _log_status(event: StatusEvent) -> None:
    level = logging.WARNING if event.kind == "error" else logging.INFO
    log.log(level, "next-edit model: %s", event.message)


class NextEditModel:
    def __init__(self, engine_factory: Callable[..., Engine] = Engine) -> None:
        self._factory = engine_factory
        self.engine: Engine | None = None
        self._config: EngineConfig | None = None

    async def configure(self, base: EngineConfig, settings: NextEditSettings, ready_timeout: float) -> None:
        """Start, replace or close the separate engine for these settings. A new engine that cannot start leaves
        the previous one serving and raises (the caller shows the error)."""
        wanted = engine_config(base, settings) if settings.enabled else None
        if wanted == self._config:
            return
        if wanted is None:
            await self.close()
            return
        candidate = self._factory(wanted, _log_status)
        await candidate.start()
        if self.engine is not None:  # replacing a running one: the new one must be ready first
            try:
                await candidate.wait_ready(ready_timeout)
            except BaseException:
                await candidate.close()
                raise
        previous, self.engine, self._config = self.engine, candidate, wanted
        if previous is not None:
            await previous.close()

    def engine_for(self, settings: NextEditSettings, completion_engine: Engine | None) -> Engine | None:
        """The engine that answers: the separate one when `model` is set (None while it is not running: its prompts
        never go to the completion model instead), else the completion engine."""
        if settings.model is not None:
            return self.engine
        return completion_engine

    async def predict(self, engine: Engine, request: NextEditRequest, settings: NextEditSettings,
                      ready_timeout: float) -> Prediction:
        try:
            return await engine.predict_next_edit(request, options(settings), ready_timeout,
                                                  settings.request_timeout)
        except InfillError as exc:  # predict_next_edit reports model failures itself; this is a safety net
            return Prediction(None, f"model error: {exc}", settings.format)

    async def close(self) -> None:
        engine, self.engine, self._config = self.engine, None, None
        if engine is not None:
            await engine.close()
