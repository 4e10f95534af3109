"""Shared by the LSP benchmarks: a llama-server with the tiny (or a given) model, and an LSP client that drives
`python -m lsp_server serve --stdio` over pipes exactly as an editor would. Not a benchmark itself."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from engine.config import LocalServerSettings
from engine.local.binary import require_llama_server
from engine.local.supervisor import LlamaServerSupervisor

from .paths import REPO_ROOT, RESULTS_DIR, scratch_dir

RESULTS = RESULTS_DIR


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "median": statistics.median(values), "p90": percentile(values, 90),
            "p99": percentile(values, 99), "min": min(values), "max": max(values)}


def machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
            "loadavg": os.getloadavg()}


def tiny_model_path() -> Path:
    from tests.fixtures.tiny_model import build_tiny_model

    target = Path(tempfile.gettempdir()) / "infill-bench" / "tiny-fim.gguf"
    if not target.exists():
        build_tiny_model(target)
    return target


@asynccontextmanager
async def llama_server(model: Path, parallel: int = 2) -> AsyncIterator[LlamaServerSupervisor]:
    supervisor = LlamaServerSupervisor(require_llama_server(None), model,
                                       LocalServerSettings(parallel=parallel, ctx_size=4096, start_timeout=120.0))
    await supervisor.start()
    try:
        yield supervisor
    finally:
        await supervisor.stop()


def server_env() -> dict[str, str]:
    home = scratch_dir("infill-bench-")
    env = dict(os.environ)
    env.update(XDG_CONFIG_HOME=f"{home}/config", XDG_STATE_HOME=f"{home}/state", PYTHONPATH=str(REPO_ROOT))
    return env


class Lsp:
    """A connected, initialised client with helpers for documents and inline requests."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.versions: dict[str, int] = {}
        self.pid: int = client._server.pid  # type: ignore[union-attr]

    def open(self, uri: str, text: str, language: str = "python") -> None:
        self.versions[uri] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))

    def insert(self, uri: str, line: int, character: int, text: str) -> None:
        self.versions[uri] += 1
        pos = types.Position(line=line, character=character)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangePartial(range=types.Range(start=pos, end=pos),
                                                                    text=text)]))

    def request(self, uri: str, line: int, character: int, invoked: bool = True):
        kind = types.InlineCompletionTriggerKind.Invoked if invoked else types.InlineCompletionTriggerKind.Automatic
        return self.client.text_document_inline_completion_async(types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
            context=types.InlineCompletionContext(trigger_kind=kind)))

    async def stats(self) -> dict[str, Any]:
        """The server's own counters and per-request handler timings (`infill/stats`)."""
        return await self.client.protocol.send_request_async("infill/stats", {})

    def rss_kb(self) -> int:
        with open(f"/proc/{self.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


async def start_server(client: LanguageClient, options: dict[str, Any], env: dict[str, str]) -> None:
    """Start `python -m lsp_server serve --stdio` under `client` and initialize it as an editor does (UTF-16, inline
    completion, `options` as initialization options). The server's log messages are dropped and the ones it shows
    the user printed. Shared by every benchmark that drives the real server, so they all start it the same way;
    each waits for the `ready` status its own way (register the handler before calling this)."""

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def _log(params: Any) -> None:
        pass

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def _show(params: Any) -> None:
        print(f"server says: {params.message}", file=sys.stderr)

    await client.start_io(sys.executable, "-m", "lsp_server", "serve", "--stdio", env=env)
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(
            general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
            text_document=types.TextDocumentClientCapabilities(
                inline_completion=types.InlineCompletionClientCapabilities())),
        initialization_options=options, process_id=os.getpid()))
    client.initialized(types.InitializedParams())


@asynccontextmanager
async def lsp_server(options: dict[str, Any]) -> AsyncIterator[Lsp]:
    client = LanguageClient("infill-bench", "1")
    ready = asyncio.Event()

    @client.feature("infill/didChangeStatus")
    def _status(params: Any) -> None:
        if params.kind == "ready":
            ready.set()

    await start_server(client, options, server_env())
    await asyncio.wait_for(ready.wait(), 120)
    try:
        yield Lsp(client)
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()


def write_results(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                **data}, indent=2) + "\n")
    return path
