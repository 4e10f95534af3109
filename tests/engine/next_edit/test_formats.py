"""Each prompt form rendered exactly as the notes and the reference implementations give it (whole strings), the
reserved-token refusals, and the format choice."""

from __future__ import annotations

import pytest

from engine.next_edit.formats import PromptRefused, choose_format, is_next_edit_model, render
from engine.next_edit.types import EditEvent, NextEditOptions, NextEditRequest
from engine.types import ContextSnippet


def test_sweep_follows_the_run_model_ordering():
    """Zed's test_build_prompt_uses_run_model_ordering (sweep_prompt.rs @24e24d8), with the current file's own
    edit as a second diff block (it is an event of the history like any other)."""
    request = NextEditRequest(
        path="src/main.rs", language="rust", text="current window", cursor=3,
        history=(EditEvent("src/main.rs", 0, "old window\n", "current window\n"),
                 EditEvent("src/lib.rs", 0, "old\n", "new\n")),
        excerpts=(ContextSnippet("src/context.rs", "context"),))
    assert render(request, NextEditOptions(), "sweep").text == (
        "<|file_sep|>src/context.rs\n"
        "context\n"
        "<|file_sep|>src/main.rs.diff\n"
        "original:\n"
        "old window\n"
        "updated:\n"
        "current window\n"
        "<|file_sep|>src/lib.rs.diff\n"
        "original:\n"
        "old\n"
        "updated:\n"
        "new\n"
        "<|file_sep|>original/src/main.rs\n"
        "old window\n"
        "<|file_sep|>current/src/main.rs\n"
        "current window\n"
        "<|file_sep|>updated/src/main.rs\n")


def _numbered(count: int) -> str:
    return "".join(f"line {i}\n" for i in range(count))


def test_sweep_window_is_ten_lines_the_cursor_line_and_ten_more():
    text = _numbered(40)
    request = NextEditRequest(path="a.py", language="python", text=text, cursor=text.index("line 20") + 2)
    prompt = render(request, NextEditOptions(), "sweep").text
    window = "".join(f"line {i}\n" for i in range(10, 31))
    assert prompt == f"<|file_sep|>original/a.py\n{window}<|file_sep|>current/a.py\n{window}<|file_sep|>updated/a.py\n"


def test_sweep_history_is_the_newest_three_oldest_first_each_side_at_most_40_lines():
    events = tuple(EditEvent("b.py", 0, f"old {i}\n", f"new {i}\n") for i in range(5))
    long = EditEvent("c.py", 0, _numbered(50), "")
    request = NextEditRequest(path="a.py", language="python", text="x\n", cursor=0, history=events[:4] + (long,))
    prompt = render(request, NextEditOptions(), "sweep").text
    kept = "".join(f"<|file_sep|>b.py.diff\noriginal:\nold {i}\nupdated:\nnew {i}\n" for i in (2, 3))
    elided = "".join(f"line {i}\n" for i in range(20)) + "...\n" + "".join(f"line {i}\n" for i in range(31, 50))
    long_block = f"<|file_sep|>c.py.diff\noriginal:\n{elided}updated:\n\n"
    assert prompt.startswith(kept + long_block + "<|file_sep|>original/a.py\n")


def test_sweep_original_window_reverts_the_newest_edit_of_this_file_only():
    text = "a\nB = 2\nc\n"
    history = (EditEvent("a.py", 1, "b = 1\n", "B = 1\n"),  # older: not reverted
               EditEvent("other.py", 0, "x\n", "y\n"),
               EditEvent("a.py", 1, "B = 1\n", "B = 2\n"))
    request = NextEditRequest(path="a.py", language="python", text=text, cursor=0, history=history)
    prompt = render(request, NextEditOptions(), "sweep").text
    assert "<|file_sep|>original/a.py\na\nB = 1\nc\n<|file_sep|>current/a.py\na\nB = 2\nc\n" in prompt


def test_sweep_original_window_maps_an_inserted_block_out():
    text = "a\nnew 1\nnew 2\nb\n"
    request = NextEditRequest(path="a.py", language="python", text=text, cursor=0,
                              history=(EditEvent("a.py", 1, "", "new 1\nnew 2\n"),))
    prompt = render(request, NextEditOptions(), "sweep").text
    assert "<|file_sep|>original/a.py\na\nb\n<|file_sep|>current/a.py\na\nnew 1\nnew 2\nb\n" in prompt


