"""What every HTTP backend (remote vendors and llama-server) shares: one pooled HTTP client per endpoint, secrets kept
out of logs, the retry rule, and the base class `HttpBackend`.

Why one client per endpoint: keep-alive connections make the second keystroke's request skip the TCP/TLS handshake,
which on a hosted API is most of the latency budget. Clients are reference-counted so that the completion, chat and
embedding backends of one server share the pool and the last one to close it closes it.

Why retries only before the first token: once text has reached the editor a retry would produce a different
completion that the caller cannot splice in, so a failure mid-stream is reported, never hidden."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import ipaddress
import json
import logging
import re
import ssl
import time
from dataclasses import dataclass
from typing import Any, AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, TypedDict, TypeVar, cast
from urllib.parse import urlsplit

import httpx
from httpx_sse import EventSource

from ..config import HttpSettings
from ..errors import BackendError, ConfigError
from ..redact import redact

log = logging.getLogger(__name__)

T = TypeVar("T")

#: A server asking us to wait longer than this is treated as a failure: an editor suggestion that late is useless.
MAX_RETRY_AFTER = 30.0
#: First backoff delay; doubles on each retry.
BACKOFF_BASE = 0.25

#: Patched by tests to observe the delays without waiting them out.
sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


# ---------------------------------------------------------------------------------------------------------------------
# Endpoints


def is_loopback(url: str) -> bool:
    """True for localhost and 127.0.0.0/8 / ::1 endpoints, which must never go through a proxy."""
    host = (urlsplit(url).hostname or "").strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_endpoint(url: str | None, key: str) -> str:
    """The endpoint without a trailing slash; ConfigError naming `key` when it is missing or not an http(s) URL."""
    if not url:
        raise ConfigError(key, "is required for this kind (the base URL of the server, e.g. http://127.0.0.1:8080)")
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError for a port that is not a number from 0 to 65535
        httpx.URL(url)  # what each request builds: a host IDNA cannot encode or a URL too long failed only there
    except (ValueError, httpx.InvalidURL) as exc:
        raise ConfigError(key, f"is not a valid URL ({exc}): {url!r:.200}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise ConfigError(key, f"must be an http:// or https:// URL, got {url!r}")
    return url.rstrip("/")


_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonPost(TypedDict):
    """httpx's keyword arguments for a JSON body (`**json_post(...)`)."""

    content: bytes
    headers: dict[str, str]


