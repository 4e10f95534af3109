import pytest

from lsp_server.postprocess.replace_range import replace_range_end
from tests.lsp_server.postprocess.helpers import ctx


@pytest.mark.parametrize(
    ("document", "item", "end"),
    [
        ("foo(║)\n", "a, b)", 1),
        ("Math.max(Math.min(║))\n", "value, max), min);", 2),
        ('print("║")\n', 'hello")', 2),
        ("foo(║)\n", "bar(x)", 0),  # balanced item: the ")" still closes foo(
        ("foo(║);\n", "x);", 2),  # ";" also written by the item
        ("foo(║);\n", "x)", 1),  # the item stops before ";": keep it
        ("{ ║ }\n", "a: 1 }", 2),  # spaces between closers are covered too
        ("<App ║/>\n", "message={m} />", 2),
        ("foo(║)) + 1\n", "x)", 0),  # code on the rest of the line
        ("foo(║)\n", "x", 0),
        ("foo(║)]\n", "x]", 0),  # mismatch at the first closer
        ("foo(║)   \n", "x)", 1),  # trailing spaces are not replaced
        ("x = ║\n", "1)", 0),
    ],
)
def test_replace_range_end(document, item, end):
    assert replace_range_end(item, ctx(document, language="typescript")) == end
