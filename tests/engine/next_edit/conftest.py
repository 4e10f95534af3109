"""Fixtures for the next-edit tests: loopback fake model servers (the backends' scripted server)."""

from __future__ import annotations

import pytest

from tests.engine.backends.fake_server import FakeServer


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
