"""The real Infill language server over stdio, plus one read-only request for the typing replay: `infill/benchStats`.

The replay needs counters the protocol does not carry: how many model calls were made, how many prompt tokens
llama-server had to prefill. This entry point builds the server exactly as `infill serve --stdio` does and only adds
counting around `Engine.complete` (every call, including those cancelled by a newer keystroke) and the request that
reports the counters. When the engine runs its own llama-server, the counters also include llama-server's own totals
from its `/metrics` page (enabled with `--metrics` in `local.extra_args`), which count prefill work of calls that were
cancelled after their prompt was processed too.

    python3 -m bench.replay.typing_replay_server      # what bench/replay/typing_replay.py starts"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

STATS_METHOD = "infill/benchStats"


@dataclass
class Counters:
    calls_started: int = 0
    calls_completed: int = 0
    calls_cancelled: int = 0
    calls_failed: int = 0
    #: Summed over completed calls, from llama-server's `timings`.
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    prefilled_tokens: int = 0
    generated_tokens: int = 0
    model_ms: list[float] = field(default_factory=list)

    def add(self, stats: Any) -> None:
        timings = getattr(stats, "timings", None) or {}
        prompt = stats.prompt_tokens or 0
        cached = stats.cached_prompt_tokens or 0
        self.prompt_tokens += prompt
        self.cached_prompt_tokens += cached
        prefilled = timings.get("prompt_n")
        self.prefilled_tokens += prefilled if isinstance(prefilled, int) else max(0, prompt - cached)
        self.generated_tokens += stats.generated_tokens or 0


COUNTERS = Counters()
_ENGINES: list[Any] = []


def parse_prometheus(text: str) -> dict[str, float]:
    """`name value` lines of a Prometheus text page (llama-server's `/metrics`), read as the engine reads them
    (`engine.backends.shared_server.parse_metrics`), the names also without labels or any namespace: JSON-RPC
    clients such as pygls turn keys into identifiers."""
    from engine.backends.shared_server import parse_metrics

    return {name.split("{", 1)[0].rsplit(":", 1)[-1]: value for name, value in parse_metrics(text).items()}


async def llama_server_metrics() -> dict[str, float] | None:
    """llama-server's `/metrics` totals, or None when there is no local server or metrics are not enabled."""
    import httpx

    from engine.errors import InfillError

    for engine in reversed(_ENGINES):
        local = getattr(engine, "_local", None)
        try:
            endpoint = getattr(local, "endpoint", None) if local is not None else None
        except InfillError:  # restarting (the thread policy): no totals to read now
            return None
        if not endpoint:
            continue
        try:
            async with httpx.AsyncClient(timeout=5.0, trust_env=False) as client:
                response = await client.get(f"{endpoint}/metrics")
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        return parse_prometheus(response.text)
    return None


def instrument() -> None:
    """Count every `Engine.complete` call (the one entry point the LSP pipeline uses for the model)."""
    import engine.api as api

    original = api.Engine.complete
    if getattr(original, "_bench_instrumented", False):
        return

    async def complete(self, request, options, ready_timeout: float = 120.0, *args, **kwargs):
        if self not in _ENGINES:
            _ENGINES.append(self)
        COUNTERS.calls_started += 1
        started = time.perf_counter()
        try:
            completion = await original(self, request, options, ready_timeout, *args, **kwargs)
        except asyncio.CancelledError:
            COUNTERS.calls_cancelled += 1
            raise
        except Exception:
            COUNTERS.calls_failed += 1
            raise
        COUNTERS.calls_completed += 1
        COUNTERS.model_ms.append((time.perf_counter() - started) * 1000.0)
        COUNTERS.add(completion.stats)
        return completion

    complete._bench_instrumented = True  # type: ignore[attr-defined]
    api.Engine.complete = complete


def build():
    from lsp_server.server import build_server

    instrument()
    server = build_server()

    @server.feature(STATS_METHOD)
    async def on_stats(ls: Any, params: Any) -> dict[str, Any]:
        out: dict[str, Any] = asdict(COUNTERS)
        out["llama_server_metrics"] = await llama_server_metrics()
        speculation = getattr(ls, "speculation_stats", None)
        out["server"] = speculation() if callable(speculation) else {}
        return out

    return server


def main() -> None:
    build().start_io()


if __name__ == "__main__":
    main()
