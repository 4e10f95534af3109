from lsp_server.postprocess.drop_duplicated_closing_line import drop_duplicated_closing_line
from tests.lsp_server.postprocess.helpers import ctx


def test_closing_line_already_in_suffix_removed():
    c = ctx("function log(obj) {║\n}\n", language="javascript")
    assert drop_duplicated_closing_line("\n  console.log(obj);\n};", c) == "\n  console.log(obj);"


def test_different_indentation_is_not_a_duplicate():
    c = ctx("fn main() {\n    ║\n}\n", language="rust")
    item = "if x {\n        y();\n    }"
    assert drop_duplicated_closing_line(item, c) == item


def test_last_line_not_closing_untouched():
    c = ctx("def f():\n    ║\n    return x\n")
    assert drop_duplicated_closing_line("x = 1\n    return x", c) == "x = 1\n    return x"
