from lsp_server.postprocess.drop_suffix_duplicate import drop_suffix_duplicate
from tests.lsp_server.postprocess.helpers import ctx


def test_item_equal_to_next_line_dropped():
    c = ctx("function f(obj) {\n  ║\n  console.log(obj);\n}\n", language="javascript")
    assert drop_suffix_duplicate("console.log(obj);", c) is None


def test_nearly_equal_multi_line_dropped():
    c = ctx("def f():\n    ║\n    total = compute(values)\n    return total * 2\n")
    assert drop_suffix_duplicate("total = compute(values)\n    return total * 3", c) is None


def test_different_item_kept():
    c = ctx("def f():\n    ║\n    return total\n")
    assert drop_suffix_duplicate("total = sum(values)", c) == "total = sum(values)"


def test_end_of_document_keeps_item():
    assert drop_suffix_duplicate("x = 1", ctx("a = 0\n║")) == "x = 1"


def test_a_closing_brace_for_another_block_is_kept():
    """`    }` closes the method; the `}` below closes the class: not a duplicate (SantaCoder Java)."""
    c = ctx("class A {\n    int f() {\n        return 1;\n║\n}\n", language="java")
    assert drop_suffix_duplicate("    }", c) == "    }"
    c = ctx("class A {\n    int f() {\n        return 1;\n    ║\n}\n", language="java")
    assert drop_suffix_duplicate("}", c) == "}"


def test_a_closing_brace_the_code_below_already_has_is_dropped():
    c = ctx("class A {\n    int f() {\n        return 1;\n    ║\n    }\n}\n", language="java")
    assert drop_suffix_duplicate("}", c) is None
    c = ctx("if (a) {\n  b();\n║\n  }\n", language="javascript")
    assert drop_suffix_duplicate("  }", c) is None
    assert drop_suffix_duplicate("  )", c) == "  )"  # no longer "near identical" to `}`
