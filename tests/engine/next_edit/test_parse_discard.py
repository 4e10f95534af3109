"""Parsing the model's answer (good, junk, markers, truncated, huge) and each discard rule, through the same
pure pipeline the HTTP path uses (`engine.next_edit.predict.interpret`)."""

from __future__ import annotations

import pytest

from engine.next_edit import discard
from engine.next_edit.diff import apply_edit
from engine.next_edit.formats import parse, render
from engine.next_edit.predict import Output, interpret
from engine.next_edit.types import EditEvent, NextEditOptions, NextEditRequest, Prediction, TextEdit
from engine.types import GenerationStats

TEXT = "def area(width, height):\n    return width * height\n\nprint(area(2, 3))\nprint(area(4, 5))\n"
REQUEST = NextEditRequest(
    path="a.py", language="python", text=TEXT, cursor=TEXT.index("print"),
    history=(EditEvent("a.py", 0, "def area(w, h):\n", "def area(width, height):\n"),))
GOOD = TEXT.replace("area(4, 5)", "area(4, 5) * 2")


def run(name: str, text: str, ended_by: str | None, hit_limit: bool = False,
        request: NextEditRequest = REQUEST) -> Prediction:
    rendered = render(request, NextEditOptions(), name)
    return interpret(request, rendered, Output(text, ended_by, GenerationStats(hit_token_limit=hit_limit)))


def applied(prediction: Prediction, text: str = TEXT) -> str:
    assert prediction.edit is not None, prediction.reason
    return apply_edit(text, prediction.edit)


# --- parsing ----------------------------------------------------------------------------------------------------------

def test_sweep_good_answer():
    assert applied(run("sweep", GOOD, "<|file_sep|>")) == GOOD
    assert applied(run("sweep", GOOD, None)) == GOOD  # the model's own end token


def test_sweep_empty_or_unchanged_is_no_change():
    assert run("sweep", "", "<|file_sep|>").reason == "no change"
    assert run("sweep", TEXT, "<|file_sep|>").reason == "no change"


def test_sweep_at_the_token_limit_is_truncated():
    prediction = run("sweep", GOOD[:40], None, hit_limit=True)
    assert prediction.edit is None and prediction.reason == "truncated"


def test_zeta2_good_answer_with_and_without_the_cursor_marker():
    assert applied(run("zeta2", GOOD, ">>>>>>> UPDATED")) == GOOD
    with_cursor = GOOD.replace("* 2", "* 2<|user_cursor|>")
    assert applied(run("zeta2", with_cursor, ">>>>>>> UPDATED")) == GOOD


def test_zeta2_no_edits_and_missing_end_marker():
    assert run("zeta2", "NO_EDITS\n", ">>>>>>> UPDATED").reason == "no change"
    assert run("zeta2", "NO_EDITS\n", None).reason == "no change"
    assert run("zeta2", GOOD, None).reason == "truncated"  # ended without >>>>>>> UPDATED
    assert run("zeta2", GOOD[:30], None, hit_limit=True).reason == "truncated"


def test_instruction_strict_markers():
    assert applied(run("instruction", "<updated>\n" + GOOD, "</updated>")) == GOOD
    assert applied(run("instruction", "\n  <updated>\n" + GOOD, "</updated>")) == GOOD
    assert run("instruction", "Here you go:\n<updated>\n" + GOOD, "</updated>").reason == "malformed"
    assert run("instruction", "```python\n" + GOOD + "```", None).reason == "malformed"
    assert run("instruction", "<updated>\n" + GOOD[:50], None, hit_limit=True).reason == "truncated"
    assert run("instruction", "<upd", None, hit_limit=True).reason == "truncated"


def test_junk_answers_give_no_edit():
    junk = "I think you should rename the function. " * 3
    for name, end in (("sweep", "<|file_sep|>"), ("zeta2", ">>>>>>> UPDATED")):
        prediction = run(name, junk, end)
        assert prediction.edit is None, (name, prediction)
        assert prediction.reason in ("large deletion", "huge rewrite", "malformed"), prediction.reason


def test_huge_rewrite_is_dropped():
    huge = TEXT + "".join(f"print({i})\n" for i in range(400))
    assert run("sweep", huge, "<|file_sep|>").reason == "huge rewrite"
    many_lines = TEXT + "".join(f"x{i} = {i}\n" for i in range(25))
    assert run("sweep", many_lines, "<|file_sep|>").reason == "huge rewrite"


def test_parse_keeps_the_window_line_ending_convention():
    request = NextEditRequest(path="a.py", language="python", text="a\nb", cursor=0)
    rendered = render(request, NextEditOptions(), "sweep")
    assert parse(rendered, "a\nbb\n", "<|file_sep|>", False).window == "a\nbb"
    request = NextEditRequest(path="a.py", language="python", text="a\nb\n", cursor=0)
    rendered = render(request, NextEditOptions(), "sweep")
    assert parse(rendered, "a\nbb", "<|file_sep|>", False).window == "a\nbb\n"


