"""Workspace context end to end: the real LSP server, the real llama-server with the tiny model, and a recording
proxy between them, so the test sees exactly what llama-server received (the request body, and the prompt text
llama-server reports having evaluated in its final event).

With two documents open, a completion in one carries the other's code in the prompt form of the backend:
`/infill` input_extra, path-labelled blocks for a prefix-only model, the Qwen repository form for a template; a
document matching an exclusion glob never reaches llama-server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .lsp_support import capabilities, complete, config, open_doc

pytestmark = pytest.mark.llama_server

OTHER = ("def compute_invoice_total(invoice_lines, tax_rate):\n"
         "    subtotal = sum(line.amount for line in invoice_lines)\n"
         "    return subtotal * (1 + tax_rate)\n")
SECRET = ("def compute_invoice_total(invoice_lines, tax_rate):\n"
          "    api_token = 'TOKEN_NEVER_SENT'\n"
          "    return api_token\n")
CURRENT = "def bill_customer(invoice_lines, tax_rate):\n    total = compute_invoice_total("


class RecordingProxy:
    """A loopback HTTP/1.1 proxy to llama-server that keeps every request body and every reply."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.exchanges: list[tuple[str, dict[str, Any], bytes]] = []
        self._server: asyncio.base_events.Server | None = None
        self._http = httpx.AsyncClient(timeout=60.0, trust_env=False)

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            method, path, _ = request_line.split(" ", 2)
            headers = dict(line.split(": ", 1) for line in header_lines if ": " in line)
            length = int(headers.get("Content-Length") or headers.get("content-length") or 0)
            body = await reader.readexactly(length) if length else b""
            reply = await self._http.request(method, self.target + path, content=body,
                                             headers={"Content-Type": "application/json"})
            if body:
                self.exchanges.append((path, json.loads(body), reply.content))
            writer.write(f"HTTP/1.1 {reply.status_code} OK\r\nContent-Type: {reply.headers.get('content-type')}"
                         f"\r\nContent-Length: {len(reply.content)}\r\nConnection: close\r\n\r\n".encode())
            writer.write(reply.content)
            await writer.drain()
        finally:
            writer.close()

    def completions(self) -> list[tuple[dict[str, Any], str]]:
        """(request body, the prompt llama-server says it evaluated) for every generating request."""
        out = []
        for path, body, reply in self.exchanges:
            if path not in ("/infill", "/completion") or body.get("n_predict") == 0:
                continue
            events = [json.loads(line[5:]) for line in reply.decode().splitlines() if line.startswith("data:")]
            final = next((e for e in reversed(events) if e.get("stop")), {})
            out.append((body, final.get("prompt", "")))
        return out

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        await self._http.aclose()


@pytest.fixture
async def proxy(llama_server: str):
    recorder = RecordingProxy(llama_server)
    url = await recorder.start()
    recorder.url = url  # type: ignore[attr-defined]
    yield recorder
    await recorder.close()


async def run_session(lsp_client: LanguageClient, proxy: RecordingProxy, completion: dict[str, Any]) -> None:
    options = {"completion": {"api_endpoint": proxy.url, **completion},  # type: ignore[attr-defined]
               "max_tokens": 4, "temperature": 0.0, "debounce": {"mode": "fixed", "fixed_ms": 0},
               "exclude": ["*private*"], "context": {"warm_cache": False},
               # One prompt per test: a prefetch (the state after accepting) would be a second.
               "speculation": {"prefetch": False}}
    await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities(),
                                                               initialization_options=options))
    open_doc(lsp_client, OTHER, name="invoices.py")
    open_doc(lsp_client, SECRET, name="private_billing.py")
    uri = open_doc(lsp_client, CURRENT, name="customer.py")
    await complete(lsp_client, uri, 1, len("    total = compute_invoice_total("))
    report = await lsp_client.protocol.send_request_async("infill/context", {})
    lsp_client.context_report = report  # type: ignore[attr-defined]


def assert_no_secret(proxy: RecordingProxy) -> None:
    for _path, body, reply in proxy.exchanges:
        assert "TOKEN_NEVER_SENT" not in json.dumps(body) and b"TOKEN_NEVER_SENT" not in reply
        assert "private_billing" not in json.dumps(body)


