import pytest

from lsp_server.postprocess import PostprocessContext
from lsp_server.postprocess.textutil import (
    bounded_distance,
    detect_indent_unit,
    head_lines,
    tail_lines,
    unpaired_tokens,
)
from tests.lsp_server.postprocess.helpers import ctx


def test_current_line_and_neighbours():
    c = ctx("a\n  b = ║foo\n\n  c\n")
    assert c.line_prefix == "  b = "
    assert c.line_suffix == "foo"
    assert c.prefix_lines == ["a", "  b = "]
    assert c.suffix_lines == ["foo", "", "  c", ""]
    assert c.next_line == "  c"


def test_empty_document():
    c = ctx("║")
    assert (c.line_prefix, c.line_suffix, c.next_line) == ("", "", None)
    assert c.document_indent_unit is None
    assert c.target_indent_unit == "    "


def test_lines_near_the_cursor_are_bounded():
    assert tail_lines("x\n" * 1000 + "end", 3) == ["x", "x", "end"]
    assert head_lines("start\n" + "x\n" * 1000, 2) == ["start", "x"]


@pytest.mark.parametrize("bad", ["", "  \t", "x", " " * 17])
def test_bad_indent_unit_is_named(bad):
    with pytest.raises(ValueError, match="indent_unit"):
        PostprocessContext("", "", "python", indent_unit=bad)


def test_bad_min_chars_is_named():
    with pytest.raises(ValueError, match="min_chars"):
        PostprocessContext("", "", "python", min_chars=-1)


@pytest.mark.parametrize(
    ("lines", "unit"),
    [
        (["def f():", "    x", "    if y:", "        z"], "    "),
        (["{", "  a", "  {", "    b"], "  "),
        (["func f() {", "\tx", "\tif y {", "\t\tz"], "\t"),
        (["a", "b"], None),
        (["x = f(a,", "     b)"], None),  # alignment only: no unit step
        (["def f():", "    g(a,", "      b)"], "    "),  # a tie between a block and an alignment step
    ],
)
def test_detect_indent_unit(lines, unit):
    assert detect_indent_unit(lines) == unit


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [("kitten", "sitting", 3), ("", "abc", 3), ("same", "same", 0), ("abc", "abd", 1), ("flaw", "lawn", 2)],
)
def test_bounded_distance_exact_within_the_bound(a, b, distance):
    assert bounded_distance(a, b, 10) == distance


def test_bounded_distance_stops_at_the_bound():
    assert bounded_distance("a" * 500, "b" * 500, 5) == 6
    assert bounded_distance("kitten", "sitting", 2) == 3


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("a, b)", [")"]),
        ("f(x)", []),
        ('text".to_string(), text);', ['"', ")"]),
        ("message={m} />", ["/>"]),
        ("React.StrictMode>", [">"]),
        ("n: u32) -> u32 {\n  n\n}", [")"]),  # "->" is an operator, not a closer
        ("a >= b)", [")"]),
        ("x = (a, '(b')", []),  # what a quote opened and closed drops with it
        ("if (n <= 1) {", ["{"]),
    ],
)
def test_unpaired_tokens(text, tokens):
    assert [token for token, _ in unpaired_tokens(text)] == tokens