def json_post(body: object, headers: Mapping[str, str]) -> JsonPost:
    """httpx arguments posting `body` as UTF-8 JSON. An editor's text may hold lone surrogates (half of an emoji
    pair, a file decoded with errors), which UTF-8 cannot encode: httpx's `json=` then fails the whole request.
    Each becomes U+FFFD, one character for one, so offsets and clipping stay as computed."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    try:
        content = text.encode("utf-8")
    except UnicodeEncodeError:
        content = _SURROGATE.sub("\ufffd", text).encode("utf-8")
    return JsonPost(content=content, headers={**headers, "Content-Type": "application/json"})


def join_url(base: str, path: str) -> str:
    return base.rstrip("/") + "/" + path.lstrip("/")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


# ---------------------------------------------------------------------------------------------------------------------
# Secrets


def bearer(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


# ---------------------------------------------------------------------------------------------------------------------
# The shared clients


def _settings_key(settings: HttpSettings) -> tuple:
    return (settings.connect_timeout, settings.read_timeout, settings.proxy, settings.ca_bundle,
            settings.verify_tls, tuple(sorted(settings.headers.items())))


def build_client(endpoint: str, settings: HttpSettings) -> httpx.AsyncClient:
    """A keep-alive client for one endpoint, honouring the timeout, proxy, CA and TLS settings."""
    timeout = httpx.Timeout(connect=settings.connect_timeout, read=settings.read_timeout,
                            write=settings.read_timeout, pool=settings.connect_timeout)
    verify: ssl.SSLContext | bool = True
    if settings.ca_bundle:
        try:
            verify = ssl.create_default_context(cafile=settings.ca_bundle)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError("http.ca_bundle", f"cannot load CA bundle {settings.ca_bundle!r}: {exc}") from exc
    if not settings.verify_tls:
        log.warning("TLS certificate verification is off for %s (http.verify_tls = false)", endpoint)
        verify = False
    loopback = is_loopback(endpoint)
    if loopback and urlsplit(endpoint).scheme == "http" and not settings.ca_bundle:
        # No TLS can happen (no proxy, no redirects followed): skip building an SSL context (~25 ms).
        verify = False
    return httpx.AsyncClient(
        timeout=timeout,
        verify=verify,
        # Loopback: never a proxy, and ignore HTTP(S)_PROXY from the environment too.
        proxy=None if loopback else settings.proxy,
        trust_env=not loopback,
        headers=dict(settings.headers),
        limits=httpx.Limits(max_keepalive_connections=8, keepalive_expiry=60.0),
    )


@dataclass
class _Pooled:
    client: httpx.AsyncClient
    refs: int


_POOL: dict[tuple, _Pooled] = {}


def acquire_client(endpoint: str, settings: HttpSettings) -> httpx.AsyncClient:
    """The shared client for `endpoint` with these settings; pair every call with `release_client`."""
    try:  # connections belong to one event loop: never share a client across loops
        loop_id = id(asyncio.get_running_loop())
    except RuntimeError:
        loop_id = None
    key = (_origin(endpoint), _settings_key(settings), loop_id)
    pooled = _POOL.get(key)
    if pooled is None or pooled.client.is_closed:
        pooled = _POOL[key] = _Pooled(build_client(endpoint, settings), 0)
    pooled.refs += 1
    return pooled.client


async def release_client(client: httpx.AsyncClient) -> None:
    for key, pooled in list(_POOL.items()):
        if pooled.client is client:
            pooled.refs -= 1
            if pooled.refs <= 0:
                del _POOL[key]
                await client.aclose()
            return
    await client.aclose()  # not pooled: the caller owned it alone


def forget_client(client: httpx.AsyncClient) -> None:
    """Drop one reference without closing (for a client that was never used: it holds no connections)."""
    for key, pooled in list(_POOL.items()):
        if pooled.client is client:
            pooled.refs -= 1
            if pooled.refs <= 0:
                del _POOL[key]
            return


def pooled_client_count() -> int:
    return len(_POOL)


@contextlib.asynccontextmanager
async def borrowed_client(endpoint: str, settings: HttpSettings,
                          client: httpx.AsyncClient | None = None) -> AsyncGenerator[httpx.AsyncClient, None]:
    """`client` when given, else the pooled client for `endpoint`, given back on exit (for one-off requests)."""
    if client is not None:
        yield client
        return
    pooled = acquire_client(endpoint, settings)
    try:
        yield pooled
    finally:
        await release_client(pooled)


# ---------------------------------------------------------------------------------------------------------------------
# Errors and retries


class Retryable(Exception):
    """An attempt failed in a way worth another try (5xx, 429, reset) if nothing was streamed yet."""

    def __init__(self, error: BackendError, delay: float | None = None):
        super().__init__(str(error))
        self.error = error
        self.delay = delay


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


async def check_status(response: httpx.Response, vendor: str) -> None:
    """Raise for a non-2xx response: Retryable for 429/5xx, BackendError otherwise, with the start of the body."""
    if response.status_code < 400:
        return
    body = await _read_head(response)
    status = response.status_code
    if status == 429:
        delay = parse_retry_after(response.headers.get("retry-after"))
        error = BackendError(vendor, "rate limited by the server", status, body)
        raise Retryable(error, delay)
    if status in (401, 403):
        raise BackendError(vendor, "the API key was refused (check api_key / api_key_env)", status, body)
    if status >= 500:
        # 503 may carry Retry-After too (a server still loading its model).
        raise Retryable(BackendError(vendor, "server error", status, body),
                        parse_retry_after(response.headers.get("retry-after")))
    raise BackendError(vendor, "request rejected", status, body)


async def _read_head(response: httpx.Response, limit: int = 200) -> bytes:
    try:
        data = b""
        async for chunk in response.aiter_bytes():
            data += chunk
            if len(data) >= limit:
                break
        return data[:limit]
    except httpx.HTTPError:
        return b""


def transport_error(vendor: str, exc: httpx.HTTPError, settings: HttpSettings) -> BackendError | Retryable:
    """Map an httpx failure to our errors. Resets and refused connections may be retried; timeouts are not
    (another try would just double the wait)."""
    if isinstance(exc, httpx.ReadTimeout):
        return BackendError(vendor, f"no data from the server for {settings.read_timeout:g} s (http.read_timeout)")
    if isinstance(exc, httpx.ConnectTimeout):
        return BackendError(vendor, f"could not connect within {settings.connect_timeout:g} s (http.connect_timeout)")
    if isinstance(exc, httpx.TimeoutException):
        return BackendError(vendor, f"timed out: {type(exc).__name__}")
    # str(exc), not exc: an exception is true even when its text is empty (httpx's resets often are), and the
    # messages then ended in ": " with no word of what happened
    what = str(exc) or type(exc).__name__
    if isinstance(exc, (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError)):
        return Retryable(BackendError(vendor, f"connection to {_server(exc)} failed or was reset: {what}"))
    return BackendError(vendor, f"HTTP failure: {what}")


def _server(exc: httpx.HTTPError) -> str:
    """scheme://host:port of the failed request (no path or query, which may carry a key): with several servers
    configured or running (one per editor window), which one did not answer."""
    try:
        url = exc.request.url
    except RuntimeError:  # an error raised without a request
        return "the server"
    return f"{url.scheme}://{url.host}" + (f":{url.port}" if url.port else "")


def backoff_delay(attempt: int) -> float:
    return BACKOFF_BASE * (2 ** attempt)


async def with_retries(attempt: Callable[[], AsyncGenerator[T, None]], vendor: str,
                       settings: HttpSettings) -> AsyncGenerator[T, None]:
    """Run the streaming `attempt`, retrying it on Retryable failures as long as it has yielded nothing.

    429 waits what Retry-After says (capped at MAX_RETRY_AFTER), other failures back off exponentially."""
    tries = 0
    while True:
        yielded = False
        agen = attempt()
        try:
            async for item in agen:
                yielded = True
                yield item
            return
        except Retryable as failure:
            if yielded or tries >= settings.max_retries:
                raise failure.error from None
            delay = failure.delay if failure.delay is not None else backoff_delay(tries)
            if delay > MAX_RETRY_AFTER:
                raise BackendError(vendor, f"the server asks to retry after {delay:g} s, longer than "
                                           f"{MAX_RETRY_AFTER:g} s", failure.error.status, failure.error.body) from None
            tries += 1
            log.info("%s; retry %d/%d in %.2f s", redact(str(failure.error)), tries, settings.max_retries, delay)
        finally:
            await agen.aclose()
        await sleep(delay)


def parse_json(raw: bytes | str, vendor: str, status: int | None) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise BackendError(vendor, "malformed JSON from the server", status, raw) from None


def parse_json_object(raw: bytes | str, vendor: str, status: int | None) -> dict:
    value = parse_json(raw, vendor, status)
    if not isinstance(value, dict):
        raise BackendError(vendor, "expected a JSON object from the server", status, raw)
    return value


# ---------------------------------------------------------------------------------------------------------------------
# Streamed bodies


#: After the end marker, at most this many more events/lines are read (normally none, then the body's end) so that
#: the connection can go back to the pool; past it the connection is closed instead.
MAX_TRAILING = 16


async def sse_json(response: httpx.Response, vendor: str,
                   last: Callable[[dict], bool] | None = None) -> AsyncGenerator[dict, None]:
    """The JSON objects of an SSE stream (httpx-sse does the framing: comments, multi-line `data:`, CRLF).

    Blank keep-alive events are skipped and `[DONE]` ends the stream; anything else that is not a JSON object
    ends the request with a BackendError carrying the chunk.

    Why the rest of the body is read after the end (`[DONE]`, or an event for which `last` is true, e.g.
    llama-server's `"stop": true`, read *before* that event is yielded, since callers stop there): a response
    closed before its end cannot give its connection back to the keep-alive pool, so every request would pay a new
    TCP (and TLS) handshake."""
    if "text/event-stream" not in response.headers.get("content-type", ""):
        body = await _read_head(response)
        raise BackendError(vendor, f"expected an event stream, got content-type "
                                   f"{response.headers.get('content-type')!r}", response.status_code, body)
    events = EventSource(response).aiter_sse()
    try:
        async for event in events:
            data = event.data.strip()
            if not data:
                continue
            if data == "[DONE]":
                await _drain(events)
                return
            chunk = parse_json_object(data, vendor, response.status_code)
            if "error" in chunk and not chunk.get("choices"):
                raise BackendError(vendor, "error reported inside the stream", response.status_code, data)
            if last is not None and last(chunk):
                await _drain(events)
                yield chunk
                return
            yield chunk
    finally:
        await events.aclose()


async def _drain(rest: AsyncIterator) -> None:
    """Read (without parsing) what follows the end marker, normally nothing; give up past MAX_TRAILING items."""
    count = 0
    async for _ in rest:
        count += 1
        if count > MAX_TRAILING:
            return


async def ndjson_json(response: httpx.Response, vendor: str, done_key: str = "done") -> AsyncGenerator[dict, None]:
    """The JSON objects of a newline-delimited JSON stream (Ollama) up to the one with `done_key` true, before which
    the rest of the body is read so the connection can be reused; blank lines are skipped."""
    lines = cast(AsyncGenerator[str, None], response.aiter_lines())  # an async generator, typed as an iterator
    try:
        async for line in lines:
            line = line.strip()
            if not line:
                continue
            chunk = parse_json_object(line, vendor, response.status_code)
            if "error" in chunk:
                raise BackendError(vendor, "error reported inside the stream", response.status_code, line)
            if chunk.get(done_key) is True:
                await _drain(lines)
                yield chunk
                return
            yield chunk
    finally:
        await lines.aclose()


# ---------------------------------------------------------------------------------------------------------------------
# The base of every HTTP backend


class HttpBackend:
    """What every HTTP backend (remote vendors, llama-server) shares: the endpoint, the API key, the client, the
    retry rule, and the two request shapes (a streamed body, one JSON reply).

    The client policy, one for all: the client passed in is borrowed (the kind registry passes the endpoint's pooled
    client and gives it back itself); without one, the endpoint's pooled client is taken on first use, in the event
    loop that uses it, and given back by `close()`. Paths are joined to `base_url()` per request, so the local
    backend can point the same object at a restarted llama-server (which may have had to take another port)."""

    def __init__(self, vendor: str, endpoint: str, settings: HttpSettings, api_key: str | None,
                 client: httpx.AsyncClient | None = None):
        self.vendor = vendor
        self.endpoint = endpoint.rstrip("/")
        self.http = settings
        self._api_key = api_key
        self._client = client
        #: True while this object holds a pool reference of its own (given back on close).
        self._holds_pool_ref = False

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}({self.vendor!r}, {self.endpoint!r})"

    async def base_url(self) -> str:
        """The base URL for the next request."""
        return self.endpoint

    def auth_headers(self) -> dict[str, str]:
        return bearer(self._api_key)

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = acquire_client(self.endpoint, self.http)
            self._holds_pool_ref = True
        return self._client

    async def close(self) -> None:
        if self._holds_pool_ref and self._client is not None:
            client, self._client, self._holds_pool_ref = self._client, None, False
            await release_client(client)

    async def check_response(self, response: httpx.Response, path: str) -> None:
        """Raise for a failed response (a backend may say more about some statuses)."""
        await check_status(response, self.vendor)

    def stream_json(self, path: str, body: dict, *, ndjson: bool = False,
                    end_key: str | None = None) -> AsyncGenerator[dict, None]:
        """POST `body` to `path` and yield the streamed JSON objects (SSE, or NDJSON with `ndjson`), retrying
        failures that happen before the first object.

        `end_key`: the key whose true value marks the last object; a stream that ends without it was cut off (the
        server died), which is an error, not a short answer."""
        headers = {**self.auth_headers(), "Accept": "application/x-ndjson" if ndjson else "text/event-stream"}
        vendor = self.vendor

        def is_last(chunk: dict) -> bool:
            return end_key is not None and chunk.get(end_key) is True

        async def attempt() -> AsyncGenerator[dict, None]:
            url = join_url(await self.base_url(), path)
            finished = end_key is None
            try:
                async with self.client.stream("POST", url, **json_post(body, headers)) as response:
                    await self.check_response(response, path)
                    chunks = (ndjson_json(response, vendor, end_key or "done") if ndjson
                              else sse_json(response, vendor, last=is_last if end_key else None))
                    async with contextlib.aclosing(chunks):
                        async for chunk in chunks:
                            yield chunk
                            if is_last(chunk):
                                finished = True
                                return
            except httpx.HTTPError as exc:
                raise transport_error(vendor, exc, self.http) from None
            if not finished:
                raise BackendError(vendor, f"{path}: the stream ended before the generation did "
                                           "(did the server stop?)")

        return with_retries(attempt, vendor, self.http)

    async def post_json(self, path: str, body: dict) -> Any:
        """POST `body` to `path` and return the decoded JSON reply, with the same retry rule as the streams."""

        async def attempt() -> AsyncGenerator[Any, None]:
            url = join_url(await self.base_url(), path)
            try:
                response = await self.client.post(url, **json_post(body, self.auth_headers()))
                await self.check_response(response, path)
            except httpx.HTTPError as exc:
                raise transport_error(self.vendor, exc, self.http) from None
            yield parse_json(response.content, self.vendor, response.status_code)

        replies = with_retries(attempt, self.vendor, self.http)
        async with contextlib.aclosing(replies):
            async for reply in replies:
                return reply
        raise BackendError(self.vendor, f"{path}: empty response")  # unreachable: attempt yields once or raises

