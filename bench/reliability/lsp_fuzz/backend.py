"""The loopback model server the fuzzed server is configured against: it records every model request (the fuzz's
oracle judges each as it arrives) and answers each in a randomly chosen way, normally or with an injected fault
(`Backend.MODES`: HTTP 500 or 429, a reset connection, a stall, a malformed chunk, a stream that never ends, odd
Unicode). Tests and the soak benchmark use it without faults as a scripted model server.

The loopback follows OpenAI's documented `/v1/completions` streaming format
(https://platform.openai.com/docs/api-reference/completions/create): `data: {"choices":[{"text":...}]}` events and
`data: [DONE]`; and llama-server's `/completion` and `/infill` (`data: {"content": ..., "stop": false}` events up to
one with `"stop": true`; one JSON object, or a list for `n_cmpl`, when not streamed)."""

from __future__ import annotations

import asyncio
import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

#: Written into every excluded document (a `.env`, a `secret_*` file): no request body may hold it.
CANARY = "INFILL-CANARY-SECRET-7c1d"
#: Characters of a long prompt (suffix) that Backend.calls keeps.
EXCERPT = 10_000
#: Error messages of completions that failed because of a fault the backend injected on purpose.
INJECTED = re.compile(r"HTTP 500|HTTP 429|malformed|expected a JSON|not a string|no completion within|connect|reset|"
                      r"disconnect|timed out|transport|incomplete|protocol|peer", re.I)


@dataclass
class ModelCall:
    """One model request as the loopback received it, in protocol-independent terms."""

    #: "openai" (/v1/completions), "completion" (llama-server /completion with the fuzz template) or "infill".
    protocol: str
    #: Everything before the hole: the context block (if any) and the text before the cursor, as the model gets it.
    before: str
    #: The text after the cursor (None: the request has none, or it could not be parsed).
    after: str | None
    #: A warm-up (`n_predict: 0`: llama-server prefills the prompt and generates nothing).
    warm: bool = False
    #: Snippets sent apart from the prompt (`/infill` input_extra).
    extra: int = 0
    #: The prompt did not have the template's form.
    unparsed: bool = False


#: The prompt template of the `llama.cpp/completion` kind in the fuzz (markers that random text never contains), so
#: that the loopback can split a templated prompt back into its prefix and suffix.
FUZZ_TEMPLATE = "<|pre|>{prefix}<|suf|>{suffix}<|mid|>"


def parse_call(path: str, request: dict) -> ModelCall:
    """The prefix and suffix a model request carries, whichever protocol it came in."""
    warm = request.get("n_predict") == 0
    if path.endswith("/infill"):
        extra = request.get("input_extra")
        return ModelCall("infill", request.get("input_prefix") or "", request.get("input_suffix"), warm,
                         len(extra) if isinstance(extra, list) else 0)
    prompt = request.get("prompt")
    prompt = prompt if isinstance(prompt, str) else ""
    if path.endswith("/completion"):
        if prompt.startswith("<|pre|>") and prompt.endswith("<|mid|>") and "<|suf|>" in prompt:
            before, _, after = prompt[len("<|pre|>"):-len("<|mid|>")].partition("<|suf|>")
            return ModelCall("completion", before, after, warm)
        return ModelCall("completion", prompt, None, warm, unparsed=True)
    suffix = request.get("suffix")
    return ModelCall("openai", prompt, suffix if isinstance(suffix, str) else None, warm)