def test_sweep_stale_history_event_leaves_the_original_as_the_current_window():
    request = NextEditRequest(path="a.py", language="python", text="a\nb\n", cursor=0,
                              history=(EditEvent("a.py", 0, "x\n", "not in the file\n"),))
    prompt = render(request, NextEditOptions(), "sweep").text
    assert "<|file_sep|>original/a.py\na\nb\n<|file_sep|>current/a.py\na\nb\n" in prompt


@pytest.mark.parametrize("field", ["text", "history", "excerpt", "path"])
def test_sweep_refuses_fields_with_its_tokens(field):
    token = "<|file_sep|>" if field != "excerpt" else "</s>"
    request = NextEditRequest(path="a.py", language="python", text="x = 1\n", cursor=0)
    if field == "text":
        request = NextEditRequest(path="a.py", language="python", text=f"x = '{token}'\n", cursor=0)
    elif field == "history":
        request = NextEditRequest(path="a.py", language="python", text="x\n", cursor=0,
                                  history=(EditEvent("b.py", 0, f"{token}\n", "y\n"),))
    elif field == "excerpt":
        request = NextEditRequest(path="a.py", language="python", text="x\n", cursor=0,
                                  excerpts=(ContextSnippet("b.py", f"s = '{token}'"),))
    else:
        request = NextEditRequest(path=f"a{token}.py", language="python", text="x\n", cursor=0)
    with pytest.raises(PromptRefused, match="reserved token of the sweep prompt"):
        render(request, NextEditOptions(), "sweep")


def test_a_token_outside_the_window_does_not_refuse_the_request():
    text = "s = '<|file_sep|>'\n" + _numbered(30)
    request = NextEditRequest(path="a.py", language="python", text=text, cursor=text.index("line 25"))
    assert "<|file_sep|>current/a.py\nline 15\n" in render(request, NextEditOptions(), "sweep").text


def test_zeta2_is_the_seed_coder_v0211_layout():
    """The layout of the seed_coder module's doc comment: suffix first, then the other files, the edit history and
    the code before the region, the region between merge markers with the cursor, the middle token."""
    text = "a\nb\nc\nd\ne\n"
    request = NextEditRequest(path="m.py", language="python", text=text, cursor=text.index("c") + 1,
                              history=(EditEvent("m.py", 2, "C\n", "c\n"),),
                              excerpts=(ContextSnippet("other.py", "x = 1"),))
    prompt = render(request, NextEditOptions(lines_above=1, lines_below=1), "zeta2").text
    assert prompt == (
        "<[fim-suffix]>e\n"
        "<[fim-prefix]><filename>other.py\n"
        "x = 1\n"
        "\n"
        "<filename>edit_history\n"
        "--- a/m.py\n"
        "+++ b/m.py\n"
        "@@ -3,1 +3,1 @@\n"
        "-C\n"
        "+c\n"
        "\n"
        "<filename>m.py\n"
        "a\n"
        "<<<<<<< CURRENT\n"
        "b\n"
        "c<|user_cursor|>\n"
        "d\n"
        "=======\n"
        "<[fim-middle]>")


def test_zeta2_without_context_history_or_suffix():
    request = NextEditRequest(path="m.py", language="python", text="only", cursor=4)
    assert render(request, NextEditOptions(), "zeta2").text == (
        "<[fim-suffix]>\n<[fim-prefix]><filename>m.py\n<<<<<<< CURRENT\nonly<|user_cursor|>\n=======\n<[fim-middle]>")


def test_zeta2_history_shows_common_lines_as_context():
    request = NextEditRequest(path="m.py", language="python", text="x\n", cursor=0,
                              history=(EditEvent("m.py", 4, "def f(a):\n    return a\n",
                                                 "def f(a, b):\n    return a\n"),))
    prompt = render(request, NextEditOptions(), "zeta2").text
    assert "--- a/m.py\n+++ b/m.py\n@@ -5,2 +5,2 @@\n-def f(a):\n+def f(a, b):\n     return a\n\n" in prompt


def test_zeta2_refuses_merge_markers_as_lines_in_the_window():
    request = NextEditRequest(path="m.py", language="python", text="a\n=======\nb\n", cursor=0)
    with pytest.raises(PromptRefused, match="'=======', a marker of the zeta2 prompt"):
        render(request, NextEditOptions(), "zeta2")
    inline = NextEditRequest(path="m.py", language="python", text="s = '======='\n", cursor=0)
    assert "s = '======='" in render(request=inline, options=NextEditOptions(), name="zeta2").text


