import pytest

from lsp_server.postprocess.cut_unreachable import cut_unreachable
from tests.lsp_server.postprocess.helpers import ctx


def test_doctests_after_the_last_return_go():
    # HumanEval/36/L8: the model wrote the function's last line, then its doctests again.
    c = ctx('def fizz_buzz(n: int):\n    """Count the 7s."""\n    ans = 0\n║')
    item = '    return ans\n    """\n    >>> fizz_buzz(50)\n    0\n    """'
    assert cut_unreachable(item, c) == "    return ans"


@pytest.mark.parametrize("item, language", [
    ("        break\n\n        total += x", "python"),
    ("        continue\n        total += x", "python"),
    ("        raise ValueError(x)\n        return None", "python"),
    ("        return total;\n        total = 0;", "javascript"),
    ("        throw new Error('no');\n        x++;", "typescript"),
])
def test_code_after_a_jump_at_its_indentation_goes(item: str, language: str):
    c = ctx("def f(xs):\n    for x in xs:\n║", language=language)
    assert cut_unreachable(item, c) == item.split("\n")[0]


def test_the_jump_typed_before_the_cursor_counts():
    c = ctx("def f(a):\n    ret║")
    assert cut_unreachable("urn a\n    a += 1", c) == "urn a"


@pytest.mark.parametrize("item", [
    "        return x\n    else:\n        return y",  # a shallower line reopens the block
    "        return x\n    y = 1",  # a shallower line: the block ended, this runs
    "        return (\n            x)\n        y = 1",  # an open bracket: the statement goes on
    "        return x + \\\n            y",  # a continuation
    "        return x and\n        y",  # an operator at the end
    "        x = 1\n        y = 2",  # no jump at all
    "        if x: return 1\n        y = 2",  # a conditional jump on one line
])
def test_reachable_code_is_kept(item: str):
    c = ctx("def f(x):\n    if x:\n║")
    assert cut_unreachable(item, c) == item


def test_hoisted_function_declarations_and_labels_are_kept():
    c = ctx("function f() {\n║\n}\n", language="javascript")
    item = "  return g();\n  function g() {\n    return 1;\n  }"
    assert cut_unreachable(item, c) == item
    c = ctx("int f(void) {\n║\n}\n", language="c")
    item = "  return 0;\n  fail:\n  return -1;"
    assert cut_unreachable(item, c) == item


def test_statement_modifiers_make_a_ruby_return_conditional():
    c = ctx("def f(x)\n║\nend\n", language="ruby")
    item = "  return 0 if x.nil?\n  x * 2"
    assert cut_unreachable(item, c) == item
    assert cut_unreachable("  return 0\n  x * 2", c) == "  return 0"


def test_one_line_items_are_untouched():
    c = ctx("def f():\n    ║")
    assert cut_unreachable("return 1", c) == "return 1"
