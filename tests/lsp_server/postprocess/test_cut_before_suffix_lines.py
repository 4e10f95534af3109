from lsp_server.postprocess.cut_before_suffix_lines import cut_before_suffix_lines
from tests.lsp_server.postprocess.helpers import ctx


def test_tail_equal_to_following_lines_cut():
    c = ctx("def f(x):\n    ║\n    y = x + 1\n    return y\n")
    assert cut_before_suffix_lines("x = abs(x)\n    y = x + 1\n    return y", c) == "x = abs(x)"


def test_partial_match_kept():
    c = ctx("def f(x):\n    ║\n    y = x + 1\n    return y\n")
    item = "x = abs(x)\n    y = x + 1\n    return y * 2"
    assert cut_before_suffix_lines(item, c) == item


def test_whole_item_equal_dropped_when_on_its_own_line():
    c = ctx("def f(x):\n    ║\n    return y\n")
    assert cut_before_suffix_lines("return y", c) is None


def test_first_line_after_code_is_not_compared():
    c = ctx("x = ║\ny = 2\n")
    assert cut_before_suffix_lines("y = 2", c) == "y = 2"