@pytest_lsp.fixture(config=config())
async def lsp_client_fixture(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_infill_carries_the_other_document_as_input_extra(lsp_client_fixture, proxy):
    await run_session(lsp_client_fixture, proxy, {"kind": "llama.cpp/infill"})
    (body, evaluated), = proxy.completions()
    extra = body["input_extra"]
    assert [e["filename"] for e in extra] == ["invoices.py"]
    assert "def compute_invoice_total(invoice_lines, tax_rate):" in extra[0]["text"]
    # llama-server put it in front of the FIM prefix (the tiny model has no <file_sep>: "--- snippet ---" blocks)
    assert evaluated.index("def compute_invoice_total(invoice_lines, tax_rate):") < evaluated.index("<fim_prefix>")
    assert_no_secret(proxy)
    # the status request says what context the last request used
    last = lsp_client_fixture.context_report.last_request
    assert [(s.filename, s.source) for s in last.snippets] == [("invoices.py", "definition")]


async def test_prefix_only_model_gets_path_labelled_blocks(lsp_client_fixture, proxy):
    await run_session(lsp_client_fixture, proxy, {"kind": "llama.cpp/completion", "prompt_template": "prefix-only"})
    (body, evaluated), = proxy.completions()
    assert body["prompt"].startswith("# Path: invoices.py\ndef compute_invoice_total(invoice_lines, tax_rate):")
    assert body["prompt"].endswith("# Path: customer.py\n" + CURRENT)
    assert "# Path: invoices.py" in evaluated
    assert_no_secret(proxy)


async def test_qwen_template_gets_its_repository_form(lsp_client_fixture, proxy):
    await run_session(lsp_client_fixture, proxy, {"kind": "llama.cpp/completion", "prompt_template": "qwen2.5-coder"})
    (body, evaluated), = proxy.completions()
    assert body["prompt"].startswith("<|repo_name|>")
    assert "<|file_sep|>invoices.py\ndef compute_invoice_total(invoice_lines, tax_rate):" in body["prompt"]
    assert "<|file_sep|>customer.py\n<|fim_prefix|>" + CURRENT in body["prompt"]
    assert "<|file_sep|>invoices.py" in evaluated
    assert_no_secret(proxy)


async def test_idle_server_warms_llama_server_with_the_new_context(lsp_client_fixture, proxy):
    client = lsp_client_fixture
    # `shared: false`: a llama-server Infill did not start gets warm-ups only when the user says it is theirs alone
    options = {"completion": {"kind": "llama.cpp/infill", "api_endpoint": proxy.url,  # type: ignore[attr-defined]
                              "shared": False},
               "max_tokens": 4, "temperature": 0.0, "debounce": {"mode": "fixed", "fixed_ms": 0},
               "speculation": {"prefetch": False}}
    await client.initialize_session(types.InitializeParams(capabilities=capabilities(),
                                                           initialization_options=options))
    other = open_doc(client, OTHER, name="invoices.py")
    uri = open_doc(client, CURRENT, name="customer.py")
    await complete(client, uri, 1, len("    total = compute_invoice_total("))
    # An edit elsewhere changes the context; at the next flush, with no request running, the server prefills it.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=other, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text=OTHER + "\n\ndef invoice_discount(invoice_lines):\n    return 0\n")]))
    deadline = asyncio.get_running_loop().time() + 60  # a safety net, not a speed assertion
    warm: list[dict] = []
    while not warm and asyncio.get_running_loop().time() < deadline:
        warm = [body for path, body, _ in proxy.exchanges if path == "/infill" and body.get("n_predict") == 0]
        await asyncio.sleep(0.05)
    assert warm, "no n_predict 0 request reached llama-server"
    # The last request's own prompt (issue 27: a bare context block with an empty prefix looked like a completion
    # that had lost the text before the cursor), with the context chosen after the edit.
    assert warm[-1]["input_prefix"] == CURRENT and [e["filename"] for e in warm[-1]["input_extra"]] == ["invoices.py"]
