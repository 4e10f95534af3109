"""The server's start (InfillServer): `initialize` is answered before the parts are built, the parts are built in
the loop's next turn, and a message handled before that still finds them."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
from typing import Any

from lsp_server import startup
from lsp_server.server import build_server


class Client:
    """Collects what the server writes, as parsed JSON-RPC messages."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.collector_on_at_write: list[bool] = []

    def write(self, data: bytes) -> None:
        self.collector_on_at_write.append(gc.isenabled())
        self.messages.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

    def close(self) -> None:
        pass

    def answer(self, request_id: int) -> dict[str, Any] | None:
        return next((m for m in self.messages if m.get("id") == request_id and "method" not in m), None)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"processId": None, "rootUri": None, "capabilities": {}}}
URI = "file:///tmp/a.py"


async def answered(client: Client, request_id: int) -> dict[str, Any]:
    for _ in range(1000):  # loop turns, not time: the handler is a coroutine that answers without waiting
        message = client.answer(request_id)
        if message is not None:
            return message
        await asyncio.sleep(0)
    raise AssertionError(f"request {request_id} was not answered")


async def test_initialize_is_answered_before_the_parts_are_built_and_they_are_built_in_the_next_turn():
    server = build_server()
    client = Client()
    server.protocol.set_writer(client)
    server.protocol.handle_message(dict(INITIALIZE))
    assert "capabilities" in client.answer(1)["result"]
    assert not server._loaded
    await asyncio.sleep(0)
    assert server._loaded and len(server.documents) == 0


async def test_messages_handled_in_the_same_turn_as_initialize_find_the_parts():
    """Several messages read at once (as over TCP) are handled before the scheduled build: didOpen keeps its
    document and the inline request gets its answer (empty: no engine before `initialized`)."""
    server = build_server()
    client = Client()
    server.protocol.set_writer(client)
    for message in (dict(INITIALIZE),
                    {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                        "uri": URI, "languageId": "python", "version": 1, "text": "def f():\n    "}}},
                    {"jsonrpc": "2.0", "id": 2, "method": "textDocument/inlineCompletion", "params": {
                        "textDocument": {"uri": URI}, "position": {"line": 1, "character": 4},
                        "context": {"triggerKind": 1}}}):
        server.protocol.handle_message(message)
    assert server._loaded and server.documents.get(URI) is not None
    assert (await answered(client, 2)).get("result") == {"items": []}


async def test_the_collector_is_paused_until_initialize_is_answered_and_the_start_frozen():
    assert gc.isenabled()
    server = build_server()
    startup.freeze_and_pause()
    try:
        frozen_before = gc.get_freeze_count()
        assert frozen_before > 0  # what the imports made is out of later collections
        client = Client()
        server.protocol.set_writer(client)
        server.protocol.handle_message(dict(INITIALIZE))
        assert client.collector_on_at_write == [False]  # the answer was written with the collector paused
        await asyncio.sleep(0)
        assert server._loaded and gc.isenabled()
        assert gc.get_freeze_count() > frozen_before  # and so are the parts
    finally:
        startup.end_pause()
        gc.unfreeze()
        gc.enable()


def test_ending_the_pause_leaves_a_collector_that_something_else_turned_off_alone():
    gc.disable()
    try:
        startup.freeze_and_pause()
        startup.end_pause()
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()


def test_infill_serve_starts_the_server_with_the_collector_paused_and_without_an_argument_parser():
    code = ("import gc, sys; from lsp_server.cli import main; import lsp_server.server as server; "
            "server.main_stdio = lambda: print(gc.isenabled(), gc.get_freeze_count() > 10_000, "
            "'argparse' in sys.modules); main(['serve', '--stdio'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "False True False\n"
