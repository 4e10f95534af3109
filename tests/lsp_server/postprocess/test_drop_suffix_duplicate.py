import pytest

from lsp_server.postprocess.drop_suffix_duplicate import drop_suffix_duplicate
from tests.lsp_server.postprocess.helpers import ctx


def test_item_equal_to_next_line_dropped():
    c = ctx("function f(obj) {\n  ║\n  console.log(obj);\n}\n", language="javascript")
    assert drop_suffix_duplicate("console.log(obj);", c) is None


def test_equal_multi_line_dropped_whatever_the_spacing():
    c = ctx("def f():\n    ║\n    total = compute(values)\n    return total * 2\n")
    assert drop_suffix_duplicate("total =  compute(values)\n    return total * 2", c) is None


@pytest.mark.parametrize("document,item,language", [
    ('func f(x string) string {\n\t║\n\tx = strings.ReplaceAll(x, ":", "_")\n}\n',
     'x = strings.ReplaceAll(x, "-", "_")', "go"),                                 # another literal
    ("def f():\n    ║\n    total = compute(values)\n    return total * 2\n",
     "total = compute(values)\n    return total * 3", "python"),                   # another number
    ("def test():\n    ║\n    check(parse('b'), 2)\n", "check(parse('a'), 1)", "python"),  # a sibling case
])
def test_a_line_differing_in_a_literal_or_argument_is_kept(document, item, language):
    assert drop_suffix_duplicate(item, ctx(document, language=language)) == item


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


def test_an_item_that_goes_on_after_lines_the_code_below_repeats_is_kept():
    """Test code repeats its checks: the hole writes the same three lines as below, then new code of its own."""
    document = "func T(t *testing.T) {\n\t║\n\tif err != nil {\n\t\tt.Fatal(err)\n\t}\n\tuse(u2)\n}\n"
    item = "if err != nil {\n\t\tt.Fatal(err)\n\t}\n\tu2, err := New()"
    assert drop_suffix_duplicate(item, ctx(document, language="go")) == item


def test_a_re_typing_cut_by_the_token_limit_is_dropped():
    c = ctx("def f():\n    ║\n    total = compute(values)\n    return total * 2\n")
    assert drop_suffix_duplicate("total = compute(values)\n    return tot", c) is None
