"""The two stages as the server runs them."""

from __future__ import annotations

import lsp_server.postprocess as postprocess
from lsp_server.postprocess import (
    FILTERS_AFTER_CACHE,
    FILTERS_BEFORE_CACHE,
    after_cache,
    before_cache,
    replace_range_end,
    run_filters,
)
from tests.lsp_server.postprocess.helpers import ctx


def test_every_filter_is_documented_in_order():
    before, after = postprocess.__doc__.split("After caching")
    for section, stage in ((before, FILTERS_BEFORE_CACHE), (after, FILTERS_AFTER_CACHE)):
        positions = [section.index(f"``{name}``") for name, _ in stage]
        assert positions == sorted(positions)
        for name, apply in stage:
            assert apply.__name__ == name
            assert apply.__doc__, f"{name} says why it exists"


def test_a_drop_stops_the_stage():
    calls = []

    def record(text, c):
        calls.append(text)
        return text

    def drop(text, c):
        return None

    assert run_filters("x", ctx("║"), (("drop", drop), ("record", record))) is None
    assert calls == []
    assert run_filters("x", ctx("║"), (("empty", lambda t, c: ""),)) is None


def test_rambling_python_model_is_cut_to_the_function():
    c = ctx("def add(a, b):\n    ║\n\n\ndef sub(a, b):\n    return a - b\n")
    raw = " return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
    text = after_cache(before_cache(raw, c), c)
    assert text == "return a + b"


def test_auto_closed_paren_is_replaced_not_doubled():
    c = ctx("result = compute(║)\n", language="python")
    text = after_cache(before_cache("values, 2)\n", c), c)
    assert (text, replace_range_end(text, c)) == ("values, 2)", 1)


def test_loop_at_the_end_is_removed():
    c = ctx("items = [\n    ║\n]\n")
    raw = "1,\n" + "".join("    2,\n" for _ in range(8)) + "    3"
    text = after_cache(before_cache(raw, c), c)
    assert text == "1,\n    2,"


def test_block_closed_by_the_editor_is_not_closed_twice():
    c = ctx("function log(obj) {║\n}\n", language="javascript", indent_unit="  ")
    text = after_cache(before_cache("\n  console.log(obj);\n}\n", c), c)
    assert text == "\n  console.log(obj);"


def test_spaces_become_tabs_in_a_go_file():
    c = ctx("func f() {\n\tif x {\n\t\ty()\n\t}\n\t║\n}\n", language="go")
    raw = "for i := 0; i < n; i++ {\n        g(i)\n    }"
    text = after_cache(before_cache(raw, c), c)
    assert text == "for i := 0; i < n; i++ {\n\t\tg(i)\n\t}"


def test_typing_through_a_cached_item():
    """The server caches the before-cache result, then shows the rest of it as the user types its first characters;
    after_cache must keep working on that remainder with the moved cursor."""
    c0 = ctx("def area(r):\n    ║\n")
    cached = before_cache("return 3.14159 * r * r\n", c0)
    assert cached == "return 3.14159 * r * r"
    c1 = ctx("def area(r):\n    return 3.14║\n")
    assert after_cache(cached[len("return 3.14"):], c1) == "159 * r * r"
