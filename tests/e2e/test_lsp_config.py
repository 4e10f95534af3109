"""Configuration changes through the LSP: valid ones apply, invalid ones are reported naming the key and the last
good configuration stays; a change of backend restarts only the engine."""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from .lsp_support import capabilities, complete, config, open_doc, record_status, remote_options, wait_status

pytestmark = [pytest.mark.llama_server, pytest.mark.asyncio(loop_scope="module")]


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, llama_server: str):
    record_status(lsp_client)
    lsp_client.set_configuration({"max_tokens": 12}, section="infill")
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities(["utf-16"]), initialization_options=remote_options(llama_server, temperature=0.0)))
    await wait_status(lsp_client, "ready")
    yield
    await lsp_client.shutdown_session()


def change(client: LanguageClient, settings) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))


async def wait_message(client: LanguageClient, needle: str, timeout: float = 10.0) -> types.ShowMessageParams:
    end = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < end:
        for message in client.messages:
            if needle in message.message:
                return message
        await asyncio.sleep(0.02)
    raise AssertionError(f"no window/showMessage containing {needle!r}; got {[m.message for m in client.messages]}")


# Requests wait for a configuration change that arrived before them, so no sleeps are needed after `change`.


async def test_invalid_value_is_reported_and_last_good_config_kept(client: LanguageClient):
    change(client, {"infill": {"max_tokens": "plenty"}})
    message = await wait_message(client, "max_tokens")
    assert message.type == types.MessageType.Error and "plenty" in message.message
    uri = open_doc(client, "def keep(a):\n    ")
    assert (await complete(client, uri, 1, 4)).items  # still serving with the previous configuration


async def test_unknown_key_is_reported(client: LanguageClient):
    change(client, {"infill": {"completion": {"kindd": "local"}}})
    await wait_message(client, "completion.kindd")


async def test_token_budget_change_applies(client: LanguageClient):
    text = "def budget(x):\n    "
    before = await complete(client, open_doc(client, text), 1, 4)
    change(client, {"infill": {"max_tokens": 2}})
    after = await complete(client, open_doc(client, text), 1, 4)
    assert before.items and after.items
    assert len(after.items[0].insert_text) < len(before.items[0].insert_text)


async def test_pull_configuration_when_change_has_no_settings(client: LanguageClient):
    client.set_configuration({"max_tokens": 1, "enabled": False}, section="infill")
    change(client, None)
    uri = open_doc(client, "def off(x):\n    ")
    assert not (await complete(client, uri, 1, 4)).items
    event = await wait_status(client, "disabled")
    assert "enabled" in event["message"]
    mark = len(client.infill_status)  # type: ignore[attr-defined]
    client.set_configuration({"max_tokens": 12, "enabled": True}, section="infill")
    change(client, None)
    # Turned back on: the status says so before anything is typed.
    deadline = asyncio.get_running_loop().time() + 60
    while not any(e["kind"] == "ready" for e in client.infill_status[mark:]):  # type: ignore[attr-defined]
        assert asyncio.get_running_loop().time() < deadline, client.infill_status  # type: ignore[attr-defined]
        await asyncio.sleep(0.02)
    assert (await complete(client, uri, 1, 4)).items


async def test_backend_change_restarts_only_the_engine(client: LanguageClient, llama_server: str):
    change(client, {"infill": {"completion": {"kind": "llama.cpp/infill", "api_endpoint": "http://127.0.0.1:9",
                                              "http": {"max_retries": 0, "connect_timeout": 1.0}}}})
    uri = open_doc(client, "def broken(x):\n    ")
    with pytest.raises(JsonRpcException) as info:
        await complete(client, uri, 1, 4)
    assert "127.0.0.1:9" in info.value.message or "llama" in info.value.message.lower()
    change(client, {"infill": {"completion": {"kind": "llama.cpp/infill", "api_endpoint": llama_server}}})
    assert (await complete(client, uri, 1, 4)).items  # same server process, new engine


async def test_invoked_requests_may_offer_several_choices(client: LanguageClient):
    change(client, {"infill": {"invoked_choices": 3, "invoked_temperature": 1.0}})
    uri = open_doc(client, "def several(x):\n    ")
    invoked = await complete(client, uri, 1, 4, invoked=True)
    texts = [item.insert_text for item in invoked.items]
    assert len(texts) >= 2 and len(set(texts)) == len(texts)  # distinct choices, hotter sampling
    automatic = await complete(client, open_doc(client, "def single(x):\n    "), 1, 4, invoked=False)
    assert len(automatic.items) == 1
    change(client, {"infill": {"invoked_choices": 1}})
