"""The two start-up faults of issue 24: a request made while the engine starts gets its workspace context, and the
start ends in one `ready` status, not two."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.api import Engine
from engine.config import EngineConfig, ModelConfig
from engine.prompt import PromptTemplate
from engine.types import Completion, CompletionOptions, CompletionRequest, StatusEvent, StopReason
from lsp_server.config import ServerSettings
from lsp_server.context import build_context
from lsp_server.documents import UTF32, Document
from lsp_server.pipeline import CompletionService
from lsp_server.workspace import ContextSettings
from lsp_server.workspace.provider import WorkspaceContext

from tests.lsp_server.context_doubles import Doc, Generation

GEOMETRY = "import math\n\n\ndef area_of_circle(radius):\n    return math.pi * radius * radius\n"
MAIN = "from shapes.geometry import area_of_circle\n\n\ndef report(radius):\n    area = area_of_circle(radius)\n    "


class StartingEngine:
    """An engine that becomes ready only when the test says so: `generation` is None until then, as in Engine."""

    def __init__(self, config: EngineConfig, on_status) -> None:
        self.ready = asyncio.Event()
        self.generation: Generation | None = None
        self.requests: list[CompletionRequest] = []

    async def start(self) -> None:
        pass

    async def wait_ready(self, timeout: float) -> None:
        await asyncio.wait_for(self.ready.wait(), timeout)

    def become_ready(self) -> None:
        self.generation = Generation(PromptTemplate.from_setting(None))
        self.ready.set()

    async def complete(self, request: CompletionRequest, options: CompletionOptions, ready_timeout: float = 120.0,
                       deadline: float | None = None, on_text=None) -> Completion:
        await self.wait_ready(ready_timeout)
        self.requests.append(request)
        return Completion("return area", StopReason.END_OF_STREAM)

    async def close(self) -> None:
        pass


async def test_a_request_made_while_the_engine_starts_gets_its_workspace_context(tmp_path: Path):
    (tmp_path / "shapes").mkdir()
    (tmp_path / "shapes" / "geometry.py").write_text(GEOMETRY)
    docs: dict[str, Doc] = {}
    workspace = WorkspaceContext(ContextSettings(), docs, ())
    workspace.set_folders([str(tmp_path)])
    await workspace.wait_scanned()
    uri = (tmp_path / "main.py").as_uri()
    docs[uri] = Doc(MAIN)
    workspace.opened(uri)

    engines: list[StartingEngine] = []
    service = CompletionService(ServerSettings(), engine_factory=lambda cfg, on_status: engines.append(
        StartingEngine(cfg, on_status)) or engines[-1])
    service.workspace = workspace
    await service.start()
    ctx = build_context(Document(uri, MAIN, "python"), 5, 4, UTF32, policy="never", indent_unit="    ",
                        filepath=str(tmp_path / "main.py"))
    request = asyncio.ensure_future(service.compute(ctx))
    for _ in range(20):  # the request is waiting for the model: give it every chance to have moved on
        await asyncio.sleep(0)
    assert not request.done()
    engines[0].become_ready()
    assert await request == ["return area"]
    sent = engines[0].requests[0]
    assert [snippet.filename for snippet in sent.context] == ["shapes/geometry.py"]
    assert "def area_of_circle(radius):" in sent.context[0].text
    await workspace.close()


class FakeStream:
    async def close(self) -> None:
        pass


class FakeLocalServer:
    """What Engine takes from engine.local.server.start_local_server: the server reports itself ready (as the
    supervisor does when llama-server answers /health) before the engine has finished its own start."""

    failed_reason = None

    def completion_stream(self, cfg=None):
        return FakeStream()

    async def count_tokens(self, text: str) -> int:
        return len(text)

    def prompt_template(self, cfg=None) -> PromptTemplate:
        return PromptTemplate.from_setting(None)

    def describe(self) -> str | None:
        return None  # not shared with other Infill processes

    async def close(self) -> None:
        pass


async def test_the_start_ends_in_one_ready_status(monkeypatch):
    import engine.local.server as local_server

    async def start_local_server(cfg, engine_cfg, on_status=None):
        on_status(StatusEvent("starting", "Starting llama-server with tiny.gguf", percent=0))
        on_status(StatusEvent("ready", "llama-server is ready (tiny.gguf)", percent=100))
        await asyncio.sleep(0)  # the FIM probe and the rest of the engine's start
        return FakeLocalServer()

    monkeypatch.setattr(local_server, "start_local_server", start_local_server)
    events: list[StatusEvent] = []
    engine = Engine(EngineConfig(completion=ModelConfig(kind="local")), events.append)
    await engine.start()
    await engine.wait_ready(10.0)
    assert [e.kind for e in events].count("ready") == 1
    assert events[-1] == StatusEvent("ready", "Infill is ready")
    # the server's own readiness is still shown, as the last step of the start
    assert StatusEvent("starting", "llama-server is ready (tiny.gguf)", percent=100) in events
    await engine.close()
