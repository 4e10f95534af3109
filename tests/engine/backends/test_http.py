"""The shared HTTP layer: loopback detection, proxies, secrets, Retry-After, error mapping."""

from __future__ import annotations

import logging
import socket
import ssl

import httpx
import pytest

from engine.backends import create_completion_stream, http
from engine.config import HttpSettings, ModelConfig
from engine.errors import BackendError, ConfigError
from engine.types import CompletionOptions, Prompt


@pytest.mark.parametrize("url,expected", [
    ("http://127.0.0.1:8080", True), ("http://127.3.4.5", True), ("http://localhost:11434", True),
    ("http://[::1]:8080/v1", True), ("http://api.localhost", True),
    ("https://api.openai.com/v1", False), ("http://10.0.0.2:8000", False), ("http://localhost.example.com", False),
])
def test_is_loopback(url, expected):
    assert http.is_loopback(url) is expected


def _proxies(client: httpx.AsyncClient) -> list[bytes]:
    """The proxy hosts httpx will use (it mounts one proxy transport per URL pattern)."""
    transports = [client._transport, *client._mounts.values()]
    return [bytes(t._pool._proxy_url.host) for t in transports if t is not None
            and getattr(t._pool, "_proxy_url", None) is not None]


async def test_loopback_ignores_proxies_even_from_the_environment(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    settings = HttpSettings(proxy="http://proxy.invalid:3128")
    local = http.build_client("http://127.0.0.1:8080", settings)
    remote = http.build_client("https://api.example.com/v1", settings)
    try:
        assert local.trust_env is False and _proxies(local) == []
        assert remote.trust_env is True and _proxies(remote) == [b"proxy.invalid"]
    finally:
        await local.aclose()
        await remote.aclose()


async def test_timeouts_headers_and_tls_settings():
    client = http.build_client("https://api.example.com", HttpSettings(connect_timeout=1.5, read_timeout=7.0,
                                                                       headers={"X-Org": "acme"}))
    try:
        assert client.timeout.connect == 1.5 and client.timeout.read == 7.0
        assert client.headers["x-org"] == "acme"
        ctx = client._transport._pool._ssl_context
        assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname  # TLS verification on by default
    finally:
        await client.aclose()


async def test_custom_ca_bundle_and_a_missing_one(tmp_path):
    import certifi

    client = http.build_client("https://internal.example", HttpSettings(ca_bundle=certifi.where()))
    await client.aclose()
    with pytest.raises(ConfigError) as info:
        http.build_client("https://internal.example", HttpSettings(ca_bundle=str(tmp_path / "nope.pem")))
    assert info.value.key == "http.ca_bundle" and "nope.pem" in str(info.value)


async def test_verify_tls_off_is_logged(caplog):
    with caplog.at_level(logging.WARNING):
        client = http.build_client("https://internal.example", HttpSettings(verify_tls=False))
    await client.aclose()
    assert "http.verify_tls" in caplog.text


def test_a_reset_without_text_says_what_and_where():
    """httpx raises resets with an empty message: the error ended in "connection failed or was reset: " before."""
    request = httpx.Request("POST", "https://llm.example.com:8443/v1/completions?key=secret")
    failure = http.transport_error("openai", httpx.ReadError("", request=request), HttpSettings())
    assert isinstance(failure, http.Retryable)
    message = str(failure.error)
    assert message.endswith("connection to https://llm.example.com:8443 failed or was reset: ReadError")
    assert "secret" not in message and "/v1" not in message
    assert str(http.transport_error("openai", httpx.ConnectError(""), HttpSettings()).error).endswith(
        "connection to the server failed or was reset: ConnectError")


def test_parse_retry_after():
    assert http.parse_retry_after("3") == 3.0
    assert http.parse_retry_after("0.5") == 0.5
    assert http.parse_retry_after(None) is None
    assert http.parse_retry_after("soon") is None
    assert http.parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == pytest.approx(10.0)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_connection_refused_is_retried_then_reported(sleeps):
    port = _closed_port()
    cfg = ModelConfig(kind="openai/completion", api_endpoint=f"http://127.0.0.1:{port}/v1", model="m",
                      http=HttpSettings(max_retries=1))
    stream = create_completion_stream(cfg)
    try:
        with pytest.raises(BackendError, match=rf"openai.*connection to http://127\.0\.0\.1:{port} failed"):
            async for _ in stream.generate(Prompt("x", "x"), CompletionOptions()):
                pass
    finally:
        await stream.close()
    assert sleeps == [0.25]


async def test_401_names_the_api_key_settings_and_is_not_retried(serve, sleeps):
    async def refuse(request, rs):
        await rs.full(401, {"error": "invalid key"})

    server, base = await serve(refuse)
    stream = create_completion_stream(ModelConfig(kind="openai/completion", api_endpoint=base, model="m",
                                                  api_key="sk-wrong"))
    try:
        with pytest.raises(BackendError, match="api_key_env") as info:
            async for _ in stream.generate(Prompt("x", "x"), CompletionOptions()):
                pass
    finally:
        await stream.close()
    assert info.value.status == 401 and "sk-wrong" not in str(info.value)
    assert len(server.requests) == 1 and sleeps == []


async def test_a_retry_after_too_long_fails_at_once(serve, sleeps):
    async def limited(request, rs):
        await rs.full(429, {"error": "quota"}, headers={"Retry-After": "3600"})

    server, base = await serve(limited)
    stream = create_completion_stream(ModelConfig(kind="openai/completion", api_endpoint=base, model="m"))
    try:
        with pytest.raises(BackendError, match="retry after 3600") as info:
            async for _ in stream.generate(Prompt("x", "x"), CompletionOptions()):
                pass
    finally:
        await stream.close()
    assert info.value.status == 429 and sleeps == [] and len(server.requests) == 1


async def test_a_json_reply_to_a_stream_request_is_reported(serve):
    async def not_streaming(request, rs):
        await rs.full(200, {"choices": [{"text": "whole"}]})

    server, base = await serve(not_streaming)
    stream = create_completion_stream(ModelConfig(kind="openai/completion", api_endpoint=base, model="m"))
    try:
        with pytest.raises(BackendError, match="expected an event stream") as info:
            async for _ in stream.generate(Prompt("x", "x"), CompletionOptions()):
                pass
    finally:
        await stream.close()
    assert "whole" in info.value.body


async def test_503_with_retry_after_waits_that_long(serve, sleeps):
    from . import vendor_formats as vf

    calls = []

    async def loading_then_ok(request, rs):
        calls.append(1)
        if len(calls) == 1:
            await rs.full(503, {"error": {"message": "Loading model"}}, headers={"Retry-After": "2"})
            return
        await rs.start()
        await rs.send(vf.openai_text("ok"))
        await rs.send("data: [DONE]\n\n")
        await rs.end()

    server, base = await serve(loading_then_ok)
    stream = create_completion_stream(ModelConfig(kind="openai/completion", api_endpoint=base, model="m"))
    try:
        assert [c async for c in stream.generate(Prompt("x", "x"), CompletionOptions())] == ["ok"]
    finally:
        await stream.close()
    assert sleeps == [2.0]
