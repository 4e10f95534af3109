"""A scripted next-edit model on the loopback: speaks llama-server's `/completion` (SSE, `stop: true` last) and
the OpenAI chat shape (`/v1/chat/completions`, `[DONE]` last), and answers every prompt with the TRUE rewrite of
the editable window it finds in that prompt, in the answer shape of the prompt's form (engine/next_edit/formats.toml).

Why: with a model that is always right, every task the pipeline still gets wrong is lost by the pipeline itself
(history, window, prompt, parsing, diff, discard rules) — the losses the benchmark exists to show.

How it knows the truth: before each request the harness tells it the document's current text and the text after the
true next edit (`expect`). It parses the window out of the prompt as the prompt format writes it (sweep's
`current/` block, zeta2's CURRENT region, the instruction form's <current> block), finds that window in the
current text and returns the window with the true change applied when the change lies inside it, else the window
unchanged (what a perfect model can see). The window not being found in the document is counted (`unparsed`):
it means the prompt shows the model something other than the document."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from engine.next_edit.diff import changed_span

#: Markers around the cursor that some forms put inside the window (removed before the window is looked up).
CURSOR_MARKERS = ("<|user_cursor|>", "<|user_cursor_is_here|>", "<|cursor|>")


@dataclass(frozen=True)
class Form:
    """How one prompt form shows the editable window and how the model answers."""

    window: re.Pattern[str]                   # group 1: the window as the prompt shows it (last match is used)
    answer: Callable[[str, bool], str]        # (rewritten window, changed?) -> the model's output text


def _sweep_answer(rewritten: str, changed: bool) -> str:
    return rewritten


def _zeta2_answer(rewritten: str, changed: bool) -> str:
    return f"{rewritten}>>>>>>> UPDATED\n" if changed else "NO_EDITS\n"


def _instruction_answer(rewritten: str, changed: bool) -> str:
    return f"<updated>\n{rewritten}</updated>\n"


FORMS: dict[str, Form] = {
    "sweep": Form(re.compile(r"<\|file_sep\|>current/[^\n]*\n(.*?)<\|file_sep\|>updated/", re.S), _sweep_answer),
    "zeta2": Form(re.compile(r"<<<<<<< CURRENT\n(.*?)^=======\n", re.S | re.M), _zeta2_answer),
    "instruction": Form(re.compile(r"<current>\n(.*?)^</current>\n", re.S | re.M), _instruction_answer),
}


def locate(window: str, current: str, cursor: int) -> int | None:
    """Where `window` starts in `current` (the occurrence nearest the cursor), or None."""
    starts = [m.start() for m in re.finditer(re.escape(window), current)] if window else []
    if not starts:
        return None
    return min(starts, key=lambda s: abs(s - cursor))


def true_rewrite(window: str, current: str, expected: str | None, cursor: int) -> tuple[str, bool] | None:
    """The window after the true next edit (unchanged when that edit is outside it or there is none);
    None when the window is not in the document."""
    variants = [window, window.rstrip("\n") + "\n", window.rstrip("\n")]
    for variant in variants:
        start = locate(variant, current, cursor)
        if start is None:
            continue
        if expected is None:
            return window, False
        a, b, text = changed_span(current, expected)
        end = start + len(variant)
        if start <= a and b <= end:
            rewritten = variant[:a - start] + text + variant[b - start:]
            # keep the prompt's own ending (with or without the final newline)
            if variant != window:
                rewritten = rewritten.rstrip("\n") + window[len(window.rstrip("\n")):]
            return rewritten, True
        return window, False
    return None


@dataclass
class Expectation:
    current: str
    expected: str | None
    cursor: int


@dataclass
class ScriptedModel:
    """The loopback server. `expect()` before each request; `prompts` keeps what it was sent (the last few)."""

    form: str
    expectation: Expectation | None = None
    requests: int = 0
    unparsed: int = 0
    #: What the last request saw: "rewrite" (the true change is in the window), "outside window", "no next edit",
    #: "unparsed" (no window in the prompt, or one the document does not contain).
    last: str = ""
    prompts: list[str] = field(default_factory=list)
    server: asyncio.base_events.Server | None = None
    port: int = 0

    def expect(self, current: str, expected: str | None, cursor: int) -> None:
        self.expectation = Expectation(current, expected, cursor)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> "ScriptedModel":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    def answer(self, prompt: str) -> str:
        """The model's output for `prompt` (for the forms that take a raw prompt and for chat alike)."""
        self.requests += 1
        self.prompts = (self.prompts + [prompt])[-5:]
        form = FORMS[self.form]
        matches = form.window.findall(prompt)
        if not matches or self.expectation is None:
            self.unparsed += 1
            self.last = "unparsed"
            return ""
        window = matches[-1]
        for marker in CURSOR_MARKERS:
            window = window.replace(marker, "")
        e = self.expectation
        result = true_rewrite(window, e.current, e.expected, e.cursor)
        if result is None:
            self.unparsed += 1
            self.last = "unparsed"
            return form.answer(window, False)
        self.last = "rewrite" if result[1] else ("no next edit" if e.expected is None else "outside window")
        return form.answer(*result)

    # -- HTTP ---------------------------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, v in
                           (line.split(":", 1) for line in lines[1:] if ":" in line)}
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                status, content_type, payload = self._route(method, path.split("?")[0], body)
                writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
                             f"Content-Length: {len(payload)}\r\nConnection: keep-alive\r\n\r\n".encode() + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    def _route(self, method: str, path: str, body: bytes) -> tuple[str, str, bytes]:
        data: dict[str, Any] = json.loads(body) if body else {}
        if method == "POST" and path == "/completion":
            text = self.answer(str(data.get("prompt", "")))
            events = [{"content": text, "stop": False, "tokens_predicted": 1},
                      {"content": "", "stop": True, "stop_type": "eos", "tokens_predicted": max(1, len(text) // 4),
                       "tokens_evaluated": len(str(data.get("prompt", ""))) // 4,
                       "timings": {"prompt_n": 1, "predicted_n": 1, "cache_n": 0}}]
            return "200 OK", "text/event-stream", b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
        if method == "POST" and path in ("/v1/chat/completions", "/chat/completions"):
            messages = data.get("messages") or []
            prompt = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
            text = self.answer(prompt)
            chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                    "finish_reason": None}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
            payload = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
            return "200 OK", "text/event-stream", payload
        if path == "/tokenize":
            content = str(data.get("content", ""))
            return "200 OK", "application/json", json.dumps({"tokens": list(range(len(content) // 4))}).encode()
        if path in ("/health", "/v1/health"):
            return "200 OK", "application/json", b'{"status":"ok"}'
        if path == "/props":
            return "200 OK", "application/json", json.dumps(
                {"model_path": "scripted-model.gguf", "default_generation_settings": {"n_ctx": 8192}}).encode()
        if path in ("/v1/models", "/models"):
            return "200 OK", "application/json", json.dumps(
                {"data": [{"id": "scripted-model", "object": "model"}]}).encode()
        return "404 Not Found", "application/json", b'{"error":"not found"}'
