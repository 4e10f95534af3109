from lsp_server.postprocess.trim_whitespace import trim_whitespace
from tests.lsp_server.postprocess.helpers import ctx


def test_no_double_space_after_a_space():
    assert trim_whitespace("  1", ctx("x = ║\n")) == "1"


def test_space_kept_after_a_word():
    assert trim_whitespace(" 1", ctx("x =║\n")) == " 1"


def test_trailing_blanks_dropped_at_line_end():
    assert trim_whitespace("foo()  \n\n", ctx("x = ║\n")) == "foo()"


def test_trailing_space_kept_before_code():
    assert trim_whitespace("a, ", ctx("f(║b)\n")) == "a, "
    assert trim_whitespace("a ", ctx("f(║ b)\n")) == "a"


def test_leading_newline_kept():
    assert trim_whitespace("\n    return 1", ctx("def f(): ║\n")) == "\n    return 1"


def test_indentation_left_for_reindent():
    assert trim_whitespace("  x = 1", ctx("def f():\n    ║\n")) == "  x = 1"


def test_trailing_newline_dropped_before_auto_closed_brackets():
    assert trim_whitespace("a, 2)\n", ctx("f(║)\n")) == "a, 2)"


def test_trailing_newline_kept_before_code():
    assert trim_whitespace("bar()\n", ctx("║foo()\n")) == "bar()\n"
