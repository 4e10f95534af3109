"""drop_dangling_end: no ending on an indented empty line, nor in a header whose body the item does not write."""

import pytest

from lsp_server.postprocess.dangling_end import drop_dangling_end
from tests.lsp_server.postprocess.helpers import ctx


def test_an_else_without_its_body_goes_with_the_blank_line_after_it():
    # The real-code benchmark: the model's `else:` then an indented empty line, where the cut fell.
    c = ctx("def f(x):\n    ║\n    return x\n")
    item = "if x:\n        x = 1\n    else:\n        "
    assert drop_dangling_end(item, c) == "if x:\n        x = 1"


@pytest.mark.parametrize("item, language", [
    ("x = 1\n    for y in ys:", "python"),
    ("x = 1;\n    if (x) {", "javascript"),
    ("x := 1\n    for _, y := range ys {", "go"),
    ("x = 1\n    items.each do", "ruby"),
])
def test_a_last_header_without_a_body_goes(item, language):
    c = ctx("def f(ys):\n    ║\n    return ys\n", language=language)
    assert drop_dangling_end(item, c) == item.split("\n")[0]


def test_trailing_indented_empty_lines_go():
    c = ctx("def f():\n    ║\n")
    assert drop_dangling_end("x = 1\n    y = 2\n    \n        ", c) == "x = 1\n    y = 2"


def test_a_header_whose_body_is_below_the_cursor_stays():
    # The hole is the header above its existing body.
    c = ctx("def f(x):\n    ║\n        return 1\n    return 0\n")
    assert drop_dangling_end("y = x\n    if y:", c) == "y = x\n    if y:"


def test_a_one_line_header_stays():
    c = ctx("def f(x):\n    ║\n")
    assert drop_dangling_end("if x:", c) == "if x:"


def test_a_reopener_without_a_body_keeps_its_closer():
    c = ctx("function f(x) {\n  if (x) {\n    ║\n}\n", language="javascript")
    assert drop_dangling_end("a();\n  } else {", c) == "a();\n  }"


def test_comments_ending_in_a_colon_are_no_headers():
    c = ctx("def f():\n    ║\n")
    assert drop_dangling_end("x = 1\n    # the cases:", c) == "x = 1\n    # the cases:"
