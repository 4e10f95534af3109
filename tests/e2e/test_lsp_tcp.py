"""`infill serve --tcp HOST:PORT`: the same reader as over stdio (forgiving framing, every message answered), on a
socket. No model is asked: the requests here need none."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from typing import Any

from .lsp_support import ROOT, server_env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _connect(port: int, proc: subprocess.Popen) -> socket.socket:
    for _ in range(600):  # until the server listens (attempts, not a time limit the test asserts)
        if proc.poll() is not None:
            raise AssertionError(f"the server exited with {proc.returncode}")
        try:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.settimeout(120)  # a missing answer fails the test instead of hanging it
            return sock
        except ConnectionRefusedError:
            time.sleep(0.1)
    raise AssertionError("the server never listened")


class Wire:
    def __init__(self, sock: socket.socket):
        self.sock, self.buf = sock, b""

    def frame(self, body: bytes) -> None:
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, message: dict[str, Any]) -> None:
        self.frame(json.dumps(message).encode())

    def answer(self, msg_id: Any) -> dict[str, Any]:
        """The next answer with this id (null for the id-null ones); notifications and others are skipped."""
        while True:
            while b"\r\n\r\n" not in self.buf:
                self._more()
            head, rest = self.buf.split(b"\r\n\r\n", 1)
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            while len(rest) < length:
                self._more()
                head, rest = self.buf.split(b"\r\n\r\n", 1)
            message, self.buf = json.loads(rest[:length]), rest[length:]
            if "method" not in message and message.get("id") == msg_id:
                return message
            if "method" in message and "id" in message:  # a request of the server's: answer it
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def _more(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise AssertionError("the server closed the connection")
        self.buf += chunk


def test_tcp_answers_malformed_messages_and_keeps_serving():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "lsp_server", "serve", "--tcp", f"127.0.0.1:{port}"], cwd=ROOT,
                            env=server_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with _connect(port, proc) as sock:
            wire = Wire(sock)
            wire.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"processId": None, "rootUri": None, "capabilities": {}}})
            assert "capabilities" in wire.answer(1)["result"]
            wire.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            wire.frame(b"{not json")
            assert wire.answer(None)["error"]["code"] == -32700
            sock.sendall(b"content-length: 2\n\n[]")  # lower-case header, LF line ends: read, and answered
            assert wire.answer(None)["error"]["code"] == -32600
            sock.sendall(b"X-Junk: " + b"x" * 100_000 + b"\r\n")  # a header line over asyncio's default limit
            wire.send({"jsonrpc": "2.0", "id": 2, "method": "infill/stats", "params": {}})
            assert wire.answer(2)["result"]["documents"] == 0
            wire.send({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
            assert wire.answer(3)["result"] is None
            wire.send({"jsonrpc": "2.0", "method": "exit"})
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
