"""Time-boxed generation: after the budget a completion ends at the next line break (client side and in the
llama-server request). The clock is scripted: each chunk the stream yields advances it by a fixed step, so the
assertions depend on chunk counts, never on the machine's speed."""

from __future__ import annotations

from engine.backends.llama_cpp import completion_body
from engine.timebox import TimeBox
from engine.types import CompletionOptions, CompletionRequest, Prompt, StopReason

from .test_code import ScriptedStream, generation


def test_nothing_is_cut_before_the_budget_or_without_one():
    now = [0.0]
    box = TimeBox(100, clock=lambda: now[0])
    assert box.cut("a\n") == ("a\n", False)  # the first piece starts the clock
    now[0] = 0.05
    assert box.cut("b\nc") == ("b\nc", False)
    assert TimeBox(None).cut("x\ny") == ("x\ny", False)


def test_after_the_budget_the_text_ends_at_the_next_line_break_with_content_before_it():
    now = [0.0]
    box = TimeBox(100, clock=lambda: now[0])
    box.cut("\n")
    now[0] = 0.2
    assert box.cut("\n    ") == ("\n    ", False)  # nothing but blank so far: a line break cannot end it
    assert box.cut("x = 1") == ("x = 1", False)  # no line break yet
    assert box.cut(" + 2\n    y") == (" + 2", True)
    assert box.expired


class Ticking:
    """A clock that advances 100 ms every time it is read (once per chunk)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.1
        return self.now


async def test_code_generation_honours_the_time_box_and_closes_the_stream():
    chunks = ["a = 1\n", "b = 2\n", "c = 3\n", "d = 4\n", "e = 5\n"]
    stream = ScriptedStream(chunks)
    gen = generation(stream)
    gen.clock = Ticking()
    options = CompletionOptions(max_decoding_tokens=64, time_budget_ms=150)
    completion = await gen.generate(CompletionRequest(prefix="def f():\n", language="python"), options)
    # The first piece starts the clock; by the third (≥ 200 ms later) the budget is spent, and the completion ends
    # at the first line break from there: whole lines, fewer than the stream had.
    full = "".join(chunks)
    assert completion.text in ("a = 1\nb = 2", "a = 1\nb = 2\nc = 3")
    assert full.startswith(completion.text + "\n")
    assert completion.stop_reason == StopReason.TIME_BUDGET
    assert stream.yielded < len(chunks) and stream.finalized == 1


async def test_without_a_budget_the_same_generation_runs_to_its_end():
    stream = ScriptedStream(["a = 1\n", "b = 2\n", "c = 3\n"])
    gen = generation(stream)
    gen.clock = Ticking()
    completion = await gen.generate(CompletionRequest(prefix="def f():\n", language="python"),
                                    CompletionOptions(max_decoding_tokens=64))
    assert completion.text.startswith("a = 1\nb = 2\nc = 3")


def test_llama_server_gets_the_budget_and_the_slot():
    prompt = Prompt(text="x", prefix="x", suffix="")
    body = completion_body(prompt, CompletionOptions(time_budget_ms=300, slot=1), use_infill=True)
    assert body["t_max_predict_ms"] == 300 and body["id_slot"] == 1
    plain = completion_body(prompt, CompletionOptions(), use_infill=True)
    assert "t_max_predict_ms" not in plain and "id_slot" not in plain
