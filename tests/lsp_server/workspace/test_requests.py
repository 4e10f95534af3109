"""Attaching context to engine requests: nothing changes when there is nothing to add, or when choosing fails."""

from __future__ import annotations

from dataclasses import dataclass

from engine.prompt import PromptTemplate
from engine.types import CompletionRequest
from lsp_server.workspace import ContextSettings, WorkspaceContext
from lsp_server.workspace.requests import attach, prompt_lines


@dataclass
class Doc:
    text: str
    language_id: str = "python"


@dataclass
class Generation:
    template: PromptTemplate
    max_prefix_tokens: int = 1024
    max_suffix_tokens: int = 256
    count_tokens: object = None


REQUEST = CompletionRequest(prefix="def add(a, b):\n    return ", suffix="\n", language="python")


async def test_a_lone_file_gets_exactly_the_same_request_so_in_file_quality_cannot_change():
    docs = {"file:///w/a.py": Doc(REQUEST.prefix + REQUEST.suffix)}
    ws = WorkspaceContext(ContextSettings(), docs)
    ws.opened("file:///w/a.py")
    assert await attach(ws, REQUEST, "file:///w/a.py", 1, Generation(PromptTemplate.from_setting(None))) is REQUEST


async def test_context_turned_off_or_failing_leaves_the_request_alone():
    docs = {"file:///w/a.py": Doc(REQUEST.prefix), "file:///w/b.py": Doc("def add(a, b):\n    return a + b\n")}
    off = WorkspaceContext(ContextSettings(enabled=False), docs)
    generation = Generation(PromptTemplate.from_setting(None))
    assert await attach(off, REQUEST, "file:///w/a.py", 1, generation) is REQUEST

    class Broken(WorkspaceContext):
        async def select(self, *args, **kwargs):
            raise RuntimeError("index broken")

    broken = Broken(ContextSettings(), docs)
    assert await attach(broken, REQUEST, "file:///w/a.py", 1, generation) is REQUEST


async def test_another_document_is_attached_with_labels():
    docs = {"file:///w/a.py": Doc("total = compute_invoice_total("),
            "file:///w/b.py": Doc("def compute_invoice_total(invoice_lines):\n    return sum(invoice_lines)\n")}
    ws = WorkspaceContext(ContextSettings(), docs)
    for uri in docs:
        ws.opened(uri)
    request = CompletionRequest(prefix=docs["file:///w/a.py"].text, language="python")
    out = await attach(ws, request, "file:///w/a.py", 0, Generation(PromptTemplate.from_setting(None)))
    assert [s.filename for s in out.context] == ["b.py"] and out.relative_path == "a.py"


def test_prompt_lines_cover_what_the_prompt_shows():
    prefix = "".join(f"line {i}\n" for i in range(100))
    assert prompt_lines(prefix, "a\nb\nc\n", 100, 1024, 256, prefix_only=True) == (0, 101)
    assert prompt_lines(prefix, "a\nb\nc\n", 100, 5, 256, prefix_only=False) == (97, 105)
