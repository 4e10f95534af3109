from lsp_server.postprocess.remove_repetitive import (
    ends_with_repetition,
    remove_line_ending_with_repetition,
    remove_repetitive_blocks,
    remove_repetitive_lines,
)
from tests.lsp_server.postprocess.helpers import ctx

C = ctx("def f():\n    ║\n")


def test_line_ending_with_short_pattern_six_times():
    assert ends_with_repetition("x = " + "a = " * 6)
    assert not ends_with_repetition("x = " + "a = " * 5)
    assert ends_with_repetition("print(" + "))" * 10)  # period 2 repeats as period 4 and 6
    assert ends_with_repetition("foo" + "0123456789" * 4)
    assert not ends_with_repetition("for i in range(10): total += i")


def test_repetitive_last_line_removed_or_item_dropped():
    assert remove_line_ending_with_repetition("x = 1\ny = " + "1, " * 10, C) == "x = 1"
    assert remove_line_ending_with_repetition("1, " * 10, C) is None
    assert remove_line_ending_with_repetition("x = 1\ny = 2", C) == "x = 1\ny = 2"


def test_long_repetitive_line_is_cheap():
    assert remove_line_ending_with_repetition("z" + "ab c" * 100_000, C) is None


def test_five_near_identical_lines_keep_the_first():
    body = "x = 1\n" + "".join(f"print('item {i}')\n" for i in range(7)) + "print('it"
    assert remove_repetitive_lines(body, C) == "x = 1\nprint('item 0')"


def test_four_near_identical_lines_are_fine():
    body = "".join(f"print('item {i}')\n" for i in range(5)) + "done()"
    assert remove_repetitive_lines(body, C) == body


def test_different_lines_untouched():
    body = "a = 1\nb = compute(a)\nreturn b\n"
    assert remove_repetitive_lines(body, C) == body


def test_repeated_blocks_keep_the_first_of_the_run():
    block = "def test_{}():\n    assert f({}) == {}\n"
    text = "x = 1\n\n" + "\n".join(block.format(i, i, i) for i in range(5))
    assert remove_repetitive_blocks(text, C) == "x = 1\n\n" + block.format(0, 0, 0).rstrip()


def test_two_similar_blocks_are_fine():
    text = "def a():\n    return 1\n\ndef b():\n    return 2\n\ndef c():\n    return 3"
    assert remove_repetitive_blocks(text, C) == text
