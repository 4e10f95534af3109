"""Files changed on disk after initialize, end to end: the real server registers file watchers with a client that
can watch files, and a file written into the workspace folder afterwards reaches the prompt llama-server receives
once the client reports it with `workspace/didChangeWatchedFiles`; after its deletion is reported it is gone again.
A client that never declared the capability may still send the notification, and it is taken.

Waiting is done by polling the `infill/context` status until the server has counted the event as handled (the
overall cap is a hang guard, not a speed assertion)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .lsp_support import capabilities, complete, config, remote_options
from .test_lsp_context import OTHER, RecordingProxy

pytestmark = pytest.mark.llama_server

CURRENT = "def bill_customer(invoice_lines, tax_rate):\n    total = compute_invoice_total("
#: A hang guard for each wait (the conditions are counted events; on an idle machine they hold within a second or two).
HANG_GUARD_S = 120.0


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient):
    registrations: list[Any] = []

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def on_register(params: types.RegistrationParams) -> None:
        registrations.extend(params.registrations)

    lsp_client.registrations = registrations  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.fixture
async def proxy(llama_server: str):
    recorder = RecordingProxy(llama_server)
    recorder.url = await recorder.start()  # type: ignore[attr-defined]
    yield recorder
    await recorder.close()


async def initialize(client: LanguageClient, folder: Path, base_url: str, watch: bool) -> None:
    caps = capabilities()
    assert caps.workspace is not None
    if watch:
        caps.workspace.did_change_watched_files = types.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=True)
    options = remote_options(base_url, max_tokens=4, temperature=0.0, context={"warm_cache": False},
                             speculation={"prefetch": False})
    await client.initialize_session(types.InitializeParams(
        capabilities=caps, initialization_options=options,
        workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)]))


async def status(client: LanguageClient) -> Any:
    return await client.protocol.send_request_async("infill/context", {})


async def wait_for(client: LanguageClient, what: str, condition) -> Any:
    deadline = asyncio.get_running_loop().time() + HANG_GUARD_S
    while True:
        report = await status(client)
        if condition(report):
            return report
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what}: not within {HANG_GUARD_S} s; last status {report}")
        await asyncio.sleep(0.05)


def report_file(client: LanguageClient, path: Path, change: types.FileChangeType) -> None:
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=path.as_uri(), type=change)]))


async def complete_in_a_new_document(client: LanguageClient, folder: Path, name: str) -> list[tuple[str, str]]:
    """Complete after `compute_invoice_total(` in a document of its own (a fresh one each time: the completion cache
    keys on the document and its text), close it, and return (file, source) of the snippets the request used."""
    uri = (folder / name).as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=CURRENT)))
    await complete(client, uri, 1, len("    total = compute_invoice_total("))
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return [(s.filename, s.source) for s in (await status(client)).last_request.snippets]


async def test_a_file_written_after_initialize_reaches_the_prompt_and_leaves_it_when_deleted(client, proxy, tmp_path):
    (tmp_path / "util.py").write_text("def unrelated_helper(value):\n    return value\n")
    await initialize(client, tmp_path, proxy.url, watch=True)
    ready = await wait_for(client, "scan and registration",
                           lambda r: r.scan_done and r.disk.mode == "events")
    assert ready.files_indexed == 1
    registration, = client.registrations  # type: ignore[attr-defined]
    assert registration.method == "workspace/didChangeWatchedFiles"
    patterns = [w["globPattern"] for w in registration.register_options["watchers"]]
    assert "**/.gitignore" in patterns and any(p.startswith("**/*.{") and ",py," in p for p in patterns)

    assert "invoices.py" not in dict(await complete_in_a_new_document(client, tmp_path, "customer_1.py"))

    invoices = tmp_path / "invoices.py"
    invoices.write_text(OTHER)
    report_file(client, invoices, types.FileChangeType.Created)
    added = await wait_for(client, "the created file indexed", lambda r: r.disk.updated >= 1)
    assert added.files_indexed == 2 and added.disk.events == 1
    assert ("invoices.py", "definition") in await complete_in_a_new_document(client, tmp_path, "customer_2.py")
    body = proxy.completions()[-1][0]
    assert [e["filename"] for e in body["input_extra"]] == ["invoices.py"]
    assert "def compute_invoice_total(invoice_lines, tax_rate):" in body["input_extra"][0]["text"]

    invoices.unlink()
    report_file(client, invoices, types.FileChangeType.Deleted)
    removed = await wait_for(client, "the deleted file dropped", lambda r: r.disk.removed >= 1)
    assert removed.files_indexed == 1 and removed.disk.events == 2
    assert "invoices.py" not in dict(await complete_in_a_new_document(client, tmp_path, "customer_3.py"))
    bodies = [body for body, _ in proxy.completions()]
    assert len(bodies) == 3 and "compute_invoice_total(invoice_lines" not in str(bodies[-1].get("input_extra"))


async def test_the_notification_is_taken_without_a_registration(client, llama_server, tmp_path):
    await initialize(client, tmp_path, llama_server, watch=False)
    ready = await wait_for(client, "scan", lambda r: r.scan_done)
    assert ready.files_indexed == 0 and ready.disk.mode == "recheck"
    assert client.registrations == []  # type: ignore[attr-defined]
    written = tmp_path / "pkg" / "invoices.py"
    written.parent.mkdir()
    written.write_text(OTHER)
    report_file(client, written, types.FileChangeType.Created)
    added = await wait_for(client, "the created file indexed", lambda r: r.disk.updated >= 1)
    assert added.files_indexed == 1 and added.definitions == 1
