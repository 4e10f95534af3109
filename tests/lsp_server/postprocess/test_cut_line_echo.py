from lsp_server.postprocess.cut_line_echo import cut_line_echo
from tests.lsp_server.postprocess.helpers import ctx


def test_cuts_the_repeated_rest_of_line():
    c = ctx("const log = ({ ok }: { ok:║ }) => {\n", language="typescript")
    assert cut_line_echo(" boolean }) => { ", c) == " boolean "


def test_keeps_cut_that_would_unbalance_brackets():
    # "fn(value)" ends with the rest "value)"; cutting would leave "fn(" open.
    c = ctx("bar(║value)\n")
    assert cut_line_echo("fn(value)", c) == "fn(value)"


def test_operator_echo_cut():
    assert cut_line_echo("x + y", ctx("a = ║ + y\n")) == "x "


def test_closing_only_rest_is_left_to_the_replace_range():
    c = ctx("foo(║))\n")
    assert cut_line_echo("a, b))", c) == "a, b))"


def test_short_or_absent_echo_untouched():
    assert cut_line_echo("x * z", ctx("a = ║ + y\n")) == "x * z"
    assert cut_line_echo("abc", ctx("a = ║\n")) == "abc"
    assert cut_line_echo("a\nb = c", ctx("x║b = c\n")) == "a\nb = c"  # multi-line items are not this filter's
