"""Helpers for the pytest-lsp end-to-end tests of the Infill server (not a test module)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, AsyncIterator

import httpx
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER_COMMAND = [sys.executable, "-m", "lsp_server", "serve", "--stdio"]
STATUS = "infill/didChangeStatus"
ROOT = Path(__file__).resolve().parents[2]


def server_env() -> dict[str, str]:
    """Keep the user's config file, state and run directories out of the tests (the home lives in the session's
    scratch directory, tests/conftest.py)."""
    home = tempfile.mkdtemp(prefix="infill-lsp-test-", dir=os.environ.get("INFILL_TEST_SCRATCH"))
    env = dict(os.environ)
    env.update(XDG_CONFIG_HOME=os.path.join(home, "config"), XDG_STATE_HOME=os.path.join(home, "state"),
               XDG_CACHE_HOME=os.path.join(home, "cache"), PYTHONPATH=str(ROOT),
               # a run directory of its own: servers of other tests never share their llama-server with this one
               INFILL_RUN_DIR=os.path.join(home, "run"))
    env.pop("INFILL_CONFIG", None)
    return env


def config() -> ClientServerConfig:
    return ClientServerConfig(server_command=SERVER_COMMAND, server_env=server_env())


def capabilities(encodings: list[str] | None = None, configuration: bool = True) -> types.ClientCapabilities:
    """pytest-lsp's canned capability sets declare no inline completion: declare it here."""
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=encodings or ["utf-16"]),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(),
            inline_completion=types.InlineCompletionClientCapabilities(dynamic_registration=False)),
        window=types.WindowClientCapabilities(work_done_progress=True),
        workspace=types.WorkspaceClientCapabilities(configuration=configuration,
                                                    did_change_configuration=types.DidChangeConfigurationClientCapabilities()),
    )


def record_status(client: LanguageClient) -> list[dict[str, Any]]:
    """Collect infill/didChangeStatus notifications (register before initialize)."""
    seen: list[dict[str, Any]] = []

    @client.feature(STATUS)
    def _on_status(params: Any) -> None:
        seen.append({"kind": params.kind, "message": params.message, "detail": getattr(params, "detail", None)})

    client.infill_status = seen  # type: ignore[attr-defined]
    return seen


def remote_options(base_url: str, **extra: Any) -> dict[str, Any]:
    """Point the server at the session's llama-server via its FIM endpoint (fast: no model start per server)."""
    return {"completion": {"kind": "llama.cpp/infill", "api_endpoint": base_url}, "debounce": {"mode": "fixed",
            "fixed_ms": 0}, "max_tokens": 16,
            # no interactive deadline: on a loaded machine it would cut generations and make results timing-dependent
            "request_timeout": 3600.0, **extra}


async def start_remote_session(client: LanguageClient, base_url: str, **settings: Any) -> None:
    """Initialize the server against the session's llama-server (`remote_options` plus `settings`), utf-16, and
    wait until it is ready."""
    record_status(client)
    await client.initialize_session(types.InitializeParams(
        capabilities=capabilities(["utf-16"]), initialization_options=remote_options(base_url, **settings)))
    await wait_status(client, "ready")


async def stats(client: LanguageClient) -> dict[str, Any]:
    """The server's counters (`infill/stats`)."""
    result = await client.protocol.send_request_async("infill/stats", {})
    return result if isinstance(result, dict) else result._asdict()


async def wait_status(client: LanguageClient, kind: str, timeout: float = 60.0) -> dict[str, Any]:
    seen = client.infill_status  # type: ignore[attr-defined]
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        for event in seen:
            if event["kind"] == kind:
                return event
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no {kind!r} status within {timeout} s; saw {seen}")
        await asyncio.sleep(0.02)


_counter = 0


def open_doc(client: LanguageClient, text: str, language: str = "python", name: str | None = None) -> str:
    global _counter
    _counter += 1
    uri = f"file:///work/sample/{name or f'doc{_counter}.py'}"
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))
    return uri


def inline_params(uri: str, line: int, character: int, invoked: bool = True) -> types.InlineCompletionParams:
    kind = types.InlineCompletionTriggerKind.Invoked if invoked else types.InlineCompletionTriggerKind.Automatic
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character),
        context=types.InlineCompletionContext(trigger_kind=kind))