def test_instruction_messages():
    text = "def f(a, b):\n    return a\n"
    request = NextEditRequest(path="m.py", language="python", text=text, cursor=text.index("return"),
                              history=(EditEvent("m.py", 0, "def f(a):\n", "def f(a, b):\n"),),
                              excerpts=(ContextSnippet("u.py", "f(1)\n"),))
    rendered = render(request, NextEditOptions(), "instruction")
    system, user = rendered.messages
    assert system.role == "system" and "between a line <updated> and a line </updated>" in system.content
    assert user.role == "user"
    assert user.content == (
        "Code from other files:\n"
        "--- u.py\n"
        "f(1)\n"
        "\n"
        "Recent edits, oldest first:\n"
        "--- a/m.py\n"
        "+++ b/m.py\n"
        "@@ -1,1 +1,1 @@\n"
        "-def f(a):\n"
        "+def f(a, b):\n"
        "\n"
        "The window of m.py (python):\n"
        "<current>\n"
        "def f(a, b):\n"
        "    <|cursor|>return a\n"
        "</current>\n")
    assert rendered.text == ""


def test_window_options_size_the_window():
    text = _numbered(40)
    request = NextEditRequest(path="a.py", language="python", text=text, cursor=text.index("line 20"))
    prompt = render(request, NextEditOptions(lines_above=2, lines_below=1), "sweep").text
    assert "<|file_sep|>current/a.py\nline 18\nline 19\nline 20\nline 21\n<|file_sep|>" in prompt


def test_window_at_the_start_and_end_of_a_file():
    text = "a\nb\nc"
    request = NextEditRequest(path="a.py", language="python", text=text, cursor=0)
    assert render(request, NextEditOptions(), "sweep").text.endswith(
        "<|file_sep|>current/a.py\na\nb\nc\n<|file_sep|>updated/a.py\n")
    empty = NextEditRequest(path="a.py", language="python", text="", cursor=0)
    assert render(empty, NextEditOptions(), "sweep").text == (
        "<|file_sep|>original/a.py\n\n<|file_sep|>current/a.py\n\n<|file_sep|>updated/a.py\n")


@pytest.mark.parametrize("model, metadata, kind, expected", [
    ("sweepai/sweep-next-edit-1.5B", None, "local", "sweep"),
    ("/models/sweep-next-edit-1.5b.q8_0.v2.gguf", None, "local", "sweep"),
    (None, {"general.name": "Sweep Next Edit 1.5B"}, "local", "sweep"),
    ("sweep-next-edit-0.5b", None, "llama.cpp/completion", "sweep"),
    ("zed-industries/zeta-2", None, "vllm/completion", "zeta2"),
    ("zeta2:latest", None, "ollama/completion", "zeta2"),
    (None, {"general.basename": "Seed-Coder", "general.finetune": "Base"}, "local", "zeta2"),
    ("ByteDance-Seed/Seed-Coder-8B-Base", None, "local", "zeta2"),
    ("gpt-4o-mini", None, "openai/chat", "instruction"),
    ("sweep-next-edit", None, "llama.cpp/chat", "instruction"),  # a chat endpoint takes messages, not prompts
    (None, {"general.name": "Gemma 3 270m"}, "local", "sweep"),  # the fallback
    ("qwen2.5-coder:1.5b", None, "ollama/completion", "sweep"),
])
def test_choose_format(model, metadata, kind, expected):
    assert choose_format(model, metadata, kind) == expected


def test_is_next_edit_model():
    assert is_next_edit_model("sweepai/sweep-next-edit-1.5B")
    assert is_next_edit_model(None, {"general.tags": ["next-edit", "Zeta-2"]})
    assert not is_next_edit_model("TabbyML/Qwen2.5-Coder-1.5B")
    assert not is_next_edit_model(None)


def test_options_are_checked():
    with pytest.raises(ValueError, match="format must be one of"):
        NextEditOptions(format="zeta1")
    with pytest.raises(ValueError, match="max_tokens"):
        NextEditOptions(max_tokens=0)
    with pytest.raises(ValueError, match="lines_above"):
        NextEditOptions(lines_above=-1)


def test_a_focus_away_from_the_cursor_leaves_the_cursor_unmarked():
    text = _numbered(40)
    request = NextEditRequest(path="a.py", language="python", text=text, cursor=text.index("line 2\n"),
                              focus=text.index("line 30"))
    prompt = render(request, NextEditOptions(lines_above=1, lines_below=1), "zeta2").text
    assert "<<<<<<< CURRENT\nline 29\nline 30\nline 31\n=======\n" in prompt
    assert "<|user_cursor|>" not in prompt
