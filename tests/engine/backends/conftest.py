"""Fixtures for the remote-backend tests: loopback fake servers, and retry delays recorded instead of slept."""

from __future__ import annotations

import pytest

from engine.backends import http

from .fake_server import FakeServer


@pytest.fixture
def sleeps(monkeypatch) -> list[float]:
    """The delays the retry helper asked for; nothing actually waits."""
    recorded: list[float] = []

    async def fake_sleep(delay: float) -> None:
        recorded.append(delay)

    monkeypatch.setattr(http, "sleep", fake_sleep)
    return recorded


@pytest.fixture
async def serve():
    """`await serve(handler)` → (server, base_url); every server is closed at the end of the test."""
    servers: list[FakeServer] = []

    async def start(handler) -> tuple[FakeServer, str]:
        server = FakeServer(handler)
        servers.append(server)
        return server, await server.start()

    yield start
    for server in servers:
        await server.close()


@pytest.fixture(autouse=True)
def no_leaked_clients():
    """Every test must close what it builds: the shared client pool is empty afterwards."""
    before = http.pooled_client_count()
    yield
    assert http.pooled_client_count() == before, "a backend was not closed (its pooled HTTP client leaked)"
