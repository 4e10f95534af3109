"""Supersession and $/cancelRequest: every request is answered and the model stream is closed, so llama-server
stops generating (observed on its /slots endpoint: the superseded slot stops after far fewer tokens than the same
generation makes when nothing stops it)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from .lsp_support import capabilities, complete, config, inline_params, open_doc, record_status, remote_options, \
    wait_generating, wait_status

pytestmark = [pytest.mark.llama_server, pytest.mark.asyncio(loop_scope="module")]

#: Long enough that an unstopped generation would run for about a second on the tiny model.
BUDGET = 1500


@pytest_lsp.fixture(scope="module", config=config())
async def client(lsp_client: LanguageClient, llama_server: str):
    record_status(lsp_client)
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities(["utf-16"]),
        initialization_options=remote_options(llama_server, max_tokens=BUDGET, temperature=0.0)))
    await wait_status(lsp_client, "ready")
    yield
    await lsp_client.shutdown_session()


_http: dict[str, httpx.AsyncClient] = {}


async def _slots(base_url: str) -> list[dict]:
    http = _http.get(base_url)
    if http is None or http.is_closed:
        http = _http[base_url] = httpx.AsyncClient(base_url=base_url, timeout=5.0)
    return (await http.get("/slots")).json()


def _deadline(seconds: float) -> float:
    """A safety net so a broken server fails the test instead of hanging it (not a speed assertion)."""
    return asyncio.get_running_loop().time() + seconds


async def _decoded_until_idle(base_url: str, slot_id: int) -> int:
    """Highest token count seen on the slot before it went idle."""
    highest = 0
    end = _deadline(60)
    while asyncio.get_running_loop().time() < end:
        slot = next(s for s in await _slots(base_url) if s["id"] == slot_id)
        if not slot.get("is_processing"):
            return highest
        highest = max(highest, (slot.get("next_token") or [{}])[0].get("n_decoded", 0))
        await asyncio.sleep(0.005)
    raise AssertionError(f"slot {slot_id} kept generating")


#: With the tiny model at temperature 0 these lines' completions run for hundreds of tokens before a stop word
#: (how many depends a little on llama-server's cache state, so the longest one is measured and used).
CANDIDATES = ("def job_2(x):\n    y = \n", "def job_4(x):\n    y = \n", "def job_11(x):\n    y = \n")


async def _reference(client: LanguageClient, base_url: str, text: str) -> int:
    """How many tokens the generation at 1:8 of `text` makes when nothing stops it."""
    uri = open_doc(client, text)
    pending = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(uri, 1, 8)))
    slot = await wait_generating(base_url, min_decoded=1, pending=pending)
    full = await _decoded_until_idle(base_url, slot) if slot is not None else 0
    assert (await pending).items
    return full


async def _long_generation(client: LanguageClient, base_url: str) -> tuple[str, int]:
    """The candidate text with the longest uncancelled generation, and its length in tokens."""
    # A poll starved of CPU on a loaded machine can miss a whole generation (length 0): measure again then.
    for _ in range(3):
        lengths = {text: await _reference(client, base_url, text) for text in CANDIDATES}
        text = max(lengths, key=lengths.get)
        if lengths[text] >= 150:
            break
    assert lengths[text] >= 150, f"the reference generations are too short to observe a cancellation: {lengths}"
    return text, lengths[text]


#: On a loaded 2-core machine the server can be starved long enough for a whole generation to finish before the
#: cancellation is read; such a round proves nothing either way and is tried again with a fresh document.
ATTEMPTS = 3


async def _supersede_once(client: LanguageClient, llama_server: str, text: str, full: int) -> bool:
    uri = open_doc(client, text)
    cached_first = await complete(client, uri, 0, 4)  # fills the cache for this position
    assert cached_first.items
    # the long generation, in a new document (so not from the cache) …
    older = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(uri, 1, 8)))
    slot = await wait_generating(llama_server, min_decoded=5, pending=older)
    if slot is None:
        await older
        return False
    # … is superseded by a newer request for the same document (answered from the cache at once)
    newer = await complete(client, uri, 0, 4)
    assert [i.insert_text for i in newer.items] == [i.insert_text for i in cached_first.items]
    old_result = await older
    decoded = await _decoded_until_idle(llama_server, slot)
    assert isinstance(old_result, types.InlineCompletionList)  # answered, never dropped
    if old_result.items:
        return False  # it had finished before the newer request was read
    if decoded >= full:
        # as many tokens as the whole uncancelled generation (or more: the slot went on to serve another request):
        # the close came too late to show anything; a round where it never works fails the test below
        return False
    # The generation is deterministic: left alone it decodes exactly `full` tokens. Fewer means our closing of the
    # model stream stopped llama-server (how much sooner depends on the machine's load; the benchmark measures it).
    assert decoded < full
    return True


async def test_newer_request_supersedes_older(client: LanguageClient, llama_server: str):
    text, full = await _long_generation(client, llama_server)
    assert any([await _supersede_once(client, llama_server, text, full) for _ in range(ATTEMPTS)])


async def _cancel_once(client: LanguageClient, llama_server: str, text: str, full: int, n: int) -> bool:
    uri = open_doc(client, text)
    msg_id = f"infill-cancel-test-{n}"
    future = asyncio.ensure_future(client.protocol.send_request_async(
        types.TEXT_DOCUMENT_INLINE_COMPLETION, inline_params(uri, 1, 8), msg_id=msg_id))
    slot = await wait_generating(llama_server, min_decoded=5, pending=future)
    if slot is None:
        await future
        return False
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    try:
        result = await future
    except JsonRpcException as exc:
        assert exc.code == -32800  # RequestCancelled: answered, not dropped
        decoded = await _decoded_until_idle(llama_server, slot)
        if decoded >= full:  # too late to show anything (or the slot served another request): try again
            return False
        assert decoded < full  # deterministic generation stopped before its natural end (see _supersede_once)
        return True
    assert isinstance(result, types.InlineCompletionList)  # finished before the cancellation was read
    await _decoded_until_idle(llama_server, slot)
    return False


async def test_cancel_request_is_honoured(client: LanguageClient, llama_server: str):
    text, full = await _long_generation(client, llama_server)
    assert any([await _cancel_once(client, llama_server, text, full, n) for n in range(ATTEMPTS)])
    # the server keeps working afterwards
    uri2 = open_doc(client, "x = 1\n")
    assert isinstance(await complete(client, uri2, 1, 0), types.InlineCompletionList)


async def test_burst_of_automatic_requests_all_answered(client: LanguageClient):
    uri = open_doc(client, "def burst(n):\n    ")
    futures = [client.text_document_inline_completion_async(inline_params(uri, 1, 4, invoked=False))
               for _ in range(5)]
    results = await asyncio.gather(*futures)
    assert all(isinstance(r, types.InlineCompletionList) for r in results)
    assert all(not r.items for r in results[:-1])  # superseded ones are empty
    assert results[-1].items  # the last one is served