@dataclass
class Backend:
    """The loopback model server: OpenAI's `/v1/completions` and llama-server's `/completion` and `/infill` (both
    streamed and not), at `start()`'s endpoint (OpenAI, with `/v1`) and at `root` (llama-server)."""

    rng: random.Random
    #: (prompt, suffix) of every completion request as received (long ones cut to EXCERPT characters) ...
    calls: list[tuple[str, str | None]] = field(default_factory=list)
    #: ... and the hash of the whole pair, compared with the reference's (2 MB documents would not fit in memory).
    keys: list[int] = field(default_factory=list)
    bodies_with_canary: int = 0
    modes: dict[str, int] = field(default_factory=dict)
    open_streams: int = 0
    max_open_streams: int = 0
    bad_requests: int = 0
    #: GET probes of the model server's state (speculation asks llama-server's /slots and /metrics), by path.
    probes: dict[str, int] = field(default_factory=dict)
    open_modes: list = field(default_factory=list)
    #: Modes for the next requests, in order (tests); then random ones, or "normal" without `faults`.
    script: list = field(default_factory=list)
    faults: bool = True
    #: Called with every model request as it arrives (the fuzz's oracle), before it is answered.
    on_call: Any = None
    #: Requests per protocol, warm-ups counted apart.
    protocols: dict[str, int] = field(default_factory=dict)
    root: str = ""
    _server: Any = None
    _tasks: set = field(default_factory=set)

    MODES = (("normal", 60), ("http500", 6), ("http429", 4), ("reset", 4), ("reset_mid", 4), ("stall", 3),
             ("malformed", 5), ("endless_fast", 5), ("endless_slow", 2), ("endless_same", 2), ("done_then_stall", 2),
             ("unicode", 5))

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.root = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return f"{self.root}/v1"

    async def close(self) -> None:
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def _mode(self) -> str:
        if self.script:
            return self.script.pop(0)
        if not self.faults:
            return "normal"
        names, weights = zip(*self.MODES)
        return self.rng.choices(names, weights)[0]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks.add(asyncio.current_task())
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                headers = {}
                lines = head.decode("latin-1").split("\r\n")
                for line in lines[1:]:
                    if ":" in line:
                        key, value = line.split(":", 1)
                        headers[key.strip().lower()] = value.strip()
                path = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "/"
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if lines[0].startswith("GET "):  # a server probe (/slots, /metrics, /health): not a model request
                    self.probes[path] = self.probes.get(path, 0) + 1
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    continue
                if not await self._answer(path, body, reader, writer):
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(asyncio.current_task())
            writer.close()

    async def _answer(self, path: str, body: bytes, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection is finished."""
        try:
            text = body.decode("utf-8")  # strict: the engine must send valid UTF-8
            request = json.loads(text)
            if not isinstance(request, dict):
                raise ValueError("not an object")
        except (UnicodeDecodeError, ValueError):
            self.bad_requests += 1
            writer.write(b"HTTP/1.1 400 X\r\nContent-Length: 0\r\n\r\n")
            return True
        if CANARY in text:
            self.bodies_with_canary += 1
        call = parse_call(path, request)
        name = call.protocol + (" warm-up" if call.warm else "")
        self.protocols[name] = self.protocols.get(name, 0) + 1
        prompt, suffix = call.before, call.after
        self.keys.append(hash((prompt, suffix)))
        self.calls.append((prompt if len(prompt or "") <= EXCERPT else f"…{prompt[-EXCERPT:]}",
                           suffix if len(suffix or "") <= EXCERPT else f"{suffix[:EXCERPT]}…"))
        if self.on_call is not None:
            self.on_call(call)
        llama = call.protocol != "openai"
        mode = self._mode()
        self.modes[mode] = self.modes.get(mode, 0) + 1
        if mode in ("http500", "http429"):
            status, extra = (500, "") if mode == "http500" else (429, "Retry-After: 0\r\n")
            payload = b'{"error": {"message": "injected"}}'
            writer.write(f"HTTP/1.1 {status} X\r\n{extra}Content-Type: application/json\r\nContent-Length: "
                         f"{len(payload)}\r\n\r\n".encode() + payload)
            await writer.drain()
            return True
        if mode == "reset":
            writer.transport.abort()
            return False
        if llama and request.get("stream") is False:  # a warm-up or several choices: one JSON reply
            return await self._reply(mode, request, reader, writer)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        self.open_streams += 1
        self.open_modes.append(mode)
        self.max_open_streams = max(self.max_open_streams, self.open_streams)
        try:
            return await self._stream(mode, llama, reader, writer)
        finally:
            self.open_streams -= 1
            self.open_modes.remove(mode)

    @staticmethod
    async def _until_closed(reader: asyncio.StreamReader) -> None:
        """A stalled response: nothing more is sent until the client gives up and closes the connection."""
        while await reader.read(4096):
            pass

    async def _reply(self, mode: str, request: dict, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> bool:
        """llama-server's non-streamed answer: `{"content", "stop"}`, or a list of them for `n_cmpl`."""
        if mode == "stall":
            await self._until_closed(reader)
            return False
        count = request.get("n_cmpl")
        one = {"content": "" if request.get("n_predict") == 0 else self.rng.choice(["x", " = 1", "y\n"]),
               "stop": True, "stop_type": "eos"}
        reply: Any = [dict(one, index=i) for i in range(count)] if isinstance(count, int) else one
        payload = json.dumps(reply).encode()
        if mode == "malformed":
            payload = self.rng.choice([b"not json", b'{"content": 7}', b"[1, 2]"])
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(payload), payload))
        await writer.drain()
        return True

    async def _stream(self, mode: str, llama: bool, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> bool:
        async def event(data: str) -> None:
            chunk = f"data: {data}\n\n".encode()
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()

        def token(text: str) -> str:
            if llama:
                return json.dumps({"content": text, "stop": False})
            return json.dumps({"choices": [{"index": 0, "text": text, "finish_reason": None}]})

        words = ["x", " = ", "1", "\n", "    ", "return", " y", "(", ")", ":", "\n\n", "foo", "bar"]
        if mode == "unicode":
            words = ["é", "😀", "\ud800", "\x00", "\u2028", "\r\n", "\r", "中", "\x85"]
        if mode == "endless_same":  # no stop word ever: only a cap ends it
            words = [" x"]
        if mode in ("endless_fast", "endless_slow", "endless_same"):
            while True:  # ends when the client closes the connection
                await event(token(self.rng.choice(words)))
                await asyncio.sleep(0.2 if mode == "endless_slow" else 0.001)
        if mode == "stall":  # headers, then nothing
            await writer.drain()
            await self._until_closed(reader)
            return False
        for i in range(self.rng.randint(0, 6)):
            await event(token(self.rng.choice(words)))
            if mode == "reset_mid" and i == 1:
                writer.transport.abort()
                return False
        if mode == "malformed":
            await event(self.rng.choice(['{"choices": [{"text": ', '{"choices": 5}', "not json", '[1, 2]',
                                         '{"choices": [{"text": 7}]}', '{"content": 7, "stop": false}']))
        if llama:
            await event(json.dumps({"content": "", "stop": True, "stop_type": "eos"}))
        else:
            await event(json.dumps({"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]}))
            await event("[DONE]")
        if mode == "done_then_stall":
            await self._until_closed(reader)
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True
