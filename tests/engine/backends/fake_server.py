"""A loopback HTTP/1.1 server for backend tests: scripted responses, raw control of the socket (chunked bodies,
stalls, connection resets) and a record of every request. Plain asyncio, no extra dependency."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Iterator
from urllib.parse import urlsplit


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> str:
        return urlsplit(self.target).query

    def json(self):
        return json.loads(self.body)


class Responder:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer
        self.finished = False

    async def start(self, status: int = 200, headers: dict[str, str] | None = None,
                    content_type: str = "text/event-stream") -> None:
        """Status line and headers of a chunked response."""
        lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}", "Transfer-Encoding: chunked"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await self.writer.drain()

    async def send(self, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode()
        if data:
            self.writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await self.writer.drain()

    async def end(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()
        self.finished = True

    async def full(self, status: int, body: bytes | str | dict | list, headers: dict[str, str] | None = None,
                   content_type: str = "application/json") -> None:
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await self.writer.drain()
        self.finished = True

    def reset(self) -> None:
        """Close with a TCP RST (SO_LINGER 0), as a crashing server or a middlebox would."""
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()
        self.finished = True

    async def wait_client_close(self) -> None:
        """Returns when the client closes its side of the connection."""
        while await self.reader.read(4096):
            pass


Handler = Callable[[Request, Responder], Awaitable[None]]


@dataclass
class FakeServer:
    handler: Handler
    requests: list[Request] = field(default_factory=list)
    #: TCP connections accepted so far (keep-alive reuses one)
    connections: int = 0
    client_closed: asyncio.Event = field(default_factory=asyncio.Event)
    _server: asyncio.base_events.Server | None = None
    _tasks: set = field(default_factory=set)

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        self.connections += 1
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                self.requests.append(request)
                responder = Responder(reader, writer)
                await self.handler(request, responder)
                if not responder.finished:
                    # The handler stopped mid-response: wait for the client to give up on the connection.
                    await responder.wait_client_close()
                    self.client_closed.set()
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            self.client_closed.set()
        except asyncio.CancelledError:
            pass  # the test is over (FakeServer.close)
        finally:
            self._tasks.discard(task)
            writer.close()


async def llama_server_rest(request: Request, responder: Responder) -> None:
    """llama-server's answers to what is not a model request, for handlers that script only the model: `/tokenize`
    one token per character, `/health` and `/props` ok, anything else 404."""
    if request.path == "/tokenize":
        await responder.full(200, {"tokens": list(range(len(request.json().get("content", ""))))})
    elif request.path in ("/health", "/props"):
        await responder.full(200, {"status": "ok"})
    else:
        await responder.full(404, {"error": "not found"})


@contextmanager
def serving_in_thread(handler: Handler) -> Iterator[tuple[FakeServer, str]]:
    """A FakeServer on its own event loop in a background thread, for tests that block their own thread (driving
    an editor through subprocesses): yields (server, base_url), and closes the server and the loop afterwards."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fake-server", daemon=True)
    thread.start()
    server = FakeServer(handler)
    try:
        url = asyncio.run_coroutine_threadsafe(server.start(), loop).result(30)
        yield server, url
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return Request(method, target, headers, body)
