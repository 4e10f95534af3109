"""llama-server's HTTP API: `/completion`, `/infill`, `/v1/chat/completions`, `/embedding(s)`, `/tokenize`, `/props`.

Used for Infill's own supervised llama-server and for a user's llama-server (the `llama.cpp/*` kinds).

Why no server-side stop words: stops are matched client-side by the streaming stop condition, which also avoids a
llama-server quirk (a streamed text hitting `n_predict` while ending with the start of a stop string loses that tail).
Why `/completion` rather than `/v1/completions`: it reports `timings` (prompt/cached/generated tokens, speeds) and
`stop_type`, which the latency figures and the "hit the token limit" decision need.

Every class resolves its base URL per request through `base_url()`, so the local backend can point the same objects
at a restarted server (which may have had to take another port) and wait for it while it restarts."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING, Any, AsyncGenerator, AsyncIterator

import httpx

from ..config import HttpSettings
from ..errors import BackendError, SpeculationHeld
from ..types import ChatChunk, ChatRequest, CompletionOptions, GenerationStats, Prompt, TokenLogprob
from . import http as http_util

if TYPE_CHECKING:  # only Infill's own server has a router; a remote backend never loads engine.local
    from ..local.slots import SlotRouter
    from .shared_server import SharedServerGate

VENDOR = "llama.cpp"
#: The seed of speculative requests (prefetch, cache warm-ups): llama-server shows each busy slot's `params.seed` on
#: `/slots`, so whoever runs a shared server (and bench/replay/multi_user.py) can tell guesses from user requests.
SPECULATIVE_SEED = 23532
#: llama.cpp's embedding models misbehave (or fail) on inputs this short, so they are padded.
MIN_EMBEDDING_TOKENS = 4
EMBEDDING_PAD = " ."


class LlamaCppHttp(http_util.HttpBackend):
    """The llama-server flavour of the HTTP base: its vendor name and what its 404 and 501 mean."""

    def __init__(self, endpoint: str, *, http: HttpSettings = HttpSettings(), api_key: str | None = None,
                 client: httpx.AsyncClient | None = None):
        super().__init__(VENDOR, endpoint, http, api_key, client)

    async def check_response(self, response: httpx.Response, path: str) -> None:
        await _check_status(response, path)


async def _check_status(response: httpx.Response, path: str) -> None:
    if response.status_code == 501:
        body = await response.aread()
        raise BackendError(VENDOR, f"{path} is not supported by this server or model", 501, body)
    if response.status_code == 404:
        body = await response.aread()
        raise BackendError(VENDOR, f"{path} was not found on this server (is it llama-server?)", 404, body)
    await http_util.check_status(response, VENDOR)


# ---------------------------------------------------------------------------------------------------------------------
# Completion


def completion_body(prompt: Prompt, options: CompletionOptions, use_infill: bool) -> dict[str, Any]:
    """The request body for `/infill` (prefix/suffix; the server adds the model's FIM tokens) or `/completion`."""
    body: dict[str, Any]
    if use_infill:
        body = {"input_prefix": prompt.prefix, "input_suffix": prompt.suffix or ""}
        if prompt.context:  # the server builds the model's repo-level form (FIM_REP/FIM_SEP) or separates chunks
            body["input_extra"] = [{"filename": s.filename, "text": s.text} for s in prompt.context]
    else:
        body = {"prompt": prompt.text}
    body.update({
        "n_predict": options.max_decoding_tokens,
        "temperature": options.sampling_temperature,
        "seed": options.seed,
        "presence_penalty": options.presence_penalty,
        "cache_prompt": True,
        "stream": True,
    })
    if options.time_budget_ms:  # 0 (one line) is cut client-side: llama-server would stop after its first newline
        body["t_max_predict_ms"] = options.time_budget_ms  # counted from the first token; ends at a line break
    if options.slot is not None:
        body["id_slot"] = options.slot
    if options.speculative:
        body["seed"] = SPECULATIVE_SEED
    if options.logprobs:
        body["n_probs"] = 1  # each event's `completion_probabilities` then has the token and its log-probability
    return body


@contextlib.asynccontextmanager
async def _yielding(gate: SharedServerGate, what: str) -> AsyncIterator[None]:
    """Runs the body as a guess on a shared server: counted as this client's, watched, and cancelled when someone
    needs its slot (raised as SpeculationHeld, so callers see why it ended). The caller has admitted it."""
    task = asyncio.current_task()
    yielded: list[str] = []

    def on_yield(why: str) -> None:
        yielded.append(why)
        if task is not None:
            task.cancel()

    gate.running += 1
    watcher = asyncio.ensure_future(gate.watch(on_yield))
    try:
        yield
    except asyncio.CancelledError:
        if not yielded:
            raise
        uncancel = getattr(task, "uncancel", None)  # Python 3.11+: this cancel was ours, not the caller's
        if uncancel is not None:
            uncancel()
        raise SpeculationHeld(VENDOR, f"{what} yielded its slot: {yielded[0]}", yielded=True) from None
    finally:
        gate.running -= 1
        watcher.cancel()


def routing_key(prompt: Prompt, use_infill: bool) -> str:
    """The text a slot's cache is matched on: the prompt, or for `/infill` its context and prefix (the order in
    which llama-server puts them before the suffix)."""
    if not use_infill:
        return prompt.text
    return "".join(f"{s.filename}\n{s.text}\n" for s in prompt.context) + prompt.prefix


def fill_stats(stats: GenerationStats | None, event: dict) -> None:
    """Copy the last event's token counts and timings into `stats`."""
    if stats is None:
        return
    note_progress(stats, event)
    timings = event.get("timings")
    if isinstance(timings, dict):
        stats.timings = dict(timings)
        cached = timings.get("cache_n")
        if isinstance(cached, int):
            stats.cached_prompt_tokens = cached
        if isinstance(timings.get("predicted_n"), int):
            stats.generated_tokens = timings["predicted_n"]
        if isinstance(timings.get("prompt_n"), int):
            stats.prompt_tokens = timings["prompt_n"] + (cached if isinstance(cached, int) else 0)
    if isinstance(event.get("tokens_evaluated"), int):
        stats.prompt_tokens = event["tokens_evaluated"]
    if event.get("stop_type") == "limit" or (event.get("stop_type") is None and event.get("stopped_limit")):
        stats.hit_token_limit = True


def note_progress(stats: GenerationStats | None, event: dict) -> None:
    """Token counts so far, from every event: a consumer that stops at a stop word never sees the last event."""
    if stats is None:
        return
    if isinstance(event.get("tokens_predicted"), int):
        stats.generated_tokens = event["tokens_predicted"]
    if isinstance(event.get("tokens_evaluated"), int):
        stats.prompt_tokens = event["tokens_evaluated"]


def note_logprobs(stats: GenerationStats | None, event: dict) -> None:
    """The tokens of an event and their log-probabilities (`n_probs`), when it has them and they are well formed."""
    probs = event.get("completion_probabilities")
    if stats is None or not isinstance(probs, list):
        return
    for item in probs:
        if isinstance(item, dict) and isinstance(item.get("token"), str) \
                and isinstance(item.get("logprob"), (int, float)) and not isinstance(item.get("logprob"), bool):
            stats.add_token(TokenLogprob(item["token"], float(item["logprob"])))


def event_text(event: dict, path: str) -> str:
    content = event.get("content", "")
    if content is None:
        return ""
    if not isinstance(content, str):
        raise BackendError(VENDOR, f"{path}: malformed event: `content` is not text", None, json.dumps(event)[:200])
    return content


class LlamaCppCompletion(LlamaCppHttp):
    """A completion stream over llama-server. `use_infill=True`: `/infill` with the model's own FIM tokens
    (`native_fim`); otherwise `/completion` with the already templated prompt."""

    def __init__(self, endpoint: str, *, use_infill: bool = False, http: HttpSettings = HttpSettings(),
                 api_key: str | None = None, client: httpx.AsyncClient | None = None, shared: bool = False):
        super().__init__(endpoint, http=http, api_key=api_key, client=client)
        self.use_infill = use_infill
        self.native_fim = use_infill
        #: `/infill` takes other files' snippets as `input_extra`, not in the prompt text.
        self.native_context = use_infill
        #: A server others may use too (a user's llama-server): speculative work asks it first and yields.
        self.gate: SharedServerGate | None = None
        #: The cache-matched part of the last prompt sent (`routing_key`): what a slot most likely still holds.
        self._last_sent: str | None = None
        if shared:
            from .shared_server import SharedServerGate

            self.gate = SharedServerGate(lambda: self.client, self.base_url, self.auth_headers)

    async def check_response(self, response: httpx.Response, path: str) -> None:
        if self.gate is not None:
            self.gate.note_status(response.status_code,
                                  http_util.parse_retry_after(response.headers.get("retry-after")))
        await super().check_response(response, path)

    #: Infill's own server pins each request to a slot (`engine.local.slots`); None: llama-server chooses.
    router: SlotRouter | None = None

    @property
    def path(self) -> str:
        return "/infill" if self.use_infill else "/completion"

    def _pin(self, body: dict[str, Any], prompt: Prompt, options: CompletionOptions) -> int | None:
        """Choose the request's slot (sets `id_slot`) and mark it busy; the caller ends it. None: not pinned."""
        if self.router is None:
            return None
        key = routing_key(prompt, self.use_infill)
        slot = options.slot if options.slot is not None else self.router.choose(key, options.speculative)
        body["id_slot"] = slot
        self.router.begin(slot, key)
        return slot

    async def generate(self, prompt: Prompt, options: CompletionOptions,
                       stats: GenerationStats | None = None) -> AsyncGenerator[str, None]:
        if options.speculative and self.gate is not None:
            async with contextlib.aclosing(self._generate_yielding(prompt, options, stats, self.gate)) as pieces:
                async for piece in pieces:
                    yield piece
            return
        if self.gate is not None:  # a user's request: the gate must not take it for another client's
            self.gate.own_requests += 1
        try:
            async with contextlib.aclosing(self._generate(prompt, options, stats)) as pieces:
                async for piece in pieces:
                    yield piece
        finally:
            if self.gate is not None:
                self.gate.own_requests -= 1

    async def _generate_yielding(self, prompt: Prompt, options: CompletionOptions, stats: GenerationStats | None,
                                 gate: SharedServerGate) -> AsyncGenerator[str, None]:
        """A speculative generation on a shared server: sent only when the gate admits it, cancelled when someone
        needs its slot (raised as SpeculationHeld, so callers see why it ended)."""
        from .shared_server import new_chars

        reason = await gate.admit(new_chars(routing_key(prompt, self.use_infill), self._last_sent))
        if reason is not None:
            raise SpeculationHeld(VENDOR, f"speculative request held: {reason}")
        async with _yielding(gate, "speculative request"):
            async with contextlib.aclosing(self._generate(prompt, options, stats)) as pieces:
                async for piece in pieces:
                    yield piece

    async def _generate(self, prompt: Prompt, options: CompletionOptions,
                        stats: GenerationStats | None = None) -> AsyncGenerator[str, None]:
        path = self.path
        body = completion_body(prompt, options, self.use_infill)
        slot = self._pin(body, prompt, options)
        if self.gate is not None:  # only the gate's prefill rule reads it
            self._last_sent = routing_key(prompt, self.use_infill)
        try:
            events = self.stream_json(path, body, end_key="stop")
            async with contextlib.aclosing(events):
                async for event in events:
                    last = event.get("stop") is True
                    (fill_stats if last else note_progress)(stats, event)
                    if options.logprobs:
                        note_logprobs(stats, event)
                    text = event_text(event, path)
                    if text:
                        yield text
                    if last:
                        return
        finally:
            if slot is not None and self.router is not None:
                self.router.end(slot)

    async def warm(self, prompt: Prompt) -> None:
        """Prefill `prompt` into a slot's KV cache (`n_predict: 0`, as llama.vim does when idle).

        Not to a server other clients may use (`completion.shared` not false): a whole prompt's prefill is one batch
        that llama-server finishes before it notices a closed connection (seconds on a CPU), and a request queued in
        a slot frees it only after the server's current batch, so a warm-up cannot step aside when a user needs its
        slot. The multi-user benchmark counted 68 and 72 samples of a request deferred behind a guess at N = 4 with
        warm-ups sent while other clients used the server, and 77 and 79 at N = 8 with warm-ups sent as the editors
        started together, before any look could have seen the others."""
        if self.gate is not None:
            raise SpeculationHeld(VENDOR, "cache warm-up not sent: the server may serve other clients (set "
                                          "completion.shared = false if it is this editor's alone), and a prefill "
                                          "cannot step aside")
        options = CompletionOptions(max_decoding_tokens=1, seed=0)
        body = completion_body(prompt, options, self.use_infill)
        # a guess too (marked as one), but routed as the user's request: it fills the cache the next one reuses
        body.update(n_predict=0, stream=False, seed=SPECULATIVE_SEED)
        slot = self._pin(body, prompt, options)
        try:
            await self.post_json(self.path, body)
        finally:
            if slot is not None and self.router is not None:
                self.router.end(slot)

    async def generate_choices(self, prompt: Prompt, options: CompletionOptions, count: int,
                               stats: GenerationStats | None = None) -> list[str]:
        """`count` completions from one prefill (`n_cmpl`: the prompt is processed once and copied to `count`
        slots), instead of `count` requests that each process it. Not streamed: the choices come together."""
        body = completion_body(prompt, options, self.use_infill)
        body.update({"stream": False, "n_cmpl": count})
        reply = await self.post_json(self.path, body)
        results = reply if isinstance(reply, list) else [reply]
        if not all(isinstance(r, dict) for r in results):
            raise BackendError(VENDOR, f"{self.path}: malformed reply to n_cmpl", None, json.dumps(reply)[:200])
        results.sort(key=lambda r: r.get("index", 0) if isinstance(r.get("index"), int) else 0)
        if self.router is not None:  # not pinned (the choices need several slots): note where they ran
            key = routing_key(prompt, self.use_infill)
            for result in results:
                if isinstance(result.get("id_slot"), int):
                    self.router.note(result["id_slot"], key)
        if results:
            fill_stats(stats, results[0])
        return [event_text(r, self.path) for r in results]


# ---------------------------------------------------------------------------------------------------------------------
# Chat


class LlamaCppChat(LlamaCppHttp):
    """`/v1/chat/completions`, streamed; the server applies the model's (or the configured) chat template."""

    def __init__(self, endpoint: str, *, model: str | None = None, http: HttpSettings = HttpSettings(),
                 api_key: str | None = None, client: httpx.AsyncClient | None = None):
        super().__init__(endpoint, http=http, api_key=api_key, client=client)
        self.model = model

    def build_body(self, request: ChatRequest) -> dict[str, Any]:
        body = request.to_openai()
        if self.model and "model" not in body:
            body["model"] = self.model
        body["stream"] = True
        return body

    async def chat(self, request: ChatRequest) -> AsyncGenerator[ChatChunk, None]:
        path = "/v1/chat/completions"
        events = self.stream_json(path, self.build_body(request))
        async with contextlib.aclosing(events):
            async for event in events:
                choices = event.get("choices")
                if not choices:
                    continue
                if not isinstance(choices, list) or not isinstance(choices[0], dict):
                    raise BackendError(VENDOR, f"{path}: malformed event: `choices` is not a list of objects",
                                       None, json.dumps(event)[:200])
                choice = choices[0]
                delta = choice.get("delta") or {}
                text = delta.get("content") if isinstance(delta, dict) else None
                if text is not None and not isinstance(text, str):
                    raise BackendError(VENDOR, f"{path}: malformed event: the delta is not text",
                                       None, json.dumps(event)[:200])
                finish = choice.get("finish_reason")
                if text or finish:
                    yield ChatChunk(text or "", finish)


# ---------------------------------------------------------------------------------------------------------------------
# Embedding


def parse_embedding(reply: Any, path: str) -> list[float]:
    """One vector from any of llama-server's shapes:

    - `/embedding`, older servers: `{"embedding": [floats]}`;
    - `/embedding`, newer servers: `[{"index": 0, "embedding": [floats]}]`, or per-token `[[floats], ...]` when the
      server runs without pooling (then the token vectors are averaged);
    - `/v1/embeddings` (OpenAI shape): `{"data": [{"embedding": [floats]}]}`."""
    item: Any = reply
    if isinstance(item, dict) and isinstance(item.get("data"), list) and item["data"]:
        item = item["data"][0]
    if isinstance(item, list) and item and isinstance(item[0], dict):
        item = item[0]
    vector = item.get("embedding") if isinstance(item, dict) else None
    if isinstance(vector, list) and vector and isinstance(vector[0], list):
        vector = _mean([row for row in vector if isinstance(row, list) and row])
    if not isinstance(vector, list) or not vector or not all(isinstance(v, (int, float)) for v in vector):
        raise BackendError(VENDOR, f"{path}: no embedding vector in the reply", None, json.dumps(reply)[:200])
    return [float(v) for v in vector]


def _mean(rows: list[list[float]]) -> list[float]:
    if not rows or any(len(row) != len(rows[0]) for row in rows):
        return []
    return [sum(column) / len(rows) for column in zip(*rows)]


class LlamaCppEmbedding(LlamaCppHttp):
    def __init__(self, endpoint: str, *, http: HttpSettings = HttpSettings(), api_key: str | None = None,
                 client: httpx.AsyncClient | None = None):
        super().__init__(endpoint, http=http, api_key=api_key, client=client)
        self._use_v1: bool | None = None

    async def _pad(self, text: str) -> str:
        """Pad inputs shorter than MIN_EMBEDDING_TOKENS tokens (only short texts are tokenized, ~1 ms each)."""
        if len(text) >= 8 * MIN_EMBEDDING_TOKENS:
            return text
        tokens = await self.post_json("/tokenize", {"content": text, "add_special": False})
        count = len(tokens.get("tokens", [])) if isinstance(tokens, dict) else 0
        missing = MIN_EMBEDDING_TOKENS - count
        return text + EMBEDDING_PAD * missing if missing > 0 else text

    async def embed(self, text: str) -> list[float]:
        text = await self._pad(text)
        if not self._use_v1:
            try:
                vector = parse_embedding(await self.post_json("/embedding", {"content": text}), "/embedding")
                self._use_v1 = False
                return vector
            except BackendError as exc:
                if exc.status != 404 or self._use_v1 is False:
                    raise
                self._use_v1 = True  # a server without /embedding: the OpenAI-compatible route
        return parse_embedding(await self.post_json("/v1/embeddings", {"input": text}), "/v1/embeddings")


# ---------------------------------------------------------------------------------------------------------------------
# Tokenizer and properties


class LlamaCppTokenizer(LlamaCppHttp):
    """Token counts from the server's own tokenizer, for the prompt budget."""

    def __init__(self, endpoint: str, client: httpx.AsyncClient | None = None, *,
                 http: HttpSettings = HttpSettings(), api_key: str | None = None):
        super().__init__(endpoint, http=http, api_key=api_key, client=client)

    async def tokenize(self, text: str) -> list[int]:
        reply = await self.post_json("/tokenize", {"content": text, "add_special": False})
        tokens = reply.get("tokens") if isinstance(reply, dict) else None
        if not isinstance(tokens, list):
            raise BackendError(VENDOR, "/tokenize: no `tokens` list in the reply", None, json.dumps(reply)[:200])
        return [t if isinstance(t, int) else t.get("id") for t in tokens]

    async def count_tokens(self, text: str) -> int:
        return len(await self.tokenize(text))


def _unretried(error: BaseException) -> BaseException:
    """One-off calls are not retried: unwrap the Retryable marker to the error it carries."""
    return error.error if isinstance(error, http_util.Retryable) else error


async def fetch_props(endpoint: str, *, client: httpx.AsyncClient | None = None,
                      http: HttpSettings = HttpSettings(), api_key: str | None = None) -> dict:
    """`GET /props`: slots, context size per slot, chat template, model path."""
    async with http_util.borrowed_client(endpoint, http, client) as borrowed:
        try:
            response = await borrowed.get(http_util.join_url(endpoint, "/props"), headers=http_util.bearer(api_key))
            await _check_status(response, "/props")
        except httpx.HTTPError as exc:
            raise _unretried(http_util.transport_error(VENDOR, exc, http)) from None
    return http_util.parse_json_object(response.content, VENDOR, response.status_code)


async def supports_infill(endpoint: str, *, client: httpx.AsyncClient | None = None,
                          http: HttpSettings = HttpSettings(), api_key: str | None = None) -> bool:
    """Whether `/infill` works (the model has FIM tokens). `/props` does not say, so ask for one token:
    llama-server answers 501 for a model without FIM tokens."""
    body = {"input_prefix": "a", "input_suffix": "", "n_predict": 1, "temperature": 0, "cache_prompt": False}
    async with http_util.borrowed_client(endpoint, http, client) as borrowed:
        try:
            response = await borrowed.post(http_util.join_url(endpoint, "/infill"),
                                           **http_util.json_post(body, http_util.bearer(api_key)))
        except httpx.HTTPError as exc:
            raise _unretried(http_util.transport_error(VENDOR, exc, http)) from None
    if response.status_code == 200:
        return True
    if response.status_code in (400, 404, 501):
        return False
    raise BackendError(VENDOR, "/infill probe failed", response.status_code, response.content)