async def complete(client: LanguageClient, uri: str, line: int, character: int, invoked: bool = True
                   ) -> types.InlineCompletionList:
    result = await client.text_document_inline_completion_async(inline_params(uri, line, character, invoked))
    assert isinstance(result, types.InlineCompletionList), result
    return result


def edit(client: LanguageClient, uri: str, version: int, line: int, character: int, text: str,
         end: tuple[int, int] | None = None) -> None:
    end_line, end_char = end if end else (line, character)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=character),
                              end=types.Position(line=end_line, character=end_char)), text=text)]))


async def wait_generating(base_url: str, min_decoded: int, pending: asyncio.Future | None = None) -> int | None:
    """Id of the llama-server slot that is generating, once it has produced `min_decoded` tokens; None when
    `pending` was answered first (a round the test missed)."""
    slot = await generating_slot(base_url, min_decoded, pending)
    return None if slot is None else slot["id"]


async def generating_slot(base_url: str, min_decoded: int, pending: asyncio.Future | None = None,
                          after_task: int = -1) -> dict[str, Any] | None:
    """llama-server's /slots entry of the slot that is generating (a task later than `after_task`), once it has
    produced `min_decoded` tokens (with the test fixture's LLAMA_SERVER_SLOTS_DEBUG, `generated` holds its text so
    far); None when `pending` was answered first (a round the test missed)."""
    async with httpx.AsyncClient(base_url=base_url, timeout=5.0, trust_env=False) as http:
        end = asyncio.get_running_loop().time() + 30  # safety net only, not a speed assertion
        while asyncio.get_running_loop().time() < end:
            for slot in (await http.get("/slots")).json():
                if slot.get("is_processing") and n_decoded(slot) >= min_decoded \
                        and slot.get("id_task", -1) > after_task:
                    return slot
            if pending is not None and pending.done():
                return None
            await asyncio.sleep(0.005)
    raise AssertionError("llama-server never started generating")


def n_decoded(slot: dict[str, Any]) -> int:
    """Tokens the slot's running generation has produced so far, from its /slots entry (0 once it has ended)."""
    return int((slot.get("next_token") or [{}])[0].get("n_decoded", 0))


@contextlib.asynccontextmanager
async def recording_infill_session(client: LanguageClient, reply: str,
                                   client_capabilities: types.ClientCapabilities | None = None
                                   ) -> AsyncIterator[types.InitializeResult]:
    """An initialized session whose model is a loopback llama.cpp `/infill` endpoint that streams `reply` and records
    every request (`client.fake.requests`), so that a test reads the exact prefix and suffix the server built; no
    prefetch, so every prompt is one the test asked for. Yields the initialize result."""
    from tests.engine.backends.fake_server import FakeServer, Request, Responder, llama_server_rest
    from tests.engine.backends.vendor_formats import SSE, llama_content, llama_end

    async def llama(request: Request, responder: Responder) -> None:
        """Just enough of llama-server: `/infill` streams the reply once; `/tokenize` counts a token a character."""
        if request.path == "/infill":
            await responder.start(content_type=SSE)
            await responder.send(llama_content(reply) + llama_end())
            await responder.end()
        else:
            await llama_server_rest(request, responder)

    fake = FakeServer(llama)
    url = await fake.start()
    record_status(client)
    options = remote_options(url, max_tokens=4, speculation={"prefetch": False})
    options["completion"]["prompt_template"] = "{prefix}<fill>{suffix}"  # any template with a suffix: both are sent
    result = await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities or capabilities(["utf-16"]), initialization_options=options))
    await wait_status(client, "ready")
    client.fake = fake  # type: ignore[attr-defined]
    try:
        yield result
    finally:
        await client.shutdown_session()
        await fake.close()


def llama_servers(model: Path) -> dict[int, tuple[int, int]]:
    """pid → (parent pid, port) of every running llama-server of `model`."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if str(model) not in args or "--port" not in args:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if fields.get("State", "").startswith("Z"):
            continue
        found[int(entry.name)] = (int(fields["PPid"]), int(args[args.index("--port") + 1]))
    return found
