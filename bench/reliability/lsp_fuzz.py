"""Seeded LSP fuzzing of `infill serve --stdio`: random valid and invalid traffic against a recording loopback
model server that also misbehaves, checked against a reference model of every document.

    python3 -m bench.reliability.lsp_fuzz --actions 10000 --seeds 1 2 3 --encodings utf-16 utf-8

One run: start the server over pipes (a hand-written JSON-RPC client, so that malformed frames, lone surrogates and
invalid params can be sent), initialise it against the loopback backend, then perform `actions` random actions:
open / edit / close documents (control characters, CRLF and CR, astral characters, lone surrogates, positions past
the end of a line or of the document, 2 MB documents), inline completion requests (automatic and invoked, several
choices, some cancelled), bursts of typing, storms (many requests and cancels within a millisecond over several
documents), pauses (the server's once-a-second work runs idle: context flushes, cache warm-ups), valid and bad
settings (switching between the `openai/completion`, `llama.cpp/completion` and `llama.cpp/infill` kinds, workspace
context on and off, prompt budgets from whole documents down to 2 tokens), malformed frames and requests whose params
do not fit. The backend answers each completion in a randomly chosen way: a normal stream, HTTP 500, 429, a reset
connection, a stall, a malformed chunk, a stream that never ends (fast or trickling).

The oracle, for every model request the loopback receives (warm-ups, `n_predict: 0`, included): its text before
the hole is nothing or a context block ending in the current file's `Path:` label, followed by the end of the
reference text before the cursor of a request that was still open (or answered fewer than LATE_ANSWERS answers
before: counted as `after_answer`; or that a still open request typed on from: `joined`), at least half the smallest
prefix budget in force long when the text is longer (all of it under whole-document budgets); a warm-up's, of a
request made before, never empty. Its text after the hole is the beginning of the text after that cursor, likewise.
Texts compare as the engine sends them: lone surrogates as U+FFFD, CRLF as LF. `bad_prompts` counts the model
requests that fit no request; `empty_prefix` those of them whose text before the hole was empty although the text
before the cursor was not (issue 27).

Also checked (each a count in the report; the test suite asserts them, `--check` here too):
- every request answered exactly once, no answer to an unknown id, no -32603 InternalError;
- no text of an excluded file (a `.env`, a `secret_*` file) reached the backend;
- no completion failed for a reason other than the injected backend faults (a bad setting never stops completions);
- no `window/showMessage` popup except one per bad setting; every backend stream closed by the end;
- RSS bounded; `shutdown` then a request gets InvalidRequest; `exit` ends the process with 0 and no child left.

The loopback follows OpenAI's documented `/v1/completions` streaming format
(https://platform.openai.com/docs/api-reference/completions/create): `data: {"choices":[{"text":...}]}` events and
`data: [DONE]`; and llama-server's `/completion` and `/infill` (`data: {"content": ..., "stop": false}` events up to
one with `"stop": true`; one JSON object, or a list for `n_cmpl`, when not streamed)."""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.paths import REPO_ROOT, RESULTS_DIR

RESULTS = RESULTS_DIR

CANARY = "INFILL-CANARY-SECRET-7c1d"
SURROGATE = re.compile("[\ud800-\udfff]")
INTERNAL_ERROR = -32603
EXCERPT = 10_000
#: Error messages of completions that failed because of a fault the backend injected on purpose.
INJECTED = re.compile(r"HTTP 500|HTTP 429|malformed|expected a JSON|not a string|no completion within|connect|reset|"
                      r"disconnect|timed out|transport|incomplete|protocol|peer", re.I)


# ---------------------------------------------------------------------------------------------------------------------
# The reference document model: LSP's rules, written independently of the server's


_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[tuple[int, int]]:
    """(start, end without break) of each line; LSP breaks lines at \\n, \\r\\n and \\r only."""
    out, start = [], 0
    for match in _BREAK.finditer(text):
        out.append((start, match.start()))
        start = match.end()
    out.append((start, len(text)))
    return out


def units(ch: str, encoding: str) -> int:
    cp = ord(ch)
    if encoding == "utf-16":
        return 2 if cp > 0xFFFF else 1
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


def offset_at(text: str, line: int, character: int, encoding: str) -> int:
    """Offset of an LSP position; a line past the end is the end of the document, a character past the end of its
    line the end of the line (positions inside a character are never generated)."""
    lines = split_lines(text)
    if line >= len(lines):
        return len(text)
    start, end = lines[line]
    column = 0
    for i in range(start, end):
        if column >= character:
            return i
        column += units(text[i], encoding)
    return end


def column_of(text: str, offset: int, encoding: str) -> tuple[int, int]:
    lines = split_lines(text)
    for number, (start, end) in enumerate(lines):
        if start <= offset <= end:
            return number, sum(units(ch, encoding) for ch in text[start:offset])
    return len(lines) - 1, 0


def as_sent(text: str) -> str:
    """What the engine sends for a piece of document text: LF line endings, lone surrogates as U+FFFD."""
    return SURROGATE.sub("\ufffd", text.replace("\r\n", "\n"))


PIECES = ["def f(x):\n", "    return x + 1\n", "import os\n", "x = 1", "if a:\n    b()\n", "class A:\n", "    ",
          "\t", "(", ")", "[", "]", "{", "}", "'", '"', "# note\n", "// c\n", "é", "ß", "中文", "😀", "👍🏽", "e\u0301",
          "\r\n", "\r", "\n", "\n\n", "\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\x00", "\x1b",
          "\x7f", "\ud800", "\udfff", "\udc00x", "\ufeff", "\u200b", "return ", "for i in range(3):\n", "None",
          "function g() {\n", "};\n", " = ", "y", "z", "0", "  \n"]


