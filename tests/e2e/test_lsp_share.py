"""Several `infill serve` processes (editor windows) on one machine with `kind = "local"` and the same model and
server settings use one llama-server (engine/local/shared.py): the first runs it, the others use it; when the one
that runs it exits or is killed, another takes it over. Other settings, or `share = false`, get servers of their own,
and nothing is left running when the editors are gone.

Counted, never timed: llama-server processes from /proc (their command line names the test's own copy of the model)
and the tokens each generated from its /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from pathlib import Path
from typing import Any, AsyncIterator

import httpx
import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.fixtures.llama import predicted_tokens_when_idle

from .lsp_support import (SERVER_COMMAND, capabilities, complete, llama_servers, open_doc, record_status, server_env,
                          wait_status)

pytestmark = pytest.mark.llama_server


@pytest.fixture
def model(tiny_model: Path, tmp_path: Path) -> Path:
    """A copy of the tiny model of this test alone: its path tells this test's llama-servers from all others."""
    copy = tmp_path / "shared-tiny.gguf"
    shutil.copyfile(tiny_model, copy)
    return copy


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """One environment for every editor of the test: the same run directory, as on one machine."""
    env = server_env()
    env["INFILL_RUN_DIR"] = str(tmp_path / "run")
    return env


async def settled(model: Path, count: int, parents: set[int] | None = None) -> dict[int, tuple[int, int]]:
    """The llama-servers of `model` once there are `count` of them (children of `parents`, when given). A safety net of
    a minute, not a speed assertion: starting and stopping processes is slow on a busy machine."""
    end = asyncio.get_running_loop().time() + 60
    while True:
        servers = llama_servers(model)
        if len(servers) == count and (parents is None or {ppid for ppid, _ in servers.values()} == parents):
            return servers
        if asyncio.get_running_loop().time() > end:
            raise AssertionError(f"expected {count} llama-server(s) of {model.name} (parents {parents}), "
                                 f"found {servers}")
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def editor(env: dict[str, str], model: Path, binary: str, **local: Any) -> AsyncIterator[LanguageClient]:
    """An `infill serve --stdio` process with the local backend, initialized and ready; shut down on the way out
    (unless the test killed it)."""
    client = await ClientServerConfig(server_command=SERVER_COMMAND, server_env=env).start()
    record_status(client)
    options = {"completion": {"kind": "local", "model": str(model),
                              "local": {"binary": binary, "parallel": 1, "ctx_size": 1024, "threads": 1,
                                        "extra_args": ["--metrics"], **local}},
               "max_tokens": 8, "temperature": 0.0, "debounce": {"mode": "fixed", "fixed_ms": 0},
               "speculation": {"prefetch": False}}
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=capabilities(["utf-16"]), initialization_options=options))
        await wait_status(client, "ready", timeout=120)
        yield client
    finally:
        if client._server is not None and client._server.returncode is None:  # type: ignore[attr-defined]
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.shutdown_session(), 60)
        await client.stop()


def pid_of(client: LanguageClient) -> int:
    return client._server.pid  # type: ignore[attr-defined]


def ready_detail(client: LanguageClient) -> str:
    events = [e for e in client.infill_status if e["kind"] == "ready"]  # type: ignore[attr-defined]
    return events[0]["detail"] or ""


async def healthy(url: str) -> None:
    """Once the llama-server at `url` has loaded its model (a server just started may not have yet)."""
    async with httpx.AsyncClient(timeout=5.0, trust_env=False) as http:
        end = asyncio.get_running_loop().time() + 60  # safety net only
        while asyncio.get_running_loop().time() < end:
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(f"{url}/health")).status_code == 200:
                    return
            await asyncio.sleep(0.05)
    raise AssertionError(f"llama-server at {url} never became healthy")


async def served(client: LanguageClient, port: int) -> None:
    """A completion of `client`, counted on the llama-server at `port` (its tokens_predicted_total grows)."""
    url = f"http://127.0.0.1:{port}"
    await healthy(url)
    before = await predicted_tokens_when_idle(url)
    result = await complete(client, open_doc(client, "def again(x):\n    "), 1, 4)
    assert result.items
    assert await predicted_tokens_when_idle(url) > before


@pytest.mark.parametrize("how", ["shutdown", "SIGKILL"])
async def test_editors_share_one_server_and_the_other_takes_it_over(env, model: Path, llama_server_binary: str,
                                                                    how: str) -> None:
    owner = editor(env, model, llama_server_binary)
    first = await owner.__aenter__()
    try:
        async with editor(env, model, llama_server_binary) as second:
            ((server, (parent, port)),) = (await settled(model, 1)).items()
            assert parent == pid_of(first)
            assert "this process runs the model server" in ready_detail(first)
            assert f"using the llama-server started by Infill process {pid_of(first)}" in ready_detail(second)
            await served(first, port)
            await served(second, port)
            assert list(llama_servers(model)) == [server]  # still the one server

            gone_pid = pid_of(first)
            if how == "shutdown":
                await owner.__aexit__(None, None, None)
            else:
                os.kill(gone_pid, signal.SIGKILL)  # its llama-server dies with it (PR_SET_PDEATHSIG)
            # the other editor runs it now: again exactly one llama-server, its child
            ((taken, (parent, port)),) = (await settled(model, 1, {pid_of(second)})).items()
            assert taken != server
            await served(second, port)
            gone = [e for e in second.infill_status if "has gone" in e["message"]]  # type: ignore[attr-defined]
            assert gone and str(gone_pid) in gone[0]["message"]
    finally:
        await owner.__aexit__(None, None, None)  # (again after a shutdown: the generator has ended, nothing happens)
    assert await settled(model, 0) == {}  # both closed: no llama-server is left


@pytest.mark.parametrize("other", [{"ctx_size": 2048}, {"share": False}])
async def test_other_settings_or_share_false_get_servers_of_their_own(env, model: Path, llama_server_binary: str,
                                                                      other: dict) -> None:
    async with editor(env, model, llama_server_binary) as first:
        async with editor(env, model, llama_server_binary, **other) as second:
            async with editor(env, model, llama_server_binary) as third:
                servers = await settled(model, 2, {pid_of(first), pid_of(second)})
                port_of = {ppid: port for ppid, port in servers.values()}
                await served(third, port_of[pid_of(first)])  # the third shares the first's
                await served(second, port_of[pid_of(second)])
                assert len(llama_servers(model)) == 2
    assert await settled(model, 0) == {}