# --- discard rules ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("token", ["NO_EDITS", "<|im_end|>", "<|editable_region_end|>", "KEEP_PREVIOUS"])
def test_leaked_sentinels_are_dropped(token):
    leaked = TEXT.replace("area(4, 5)", f"area(4, 5){token}")
    assert run("sweep", leaked, "<|file_sep|>").reason == "sentinel"


def test_a_token_the_file_itself_holds_is_not_a_leak():
    text = "s = 'NO_EDITS'\nt = 1\n"
    request = NextEditRequest(path="a.py", language="python", text=text, cursor=0)
    prediction = run("sweep", text.replace("t = 1", "t = 2"), "<|file_sep|>", request=request)
    assert prediction.reason == "edit"


def test_an_indentation_change_is_an_edit_not_whitespace():
    text = "if ok:\n    run()\nstop()\n"
    request = NextEditRequest(path="a.py", language="python", text=text, cursor=0)
    indented = text.replace("\nstop()", "\n    stop()")
    assert applied(run("sweep", indented, "<|file_sep|>", request=request), text) == indented
    trailing = text.replace("run()", "run()   ")
    assert run("sweep", trailing, "<|file_sep|>", request=request).reason == "whitespace only"


def test_whitespace_only_is_dropped():
    assert run("sweep", TEXT.replace("area(2, 3)", "area(2,  3)"), "<|file_sep|>").reason == "whitespace only"
    assert run("sweep", TEXT.replace("\n\nprint", "\n\n\nprint"), "<|file_sep|>").reason == "whitespace only"


def test_a_revert_of_the_users_last_edit_is_dropped():
    reverted = TEXT.replace("def area(width, height):", "def area(w, h):")
    request = NextEditRequest(path="a.py", language="python", text=TEXT, cursor=0, history=REQUEST.history)
    assert run("sweep", reverted, "<|file_sep|>", request=request).reason == "revert"
    # the same rewrite without that history is an ordinary edit
    plain = NextEditRequest(path="a.py", language="python", text=TEXT, cursor=0)
    assert run("sweep", reverted, "<|file_sep|>", request=plain).reason == "edit"


def test_large_deletions_are_dropped():
    text = "".join(f"x{i} = {i}\n" for i in range(20))
    request = NextEditRequest(path="a.py", language="python", text=text, cursor=text.index("x8"))
    eight_gone = text.replace("".join(f"x{i} = {i}\n" for i in range(8, 16)), "")
    nine_gone = text.replace("".join(f"x{i} = {i}\n" for i in range(8, 17)), "")
    assert run("sweep", eight_gone, "<|file_sep|>", request=request).reason == "edit"  # one hunk's worth
    assert run("sweep", nine_gone, "<|file_sep|>", request=request).reason == "large deletion"


def test_the_rules_one_by_one():
    text = "a = 1\n" + "long line " * 100 + "\n"
    assert discard.is_large_deletion(text, TextEdit(6, len(text), ""))
    assert not discard.is_large_deletion(text, TextEdit(6, len(text), "b = 2\n"))
    assert discard.is_whitespace_only("a = 1\n", TextEdit(1, 2, "  "))
    assert not discard.is_whitespace_only("a = 1\n", TextEdit(4, 5, "2"))
    assert discard.leaked_sentinel("x</s>", "x", ("</s>",)) == "</s>"
    assert discard.leaked_sentinel("x</s>", "x</s>", ("</s>",)) is None
    assert discard.is_huge_rewrite("w", "w" * 1100, None, "w")
    assert not discard.is_huge_rewrite("w" * 400, "w" * 1000, None, "w" * 400)
    window = "".join(f"x{i}\n" for i in range(21))
    nine = window.replace("".join(f"x{i}\n" for i in range(9)), "".join(f"y{i}\n" for i in range(9)))
    eleven = window.replace("".join(f"x{i}\n" for i in range(11)), "".join(f"y{i}\n" for i in range(11)))
    assert not discard.is_huge_rewrite(window, nine, None, window)  # 9 of 21 lines: under half
    assert discard.is_huge_rewrite(window, eleven, None, window)  # 11 of 21: over half and over 8
    assert discard.is_huge_rewrite("a\nb\nc\n", "prose\n", None, "")  # nothing of the window kept
    assert not discard.is_huge_rewrite("a\nb\n", "prose\n", None, "")  # 2 lines: an ordinary edit


def test_with_a_focus_the_edit_nearest_the_focus_is_kept():
    text = "".join(f"v{i} = old\n" for i in range(12))
    focus = text.index("v10")
    request = NextEditRequest(path="a.py", language="python", text=text, cursor=0, focus=focus)
    rendered = render(request, NextEditOptions(lines_above=10, lines_below=10), "sweep")
    rewritten = rendered.window.text.replace("v1 = old", "v1 = new").replace("v10 = old", "v10 = new")
    prediction = interpret(request, rendered, Output(rewritten, "<|file_sep|>", GenerationStats()))
    assert applied(prediction, text) == text.replace("v10 = old", "v10 = new")