def random_text(rng: random.Random, pieces: int) -> str:
    """Random text as the server will read it: JSON makes one character of a high and a low surrogate that end up
    side by side in one string (as a UTF-16 editor would), so the reference does the same."""
    return json.loads(json.dumps("".join(rng.choice(PIECES) for _ in range(pieces))))


def big_text(rng: random.Random, size: int) -> str:
    block = "".join(rng.choice(PIECES[:20]) for _ in range(200)) + "\n"
    return (block * (size // len(block) + 1))[:size]


def random_position(rng: random.Random, text: str, encoding: str) -> tuple[int, int]:
    """Mostly a real position (on a character boundary); sometimes past the end of its line or of the document."""
    lines = split_lines(text)
    roll = rng.random()
    if roll < 0.05:
        return len(lines) + rng.randint(0, 3), rng.randint(0, 5)
    number = rng.randrange(len(lines))
    start, end = lines[number]
    width = sum(units(ch, encoding) for ch in text[start:end])
    if roll < 0.15:
        return number, width + rng.randint(1, 5)
    index = rng.randint(start, end)
    return number, sum(units(ch, encoding) for ch in text[start:index])


# ---------------------------------------------------------------------------------------------------------------------
# The loopback model server


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


# ---------------------------------------------------------------------------------------------------------------------
# The client


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


# ---------------------------------------------------------------------------------------------------------------------
# One run


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


BAD_SETTINGS: list[tuple[str, Any]] = [
    ("completion.kind unknown", {"completion": {"kind": "nope/completion"}}),
    ("completion.kind of another role", {"completion": {"kind": "openai/chat"}}),
    ("ftp endpoint", {"completion": {"api_endpoint": "ftp://127.0.0.1/v1"}}),
    ("template without {prefix}", {"completion": {"prompt_template": "<fim>{suffix}"}}),
    ("template with an unknown placeholder", {"completion": {"prompt_template": "{prefix}{cursor}"}}),
    ("empty language name", {"languages": {"": {"extra_stop_words": ["x"]}}}),
    ("empty stop word", {"languages": {"python": {"extra_stop_words": [""]}}}),
    ("empty additional stop word", {"completion": {"additional_stop_words": [""]}}),
    ("negative max_tokens", {"max_tokens": -1}),
    ("max_tokens a string", {"max_tokens": "many"}),
    ("debounce min above max", {"debounce": {"min_ms": 50, "max_ms": 5}}),
    ("unknown key", {"no_such_setting": 1}),
    ("completion not a table", {"completion": 5}),
    ("zero request_timeout", {"request_timeout": 0}),
    ("invoked_choices 0", {"invoked_choices": 0}),
    ("no model for openai", {"completion": {"model": None}}),
]


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


class ServerProcess:
    """`python -m lsp_server serve --stdio` from this checkout, with its own config and state directories."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="infill-fuzz-"))
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


@dataclass
class Doc:
    text: str
    version: int
    language: str
    excluded: bool = False


#: Characters of the text before (after) the cursor kept per request for the oracle; longer texts are compared
#: through their hash as a whole.
KEEP = 8192
#: A model request may reach the loopback after the request it serves was answered (cancelled or superseded while
#: the HTTP request was on its way, or while the server was busy): such a request's prompt is still checked against
#: that request's text, and counted (`after_answer`), while fewer than this many later requests have been answered.
#: Counted in answers, not seconds, so that the check does not depend on the machine's load: the lag grows with it
#: (measured, seed 5, 3,000 actions: at load 3, 362 prompts came after their answer, 37 of them over 50 ms after;
#: under a busy test suite plus busy loops, 20 times slower, 43 came over 15 s after), while the answers in between
#: stay few: at most 59–106 (seeds 5 and 9, both encodings, idle or at load 3) and 48 (seed 5, six busy loops), the
#: report's `late_answers_max`.
LATE_ANSWERS = 200
#: Any line ending in a context block's label for the current file (`# Path: src/f1.py`, `// Path: …`).
_LABEL = re.compile(r"Path: [^\n]*\n")


@dataclass
class Expect:
    """What a completion request may make the model see: the reference text before and after its cursor (as the
    engine sends it), kept as the last / first KEEP characters plus the length and hash of the whole."""

    msg_id: int
    before: str
    before_len: int
    before_hash: int
    after: str
    after_len: int
    after_hash: int
    #: Index into Fuzz.budgets of the settings in force when the request was sent.
    settings_version: int

    @classmethod
    def of(cls, msg_id: int, before: str, after: str, settings_version: int) -> "Expect":
        return cls(msg_id, before[-KEEP:], len(before), hash(before), after[:KEEP], len(after), hash(after),
                   settings_version)


def _common_tail(a: str, b: str) -> int:
    """Length of the longest common ending of `a` and `b` (binary search over C-speed comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a.endswith(b[len(b) - mid:]):
            lo = mid
        else:
            hi = mid - 1
    return lo


def prefix_fits(before: str, label_ends: list[int], expect: Expect, floor: int, block_allowed: bool) -> int | None:
    """How many characters of `expect`'s text before the cursor `before` (a model request's text before the hole)
    ends with, when what precedes them is nothing or a context block ending in the current file's label; None when
    it is not so, or when fewer than `min(text, floor)` characters were kept although the budget had room."""
    common = _common_tail(before, expect.before)
    if common == len(expect.before) and expect.before_len > len(expect.before):  # longer than kept: the whole?
        if len(before) >= expect.before_len and hash(before[len(before) - expect.before_len:]) == expect.before_hash:
            common = expect.before_len
        elif floor >= expect.before_len:
            return None  # the whole text was due and this is not it
        else:
            return common  # KEEP characters match: more than any floor short of the whole
    cut = len(before) - common  # the earliest place where the text of the document may start
    if cut == 0:
        start = 0
    else:
        index = bisect.bisect_left(label_ends, cut)
        if not block_allowed or index == len(label_ends):
            return None
        start = label_ends[index]
    kept = len(before) - start
    if kept < min(expect.before_len, floor):
        return None
    return kept


def joins(later: Expect, earlier: Expect, max_typed: int = 50) -> bool:
    """`later` continues `earlier`: the same text after the cursor, at most `max_typed` characters more before it
    (the server's typing_through_max), ending as `earlier` did before them."""
    typed = later.before_len - earlier.before_len
    if not 0 <= typed <= max_typed or later.after_len != earlier.after_len or later.after_hash != earlier.after_hash:
        return False
    head = later.before[:len(later.before) - typed]
    overlap = min(len(head), len(earlier.before))
    return head[len(head) - overlap:] == earlier.before[len(earlier.before) - overlap:]


def suffix_fits(after: str | None, expect: Expect, floor: int) -> bool:
    if after is None:
        return True
    if len(after) < min(expect.after_len, floor):
        return False
    if len(after) <= len(expect.after):
        return expect.after.startswith(after)
    if not after.startswith(expect.after):
        return False
    return len(after) < expect.after_len or (len(after) == expect.after_len and hash(after) == expect.after_hash)


#: The completion kinds the fuzz configures against the loopback, by the protocol they speak to it.
KINDS: dict[str, Any] = {
    # Every kind names each key the others set: a configuration change is merged over the initialization options.
    # The loopback is the fuzz's own server: `shared: false` keeps the cache warm-ups (whose prompts the oracle
    # checks) coming, which a llama-server Infill did not start otherwise never gets.
    "openai": lambda root: {"kind": "openai/completion", "model": "fuzz", "api_endpoint": f"{root}/v1",
                            "prompt_template": None, "shared": None},
    "completion": lambda root: {"kind": "llama.cpp/completion", "api_endpoint": root,
                                "prompt_template": FUZZ_TEMPLATE, "shared": False},
    "infill": lambda root: {"kind": "llama.cpp/infill", "api_endpoint": root, "prompt_template": None,
                            "shared": False},
}
#: Prompt budgets a configuration change may set (tokens; without a tokenizer 4 characters each). The first one keeps
#: whole documents, so the oracle then asks for the exact text before and after the cursor.
PREFIX_BUDGETS = (4_000_000, 1024, 256, 16, 2)
SUFFIX_BUDGETS = (4_000_000, 256, 16, 2)


class Fuzz:
    def __init__(self, seed: int, encoding: str, actions: int, big_size: int, workdir: Path,
                 progress: bool = False, protocols: tuple[str, ...] = tuple(KINDS), vary: bool = True):
        self.progress = progress
        self.rng = random.Random(seed)
        self.seed = seed
        self.encoding = encoding
        self.actions = actions
        self.big_size = big_size
        self.workdir = workdir
        self.docs: dict[str, Doc] = {}
        self.closed: list[str] = []
        #: The kinds (KINDS) the run switches between, and whether configuration changes also switch workspace
        #: context on and off and change the prompt budgets.
        self.protocols = protocols
        self.vary = vary
        self.protocol = self.rng.choice(protocols)
        #: Requests whose prompt the model may receive (recent ones; excluded documents never), by id.
        self.expects: dict[int, Expect] = {}
        #: (prefix, suffix) budget in characters of each configuration sent, in order; Expect.settings_version
        #: indexes it.
        self.budgets: list[tuple[int, int]] = []
        self.oracle = {"model_requests": 0, "warm_ups": 0, "with_context": 0, "after_answer": 0, "joined": 0,
                       "bad_prompts": 0, "empty_prefix": 0, "late_answers_max": 0}
        self.bad_examples: list[dict[str, Any]] = []
        self.client: Client | None = None
        self.counts: dict[str, int] = {}
        self.bad_settings = 0
        self.rss: list[int] = []
        self.uri_counter = 0
        self.excluded_uris: set[str] = set()
        #: Request id → the (line, character) the cursor really is at (positions past an end clamped).
        self.cursors: dict[int, tuple[int, int]] = {}
        #: Ids of the copilotInlineEdit requests sent (their answers hold the suggestion ids to show and accept).
        self.next_edit_requests: list[int] = []

    def count(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1

    def settings(self, endpoint: str, protocol: str | None = None, context: bool = False,
                 prefix_tokens: int = PREFIX_BUDGETS[0], suffix_tokens: int = SUFFIX_BUDGETS[0]) -> dict[str, Any]:
        root = endpoint.removesuffix("/v1")
        completion = KINDS[protocol or self.protocol](root)
        completion.update({"max_prefix_tokens": prefix_tokens, "max_suffix_tokens": suffix_tokens,
                           "http": {"read_timeout": 2.0, "max_retries": 1}})
        return {"completion": completion,
                "debounce": {"mode": "fixed", "fixed_ms": 0}, "max_tokens": 16, "request_timeout": 2.0,
                "exclude": ["**/secret_*"], "log_level": os.environ.get("INFILL_FUZZ_LOG_LEVEL", "warning"),
                "cache_size": 20,
                # Snippets of other files go above the prefix (the oracle allows a context block there).
                "context": {"enabled": context},
                # A prefetch asks for the state after an acceptance that never happens.
                "speculation": {"prefetch": False}}

    def note_settings(self, payload: Any) -> None:
        """A configuration was sent: its budgets may be in force from now on (a refused one leaves the previous)."""
        completion = payload.get("completion") if isinstance(payload, dict) else None
        last = self.budgets[-1] if self.budgets else (PREFIX_BUDGETS[0] * 4, SUFFIX_BUDGETS[0] * 4)
        if isinstance(completion, dict):
            prefix, suffix = completion.get("max_prefix_tokens"), completion.get("max_suffix_tokens")
            last = (prefix * 4 if isinstance(prefix, int) else last[0], suffix * 4 if isinstance(suffix, int)
                    else last[1])
        self.budgets.append(last)

    def floors(self, version: int) -> tuple[int, int]:
        """Characters a prompt keeps at least of the text before / after the cursor (when there are that many):
        half the smallest budget in force since the request was sent (clipping cuts at a line start within one
        eighth of the budget)."""
        budgets = self.budgets[version:] or self.budgets[-1:]
        return min(b[0] for b in budgets) // 2, min(b[1] for b in budgets) // 2

    def judge(self, call: ModelCall) -> None:
        """The oracle, for one model request as it arrives: its text before the hole is a context block (or
        nothing) followed by the end of the text before the cursor of a request still open (for a warm-up: of a
        request made before), clipped no shorter than the budget allows; the text after the hole the beginning of
        the text after that cursor."""
        self.oracle["model_requests"] += 1
        self.oracle["warm_ups"] += call.warm
        before = call.before
        label_ends = [m.end() for m in _LABEL.finditer(before)] if "Path: " in before else []
        self.oracle["with_context"] += bool(label_ends or call.extra)
        client = self.client
        answered_count = client.answered_count if client is not None else 0
        recent = list(self.expects.values())
        pending = client.pending if client is not None else {}
        if call.warm:
            candidates = recent[::-1]
        else:
            candidates = []
            for expect in reversed(recent[-400:]):
                answered = None if client is None else client.answers_by_id.get(expect.msg_id, {}).get("answered")
                if expect.msg_id in pending or (answered is not None and answered_count - answered < LATE_ANSWERS):
                    candidates.append(expect)
        if not call.unparsed:
            for expect in candidates:
                if self._fits(call, label_ends, expect):
                    if not call.warm and expect.msg_id not in pending:
                        self.oracle["after_answer"] += 1
                        lag = answered_count - (client.answers_by_id[expect.msg_id]["answered"] if client else 0)
                        self.oracle["late_answers_max"] = max(self.oracle["late_answers_max"], lag)
                    return
            if not call.warm:
                # A generation a newer request joined (it typed on from the generation's state; inflight.py) is
                # still that request's: the older one may have been answered (superseded) long ago.
                opened = [e for e in candidates if e.msg_id in pending]
                for expect in reversed(recent[-400:]):
                    if expect in candidates or not self._fits(call, label_ends, expect):
                        continue
                    if any(joins(later, expect) for later in opened):
                        self.oracle["joined"] += 1
                        return
        self.oracle["bad_prompts"] += 1
        document_part = before[label_ends[-1]:] if label_ends else before
        empty = document_part == "" and any(e.before_len for e in candidates)
        self.oracle["empty_prefix"] += empty
        if len(self.bad_examples) < 8:
            self.bad_examples.append({
                "at": time.strftime("%H:%M:%S", time.localtime()) + f"{time.time() % 1:.3f}"[1:],
                "protocol": call.protocol, "warm": call.warm, "empty_prefix": empty, "unparsed": call.unparsed,
                "before_end": before[-120:], "after_start": (call.after or "")[:60], "extra": call.extra,
                "open_candidates": len(candidates),
                "nearest": self._nearest(call, label_ends, candidates)})

    def _fits(self, call: ModelCall, label_ends: list[int], expect: Expect) -> bool:
        floor, suffix_floor = self.floors(expect.settings_version)
        if call.warm:  # a warm-up of an empty prefix would look like a completion that lost its prefix
            if not expect.before_len:
                return False
            floor = max(floor, 1)
        return prefix_fits(call.before, label_ends, expect, floor, call.protocol != "infill") is not None \
            and suffix_fits(call.after, expect, suffix_floor)

    def _nearest(self, call: ModelCall, label_ends: list[int], candidates: list[Expect]) -> list[dict[str, Any]]:
        """For a bad prompt's report: the candidates it comes closest to, and what they lack."""
        out = []
        for expect in candidates:
            kept = prefix_fits(call.before, label_ends, expect, 0, call.protocol != "infill")
            if kept is None and not suffix_fits(call.after, expect, 0):
                continue
            floor, suffix_floor = self.floors(expect.settings_version)
            out.append({"id": expect.msg_id, "before_len": expect.before_len, "after_len": expect.after_len,
                        "kept_before": kept, "floors": (floor, suffix_floor), "sent": len(call.after or ""),
                        "suffix_fits": suffix_fits(call.after, expect, 0)})
        return out[:4]

    def new_uri(self, excluded: bool = False) -> str:
        self.uri_counter += 1
        if excluded:
            name = self.rng.choice([".env", f"secret_{self.uri_counter}.py", "id_rsa", "server.pem"])
            uri = f"file://{self.workdir}/x{self.uri_counter}/{name}"
            self.excluded_uris.add(uri)
            return uri
        ext = self.rng.choice(["py", "js", "ts", "txt", "zz"])
        return f"file://{self.workdir}/src/f{self.uri_counter}.{ext}"

    # --- actions ---------------------------------------------------------------------------------------------------

    def twin_uri(self) -> str | None:
        """Another spelling of an open document's URI (a character of its name percent-encoded, as some clients
        and fuzzers write it): LSP-equivalent, but the client opens it as a document of its own."""
        names = [uri for uri in self.docs if uri not in self.excluded_uris]
        if not names:
            return None
        uri = self.rng.choice(names)
        head, _, name = uri.rpartition("/")
        i = self.rng.randrange(len(name))
        twin = f"{head}/{name[:i]}%{ord(name[i]):02X}{name[i + 1:]}" if name[i] != "%" else None
        return twin if twin is not None and twin not in self.docs else None

    def open(self, client: Client, big: bool = False, excluded: bool = False) -> None:
        reopen = self.closed and not excluded and self.rng.random() < 0.3
        twin = self.twin_uri() if not (reopen or excluded or big) and self.rng.random() < 0.1 else None
        uri = self.closed.pop() if reopen else twin or self.new_uri(excluded)
        text = big_text(self.rng, self.big_size) if big else random_text(self.rng, self.rng.randint(0, 60))
        excluded = uri in self.excluded_uris
        if excluded:
            text = f"API_KEY={CANARY}\n" + text
        language = {"py": "python", "js": "javascript", "ts": "typescript"}.get(uri.rsplit(".", 1)[-1],
                                                                               self.rng.choice(["plaintext", "zz"]))
        self.docs[uri] = Doc(text, 1, language, excluded)
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1,
                                                                 "text": text}})
        self.count("open_big" if big else "open_excluded" if excluded else "open_twin" if twin else "open")

    def edit(self, client: Client) -> None:
        uri = self.rng.choice(list(self.docs))
        doc = self.docs[uri]
        changes = []
        for _ in range(self.rng.choice([1, 1, 1, 2, 3])):
            if self.rng.random() < 0.03 and len(doc.text) < 100_000:
                new = random_text(self.rng, self.rng.randint(0, 30))
                changes.append({"text": new})
                doc.text = new
                continue
            start = random_position(self.rng, doc.text, self.encoding)
            a = offset_at(doc.text, *start, self.encoding)
            if self.rng.random() < 0.5:
                end, b = start, a  # insertion
            else:
                end = random_position(self.rng, doc.text, self.encoding)
                b = offset_at(doc.text, *end, self.encoding)
                if b < a:
                    start, end, a, b = end, start, b, a
            new = random_text(self.rng, self.rng.choice([0, 1, 1, 1, 2, 5]))
            changes.append({"range": {"start": {"line": start[0], "character": start[1]},
                                      "end": {"line": end[0], "character": end[1]}}, "text": new})
            doc.text = doc.text[:a] + new + doc.text[b:]
        doc.version += 1
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": doc.version},
                                                 "contentChanges": changes})
        self.count("edit")

    def close(self, client: Client) -> None:
        uri = self.rng.choice(list(self.docs))
        del self.docs[uri]
        self.closed.append(uri)
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        self.count("close")

    def complete(self, client: Client, cancel: bool = False) -> int:
        uri = self.rng.choice(list(self.docs))
        doc = self.docs[uri]
        line, character = random_position(self.rng, doc.text, self.encoding)
        offset = offset_at(doc.text, line, character, self.encoding)
        kind = self.rng.choice([1, 2, 2, 2])  # 1 invoked, 2 automatic
        msg_id = client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": kind}})
        self.expect(msg_id, doc, offset)
        self.cursors[msg_id] = column_of(doc.text, offset, self.encoding)
        if cancel:
            client.notify("$/cancelRequest", {"id": msg_id})
            self.count("cancel")
        self.count("complete")
        return msg_id

    def expect(self, msg_id: int, doc: Doc, offset: int) -> None:
        """Request `msg_id` at `offset` of `doc` may make the model see this text around the cursor."""
        if not doc.excluded:
            self.expects[msg_id] = Expect.of(msg_id, as_sent(doc.text[:offset]), as_sent(doc.text[offset:]),
                                             len(self.budgets) - 1)
            if len(self.expects) > 2000:
                del self.expects[next(iter(self.expects))]

    def next_edit(self, client: Client) -> None:
        """Next-edit traffic: a rename (a substitution the server may propagate), copilotInlineEdit requests for the
        current or an outdated version, an unopened document or params that do not fit (some cancelled), and
        didShowInlineEdit, didFocus and the accept command, as a request and as a notification, for ids the server
        gave or made up."""
        uri = self.rng.choice(list(self.docs))
        doc = self.docs[uri]
        roll = self.rng.random()
        words = [m for m in re.finditer(r"[A-Za-z_]\w*", doc.text)] if roll < 0.2 else []
        if words:  # rename one word: the newest edit is a substitution
            match = self.rng.choice(words)
            start, end = column_of(doc.text, match.start(), self.encoding), column_of(doc.text, match.end(),
                                                                                       self.encoding)
            new = self.rng.choice(["renamed", "total", "x2", "value_b"])
            doc.text = doc.text[:match.start()] + new + doc.text[match.end():]
            doc.version += 1
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": doc.version},
                                                     "contentChanges": [{"range": {
                                                         "start": {"line": start[0], "character": start[1]},
                                                         "end": {"line": end[0], "character": end[1]}},
                                                         "text": new}]})
            self.count("next_edit_rename")
        elif roll < 0.7:
            line, character = random_position(self.rng, doc.text, self.encoding)
            version = doc.version if self.rng.random() < 0.8 else doc.version - 1
            target = uri if self.rng.random() < 0.95 else self.new_uri()  # sometimes a document that is not open
            params: dict[str, Any] = {"textDocument": {"uri": target, "version": version},
                                      "position": {"line": line, "character": character}}
            if self.rng.random() < 0.5:  # sidekick's shape; copilot-lsp sends none
                params["context"] = {"triggerKind": self.rng.choice([1, 2])}
            if self.rng.random() < 0.05:
                params = self.rng.choice([{"textDocument": {"uri": uri}, "position": params["position"]}, {}, None])
            msg_id = client.request("textDocument/copilotInlineEdit", params)
            self.next_edit_requests.append(msg_id)
            if self.rng.random() < 0.1:
                client.notify("$/cancelRequest", {"id": msg_id})
                self.count("next_edit_cancel")
            self.count("next_edit_request")
        else:
            ids = ["999999"]
            for msg_id in self.next_edit_requests[-20:]:
                result = client.answers_by_id.get(msg_id, {}).get("answer", {}).get("result") or {}
                for item in result.get("edits", []) if isinstance(result, dict) else []:
                    ids.extend(item.get("command", {}).get("arguments", []))
            command = {"command": "infill.acceptInlineEdit", "arguments": [self.rng.choice(ids)]}
            if roll < 0.8:
                client.notify("textDocument/didShowInlineEdit", {"item": {"command": command}})
            elif roll < 0.88:
                client.request("workspace/executeCommand", command)
            elif roll < 0.95:
                client.notify("workspace/executeCommand", command)  # copilot.el's form
            else:
                client.notify("textDocument/didFocus", {"textDocument": {"uri": uri}})
            self.count("next_edit_notification")

    def change_settings(self, client: Client, endpoint: str) -> None:
        if self.rng.random() < 0.35:
            name, bad = self.rng.choice(BAD_SETTINGS)
            payload = merge(client.settings, bad) if isinstance(bad, dict) else bad
            self.bad_settings += 1
            self.count("bad_setting")
        else:
            if self.vary:
                self.protocol = self.rng.choice(self.protocols)
                base = self.settings(endpoint, context=self.rng.random() < 0.6,
                                     prefix_tokens=self.rng.choice(PREFIX_BUDGETS),
                                     suffix_tokens=self.rng.choice(SUFFIX_BUDGETS))
            else:
                base = self.settings(endpoint)
            payload = merge(base, {
                "max_tokens": self.rng.choice([8, 16, 32]), "invoked_choices": self.rng.choice([1, 2, 3]),
                "multiline": self.rng.choice(["auto", "always", "never"]),
                "cache_size": self.rng.choice([0, 5, 20]),
                "completion": {"model": self.rng.choice(["fuzz", "fuzz-b"]),  # a new model: a new engine
                               "additional_stop_words": self.rng.choice([[], ["\n\n"]])}})
            if self.rng.random() < 0.3:
                payload["debounce"] = {"mode": "adaptive", "min_ms": 0, "max_ms": 20}
            client.settings = payload
            self.count("setting")
        self.note_settings(payload)
        if self.rng.random() < 0.2 and payload is client.settings:
            client.notify("workspace/didChangeConfiguration", {"settings": None})  # the server pulls them
        else:
            client.notify("workspace/didChangeConfiguration", {"settings": {"infill": payload}})

    def storm(self, client: Client) -> None:
        """Many requests and cancels within a millisecond over several documents, some after an edit: what an
        editor sends when the user types fast in split views (and what supersession and joining must survive)."""
        for _ in range(self.rng.randint(5, 30)):
            if not self.docs:
                break
            if self.rng.random() < 0.4:
                self.edit(client)
            msg_id = self.complete(client, cancel=self.rng.random() < 0.3)
            if self.rng.random() < 0.1:  # cancelled later in the storm
                client.notify("$/cancelRequest", {"id": msg_id - self.rng.randint(0, 3)})
        self.count("storm")

    def malformed(self, client: Client) -> None:
        uri = self.rng.choice(list(self.docs)) if self.docs else "file:///nowhere.py"
        choice = self.rng.randrange(14)
        position = {"line": 0, "character": 0}
        if choice == 0:
            client.raw(b"{not json")
        elif choice == 1:
            client.raw(self.rng.choice([b"[]", b"[1, 2]", b"42", b'"text"', b"null", b"{}"]))
        elif choice == 2:  # no context
            client.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": position})
        elif choice == 3:
            client.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                                                             "position": {"line": -1, "character": 0},
                                                             "context": {"triggerKind": 1}})
        elif choice == 4:
            client.request("textDocument/hover", {"textDocument": {"uri": uri}})
        elif choice == 5:
            client.request("infill/stats", omit_params=True)
        elif choice == 6:  # no "jsonrpc"
            client.next_id += 1
            client.pending[client.next_id] = {"method": "infill/stats", "expect": "error"}
            client.send({"id": client.next_id, "method": "infill/stats"})
        elif choice == 7:
            client.request("no/such/method", {})
        elif choice == 8:
            client.notify("no/such/notification", {"x": 1})
        elif choice == 9:  # an edit with an invalid position: the whole notification is rejected
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 99}, "contentChanges": [
                {"range": {"start": {"line": -1, "character": 0}, "end": position}, "text": "DROPPED"}]})
        elif choice == 10:  # valid: the character clamps to the end of the line, and the model is asked there
            msg_id = client.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                                                                      "position": {"line": 0, "character": 2 ** 40},
                                                                      "context": {"triggerKind": 1}})
            if uri in self.docs:
                doc = self.docs[uri]
                self.expect(msg_id, doc, offset_at(doc.text, 0, 2 ** 40, self.encoding))
        elif choice == 11:
            client.request("textDocument/inlineCompletion", None)
        elif choice == 12:  # an edit of a document that is not open
            client.notify("textDocument/didChange", {"textDocument": {"uri": self.new_uri(), "version": 2},
                                                     "contentChanges": [{"range": {"start": position,
                                                                                   "end": position}, "text": "x"}]})
        else:
            client.notify("$/cancelRequest", {"id": 10 ** 9})
        self.count("malformed")

    # --- the run -----------------------------------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        backend = Backend(random.Random(self.seed * 7919), on_call=self.judge)
        endpoint = await backend.start()
        server = ServerProcess()
        try:
            proc = await server.start()
            return await self._drive(proc, backend, endpoint, server)
        finally:
            await server.stop()
            await backend.close()

    async def _drive(self, proc: asyncio.subprocess.Process, backend: Backend, endpoint: str,
                     server: ServerProcess) -> dict[str, Any]:
        started = time.monotonic()
        client = self.client = Client(proc, self.settings(endpoint))
        self.note_settings(client.settings)
        await initialize(client, self.encoding)
        self.open(client)
        for step in range(self.actions):
            roll = self.rng.random()
            if not self.docs or roll < 0.06:
                self.open(client, big=self.rng.random() < 0.02, excluded=self.rng.random() < 0.15)
            elif roll < 0.45:
                self.edit(client)
            elif roll < 0.50:
                self.close(client)
            elif roll < 0.76:
                self.complete(client, cancel=self.rng.random() < 0.1)
            elif roll < 0.80:
                self.next_edit(client)
            elif roll < 0.84:  # a burst of typing with automatic requests
                for _ in range(self.rng.randint(3, 12)):
                    if not self.docs:
                        break
                    self.edit(client)
                    self.complete(client)
                self.count("burst")
            elif roll < 0.86:
                self.storm(client)
            elif roll < 0.885:
                self.change_settings(client, endpoint)
            elif roll < 0.89:  # the user pauses: the server's once-a-second work (context, warm-up) runs idle
                await client.drain()
                await asyncio.sleep(1.2)
                self.count("pause")
            else:
                self.malformed(client)
            await client.drain()
            if step % 25 == 0:
                await asyncio.sleep(0.01)  # let answers flow, as an editor between keystrokes
            if len(client.pending) > 64:  # an editor does not queue hundreds of requests: wait for some answers
                end = time.monotonic() + 30
                while len(client.pending) > 16 and time.monotonic() < end:
                    await asyncio.sleep(0.01)
            if step % 200 == 0:
                self.rss.append(rss_kb(proc.pid))
            if self.progress and step % 1000 == 999:
                print(f"  seed {self.seed} {self.encoding}: {step + 1} actions, {client.next_id} requests, "
                      f"{len(backend.calls)} model calls, {time.monotonic() - started:.0f} s", file=sys.stderr,
                      flush=True)
        # Every request answered: wait for the stragglers (a generous safety net; none should need it).
        end = time.monotonic() + 60
        while client.pending and time.monotonic() < end:
            await asyncio.sleep(0.02)
        unanswered = dict(client.pending)
        self.rss.append(rss_kb(proc.pid))
        # Every answer sent: every generation must end (the server closes its streams); count, with a safety net.
        end = time.monotonic() + 10
        while backend.open_streams and time.monotonic() < end:
            await asyncio.sleep(0.02)
        streams_open, streams_open_modes = backend.open_streams, list(backend.open_modes)
        stats_id = client.request("infill/stats", {})
        stats = (await client.wait_answered(stats_id)).get("answer", {}).get("result", {})
        kids = children(proc.pid)
        shutdown = client.request("shutdown", None)
        await client.wait_answered(shutdown)
        after = client.request("infill/stats", {})
        after_answer = (await client.wait_answered(after)).get("answer", {})
        client.notify("exit", None)
        await client.drain()
        try:
            code = await asyncio.wait_for(proc.wait(), 30)
        except asyncio.TimeoutError:
            code = None
        await client.stop_reading()
        await asyncio.sleep(0.2)
        left = [pid for pid in kids if Path(f"/proc/{pid}").exists()]
        misplaced = items = 0  # items whose range does not start at the (clamped) cursor
        for msg_id, cursor in self.cursors.items():
            result = client.answers_by_id.get(msg_id, {}).get("answer", {}).get("result") or {}
            for item in result.get("items", []) if isinstance(result, dict) else []:
                start = item.get("range", {}).get("start", {})
                misplaced += (start.get("line"), start.get("character")) != cursor
                items += 1
                errors = client.error_messages
        outages = [m for m in errors if not INJECTED.search(m)]
        stderr = server.log_text()
        duplicated = sum(1 for n in client.answers.values() if n > 1)
        report = {
            "seed": self.seed, "encoding": self.encoding, "actions": self.actions, "counts": self.counts,
            "requests": client.next_id, "unanswered": len(unanswered),
            "unanswered_methods": sorted({e["method"] for e in unanswered.values()}),
            "answered_twice": duplicated, "answers_to_unknown_ids": client.unknown_answers,
            "error_codes": {str(k): v for k, v in sorted(client.errors.items())},
            "internal_errors": client.errors.get(INTERNAL_ERROR, 0),
            "backend_calls": len(backend.calls), "backend_modes": backend.modes,
            "protocols": backend.protocols, **self.oracle, "bad_prompt_examples": self.bad_examples,
            "suffix_sent": sum(1 for _, s in backend.calls if s is not None),
            "excluded_text_sent": backend.bodies_with_canary, "invalid_utf8_bodies": backend.bad_requests,
            "server_probes": backend.probes,
            "bad_settings": self.bad_settings, "outages": len(outages), "outage_examples": outages[:3],
            "items": items, "items_misplaced": misplaced,
            "show_message_popups": len(client.show_messages),
            "popups_not_about_settings": [m for m in client.show_messages if "configuration" not in m][:3],
            "streams_open_at_end": streams_open, "open_stream_modes": streams_open_modes,
            "max_open_streams": backend.max_open_streams,
            "rss_mb_first": round(self.rss[0] / 1024, 1) if self.rss else None,
            "rss_mb_max": round(max(self.rss) / 1024, 1) if self.rss else None,
            "rss_mb_end": round(self.rss[-1] / 1024, 1) if self.rss else None,
            "server_documents_at_end": stats.get("documents"), "reference_documents_at_end": len(self.docs),
            "protocol_futures_at_end": stats.get("protocol_futures"),
            "after_shutdown_error": (after_answer.get("error") or {}).get("code"),
            "exit_code": code, "children_left": left,
            "tracebacks_in_log": stderr.count("Traceback"),
            "seconds": round(time.monotonic() - started, 1), "server_log": str(server.home),
        }
        return report


