"""The real llama-server with the tiny test model: a next-edit request sends the prompt in the chosen form to
`/completion` (the tiny model has FIM tokens, so completions go to `/infill`; next edits must not), as llama-server
itself reports it (with LLAMA_SERVER_SLOTS_DEBUG, `/slots` shows each slot's prompt and generated text).

The tiny model never ends by itself (its end tokens can never win), so every answer runs into max_tokens: the
pipeline must call it truncated and propose nothing."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from engine.api import Engine
from engine.config import EngineConfig, LocalServerSettings, ModelConfig
from engine.next_edit.formats import render
from engine.next_edit.types import EditEvent, NextEditOptions, NextEditRequest
from tests.fixtures.llama import SLOTS_DEBUG

pytestmark = pytest.mark.llama_server

TEXT = "def f(a, b):\n    return a + b\n\nprint(f(1, 2))\n"
REQUEST = NextEditRequest(path="m.py", language="python", text=TEXT, cursor=TEXT.index("print"),
                          history=(EditEvent("m.py", 0, "def f(a):\n", "def f(a, b):\n"),))


async def test_the_prompt_in_the_chosen_form_reaches_completion(llama_server_binary: str, tiny_model: Path,
                                                                tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(*SLOTS_DEBUG)  # the child inherits it
    local = LocalServerSettings(binary=llama_server_binary, parallel=1, ctx_size=2048, start_timeout=60.0)
    engine = Engine(EngineConfig(completion=ModelConfig(kind="local", model=str(tiny_model), local=local),
                                 model_cache_dir=str(tmp_path)))
    try:
        await engine.start()
        for name in ("sweep", "zeta2"):
            options = NextEditOptions(format=name, max_tokens=8)
            prediction = await engine.predict_next_edit(REQUEST, options, ready_timeout=120, request_timeout=120)
            assert engine.generation is not None and engine.generation.stream.use_infill  # completions: /infill
            async with httpx.AsyncClient() as client:
                slots = (await client.get(f"{engine._local.endpoint}/slots")).json()  # type: ignore[union-attr]
            expected = render(REQUEST, options, name).text
            assert [s["prompt"] for s in slots] == [expected]
            assert slots[0]["params"]["n_predict"] == 8 and slots[0]["params"]["temperature"] == 0.0
            assert prediction.format == name and prediction.prompt == expected
            assert prediction.raw == slots[0]["generated"]  # the whole answer reached the pipeline
            assert prediction.edit is None and prediction.reason == "truncated"
        # auto: the tiny model is no NES model (and its name says nothing): the fallback form
        assert engine.next_edit_format(NextEditOptions()) == "sweep"
    finally:
        await engine.close()
