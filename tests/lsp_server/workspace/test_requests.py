"""Attaching context to engine requests: nothing changes when there is nothing to add, or when choosing fails; and
warming the model server's cache with the last request (issue 27: never a bare context block with an empty prefix)."""

from __future__ import annotations


from engine.prompt import PromptTemplate
from engine.types import CompletionRequest
from lsp_server.workspace import ContextSettings
from lsp_server.workspace.provider import WorkspaceContext
from lsp_server.workspace.requests import attach, prompt_lines, warm

from tests.lsp_server.context_doubles import Doc, Generation


REQUEST = CompletionRequest(prefix="def add(a, b):\n    return ", suffix="\n", language="python")


async def test_a_lone_file_gets_exactly_the_same_request_so_in_file_quality_cannot_change():
    docs = {"file:///w/a.py": Doc(REQUEST.prefix + REQUEST.suffix)}
    ws = WorkspaceContext(ContextSettings(), docs)
    ws.opened("file:///w/a.py")
    assert await attach(ws, REQUEST, "file:///w/a.py", 1, Generation(PromptTemplate.from_setting(None))) is REQUEST


async def test_a_lone_file_with_code_below_gets_only_the_after_the_cursor_block_and_only_for_a_prefix_only_model():
    request = CompletionRequest(prefix="def add(a, b):\n    total = ", suffix="\n    return total\n",
                                language="python")
    docs = {"file:///w/a.py": Doc(request.prefix + request.suffix)}
    ws = WorkspaceContext(ContextSettings(), docs)
    ws.opened("file:///w/a.py")
    fim = Generation(PromptTemplate.from_setting("codegemma"))
    assert await attach(ws, request, "file:///w/a.py", 1, fim) is request  # a FIM model sees the suffix itself
    attached = await attach(ws, request, "file:///w/a.py", 1, Generation(PromptTemplate.from_setting(None)))
    assert [(s.filename, s.text) for s in attached.context] == [("a.py (after the cursor)", "    return total")]
    assert (attached.prefix, attached.suffix) == (request.prefix, request.suffix)


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


class WarmEngine:
    """An engine that records the warm-ups it is asked for."""

    def __init__(self) -> None:
        self.generation = Generation(PromptTemplate.from_setting(None))
        self.warmed: list[CompletionRequest] = []

    async def warm(self, request: CompletionRequest) -> bool:
        self.warmed.append(request)
        return True


INVOICES = {"file:///w/a.py": Doc("total = compute_invoice_total("),
            "file:///w/b.py": Doc("def compute_invoice_total(invoice_lines):\n    return sum(invoice_lines)\n")}


def invoices_workspace() -> WorkspaceContext:
    ws = WorkspaceContext(ContextSettings(), INVOICES)
    for uri in INVOICES:
        ws.opened(uri)
    return ws


async def test_a_warm_up_sends_the_last_request_again_with_the_context_chosen_now():
    ws, engine = invoices_workspace(), WarmEngine()
    request = CompletionRequest(prefix="total = compute_invoice_total(", suffix=")\n", language="python",
                                filepath="/w/a.py")
    assert (await attach(ws, request, "file:///w/a.py", 0, engine.generation)).context
    assert await warm(ws, engine)
    (sent,) = engine.warmed
    # The text before and after the cursor as the request had it: a model server's log shows a real prompt.
    assert (sent.prefix, sent.suffix, sent.filepath) == (request.prefix, request.suffix, request.filepath)
    assert [s.filename for s in sent.context] == ["b.py"] and sent.relative_path == "a.py"
    assert not await warm(ws, engine) and len(engine.warmed) == 1  # the same context again: nothing to prefill


async def test_no_warm_up_for_a_cursor_with_nothing_before_it():
    ws, engine = invoices_workspace(), WarmEngine()
    request = CompletionRequest(prefix="", suffix="total = compute_invoice_total(\n", language="python")
    assert (await attach(ws, request, "file:///w/a.py", 0, engine.generation)).context  # there is context to warm
    assert not await warm(ws, engine)
    assert engine.warmed == []


async def test_a_warm_up_the_server_held_is_tried_again_with_the_same_context():
    """A warm-up the engine did not send (held) is not remembered as prefilled, so the next change tries it again."""
    from engine.errors import SpeculationHeld

    class HoldingEngine(WarmEngine):
        held = 1

        async def warm(self, request: CompletionRequest) -> bool:
            if self.held:
                self.held -= 1
                raise SpeculationHeld("llama.cpp", "cache warm-up not sent: the server is busy")
            return await super().warm(request)

    ws, engine = invoices_workspace(), HoldingEngine()
    request = CompletionRequest(prefix="total = compute_invoice_total(", suffix=")\n", language="python")
    assert (await attach(ws, request, "file:///w/a.py", 0, engine.generation)).context
    assert not await warm(ws, engine) and engine.warmed == []
    assert await warm(ws, engine) and len(engine.warmed) == 1
    assert not await warm(ws, engine) and len(engine.warmed) == 1