# ---------------------------------------------------------------------------------------------------------------------
# Checks and the command line


def problems(report: dict[str, Any], rss_limit_mb: float) -> list[str]:
    """What went wrong in one run (empty: the run passed)."""
    out = []
    for key in ("unanswered", "answered_twice", "answers_to_unknown_ids", "internal_errors", "bad_prompts",
                "excluded_text_sent", "invalid_utf8_bodies", "outages", "streams_open_at_end", "tracebacks_in_log",
                "items_misplaced"):
        if report[key]:
            out.append(f"{key}: {report[key]}")
    if report["popups_not_about_settings"]:
        out.append(f"popups: {report['popups_not_about_settings']}")
    if report["show_message_popups"] > report["bad_settings"]:
        out.append(f"{report['show_message_popups']} popups for {report['bad_settings']} bad settings")
    if report["server_documents_at_end"] != report["reference_documents_at_end"]:
        out.append(f"documents: server {report['server_documents_at_end']}, "
                   f"reference {report['reference_documents_at_end']}")
    if report["after_shutdown_error"] != -32600:
        out.append(f"a request after shutdown got {report['after_shutdown_error']}, not -32600")
    if report["exit_code"] != 0:
        out.append(f"exit code {report['exit_code']}")
    if report["children_left"]:
        out.append(f"children left: {report['children_left']}")
    if report["rss_mb_max"] is not None and report["rss_mb_max"] > rss_limit_mb:
        out.append(f"RSS {report['rss_mb_max']} MB > {rss_limit_mb} MB")
    return out


