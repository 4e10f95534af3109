"""The fuzz's end of the pipes: a hand-written JSON-RPC client (so that malformed frames, lone surrogates and
invalid params can be sent, and every answer is counted), the server process it talks to (`python -m lsp_server
serve --stdio` with its own directories), `initialize`, and what is read of that process from /proc (resident
memory, children)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ...common.paths import REPO_ROOT, scratch_dir

#: JSON-RPC's InternalError: no request may get it.
INTERNAL_ERROR = -32603


class Client:
    """A minimal JSON-RPC client over the server's pipes that can also send what no well-behaved client sends."""

    def __init__(self, proc: asyncio.subprocess.Process, settings: dict[str, Any]):
        self.proc = proc
        self.settings = settings
        self.next_id = 0
        self.pending: dict[int | str, dict[str, Any]] = {}
        self.answers: dict[int | str, int] = {}
        self.errors: dict[int, int] = {}
        self.error_messages: list[str] = []
        self.unknown_answers = 0
        #: JSON-RPC's `"id": null` error answers (to a body that is not JSON, a message that is not an object, a
        #: request whose id is not an integer or a string), by error code.
        self.unidentified_errors: dict[int, int] = {}
        self.show_messages: list[str] = []
        self.notifications: dict[str, int] = {}
        self.server_requests: dict[str, int] = {}
        self.answers_by_id: dict[int | str, dict[str, Any]] = {}
        #: Answers to requests of this client so far: an answer's place in that count says how long ago it came.
        self.answered_count = 0
        self._reader = asyncio.create_task(self._read())

    def _write(self, payload: bytes) -> None:
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(payload) + payload)

    def send(self, message: dict[str, Any]) -> None:
        self._write(json.dumps(message).encode("ascii"))  # ensure_ascii: lone surrogates travel as \ud800

    def raw(self, payload: bytes) -> None:
        self._write(payload)

    def request(self, method: str, params: Any = None, *, omit_params: bool = False, expect: str = "any",
                **message: Any) -> int:
        self.next_id += 1
        msg_id = self.next_id
        body = {"jsonrpc": "2.0", "id": msg_id, "method": method, **message}
        if not omit_params:
            body["params"] = params
        self.pending[msg_id] = {"method": method, "expect": expect, "sent": time.monotonic()}
        self.send(body)
        return msg_id

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def drain(self) -> None:
        await self.proc.stdin.drain()

    async def wait_answered(self, msg_id: int, timeout: float = 60.0) -> dict[str, Any]:
        end = time.monotonic() + timeout
        while msg_id in self.pending and time.monotonic() < end:
            await asyncio.sleep(0.005)
        return self.pending.get(msg_id) or self.answers_by_id.get(msg_id, {})

    async def _read(self) -> None:
        reader = self.proc.stdout
        while True:
            length = None
            while True:
                line = await reader.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                continue
            message = json.loads(await reader.readexactly(length))
            self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            method = message["method"]
            self.server_requests[method] = self.server_requests.get(method, 0) + 1
            result: Any = None
            if method == "workspace/configuration":
                result = [self.settings for _ in message.get("params", {}).get("items", [])]
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return
        if "method" in message:
            method = message["method"]
            self.notifications[method] = self.notifications.get(method, 0) + 1
            if method == "window/showMessage":
                self.show_messages.append(message["params"].get("message", ""))
            return
        msg_id = message.get("id")
        if msg_id is None and isinstance(message.get("error"), dict):
            code = message["error"].get("code")
            self.unidentified_errors[code] = self.unidentified_errors.get(code, 0) + 1
            return
        self.answers[msg_id] = self.answers.get(msg_id, 0) + 1
        entry = self.pending.pop(msg_id, None)
        if entry is None:
            if self.answers[msg_id] == 1:
                self.unknown_answers += 1
            return
        entry["answer"] = message
        self.answered_count += 1
        entry["answered"] = self.answered_count
        self.answers_by_id[msg_id] = entry
        error = message.get("error")
        if error is not None:
            self.errors[error.get("code")] = self.errors.get(error.get("code"), 0) + 1
            if error.get("code") == -32803:
                self.error_messages.append(error.get("message", ""))

    async def stop_reading(self) -> None:
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


class ServerProcess:
    """`python -m lsp_server serve --stdio` from this checkout, with its own config and state directories."""

    def __init__(self) -> None:
        self.home = Path(scratch_dir("infill-fuzz-"))
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> asyncio.subprocess.Process:
        env = dict(os.environ)
        env.update(XDG_CONFIG_HOME=str(self.home / "config"), XDG_STATE_HOME=str(self.home / "state"),
                   XDG_CACHE_HOME=str(self.home / "cache"), PYTHONPATH=str(REPO_ROOT))
        env.pop("INFILL_CONFIG", None)
        with open(self.home / "stderr.log", "wb") as stderr:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "lsp_server", "serve", "--stdio", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=stderr, env=env, cwd=str(REPO_ROOT), limit=2 ** 26)
        return self.proc

    def log_text(self) -> str:
        """The server's stderr and its log file."""
        text = (self.home / "stderr.log").read_text(errors="replace")
        for path in sorted(self.home.glob("state/infill/*.log*")):
            text += path.read_text(errors="replace")
        return text

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


async def initialize(client: Client, encoding: str) -> dict[str, Any]:
    """initialize + initialized; the InitializeResult."""
    init = client.request("initialize", {
        "processId": os.getpid(), "rootUri": None, "initializationOptions": client.settings,
        "capabilities": {"general": {"positionEncodings": [encoding]}, "workspace": {"configuration": True},
                         "window": {"workDoneProgress": True}, "textDocument": {"inlineCompletion": {}}}})
    result = (await client.wait_answered(init)).get("answer", {}).get("result", {})
    negotiated = result.get("capabilities", {}).get("positionEncoding")
    assert negotiated == encoding, f"asked for {encoding}, got {negotiated}"
    client.notify("initialized", {})
    await client.drain()
    return result
