from lsp_server.postprocess.single_line import trim_to_single_line
from tests.lsp_server.postprocess.helpers import ctx


def test_multiline_context_keeps_everything():
    assert trim_to_single_line("a\nb", ctx("x = ║\n")) == "a\nb"


def test_first_line_minus_the_echo_of_the_rest_of_line():
    c = ctx('print("x:║", x)\n', multiline=False)
    assert trim_to_single_line(' {}", x)\nprint("y")', c) == " {}"


def test_multiline_item_in_the_middle_of_code_is_dropped():
    c = ctx("foo(║, b)\n", multiline=False)
    assert trim_to_single_line("a\nb", c) is None


def test_at_line_end_keeps_first_line():
    c = ctx("x = ║)\n", multiline=False)
    assert trim_to_single_line("f(1)\ny = 2", c) == "f(1)"


def test_single_line_item_untouched():
    assert trim_to_single_line("abc", ctx("x = ║ + 1", multiline=False)) == "abc"