def run_one(seed: int, encoding: str, actions: int, big_size: int, protocols: tuple[str, ...] = tuple(KINDS),
            vary: bool = True) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="infill-fuzz-docs-"))
    return asyncio.run(Fuzz(seed, encoding, actions, big_size, workdir, progress=True, protocols=protocols,
                            vary=vary).run())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--actions", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--encodings", nargs="+", default=["utf-16", "utf-8"], choices=["utf-16", "utf-8"])
    parser.add_argument("--big-size", type=int, default=2_000_000, help="size of the big documents (characters)")
    parser.add_argument("--protocols", nargs="+", default=list(KINDS), choices=list(KINDS),
                        help="completion kinds to configure against the loopback: openai (openai/completion), "
                             "completion (llama.cpp/completion with a FIM template), infill (llama.cpp/infill)")
    parser.add_argument("--no-vary", dest="vary", action="store_false",
                        help="configuration changes keep whole-document budgets and workspace context off")
    parser.add_argument("--rss-limit-mb", type=float, default=400.0)
    parser.add_argument("--output", type=Path, default=RESULTS / "lsp_fuzz.json")
    parser.add_argument("--check", action="store_true", help="exit 1 when a run found a problem")
    return parser


COLUMNS = [("seed", "seed"), ("enc", "encoding"), ("actions", "actions"), ("requests", "requests"),
           ("model requests", "model_requests"), ("warm-ups", "warm_ups"), ("with context", "with_context"),
           ("bad prefix", "bad_prompts"), ("empty prefix", "empty_prefix"), ("unanswered", "unanswered"),
           ("-32603", "internal_errors"), ("excluded sent", "excluded_text_sent"),
           ("bad settings", "bad_settings"), ("outages", "outages"), ("popups", "show_message_popups"),
           ("RSS max MB", "rss_mb_max"), ("RSS end MB", "rss_mb_end"), ("exit", "exit_code"), ("s", "seconds")]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    reports = []
    for seed in args.seeds:
        for encoding in args.encodings:
            report = run_one(seed, encoding, args.actions, args.big_size, tuple(args.protocols), args.vary)
            report["problems"] = problems(report, args.rss_limit_mb)
            reports.append(report)
            print(json.dumps({k: report[k] for _, k in COLUMNS} | {"problems": report["problems"]}), flush=True)
    print()
    print(" | ".join(title for title, _ in COLUMNS) + " | problems")
    for report in reports:
        print(" | ".join(str(report[key]) for _, key in COLUMNS) + f" | {len(report['problems'])}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"machine": {"loadavg": os.getloadavg(), "cpus": os.cpu_count()},
                                       "runs": reports}, indent=1, ensure_ascii=True))
    print(f"\nwritten {args.output}")
    return 1 if args.check and any(r["problems"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
