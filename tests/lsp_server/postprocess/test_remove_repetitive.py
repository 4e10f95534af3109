from lsp_server.postprocess.remove_repetitive import (
    ends_with_repetition,
    remove_line_ending_with_repetition,
    remove_repeated_statement,
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


GO_LOOP = ("func f(cmd *Command) bool {\n\tfor _, c := range cmd.Commands() {\n\t\t║\n\t}\n\treturn false\n}\n")


def test_a_statement_of_several_lines_written_again_is_cut_before_the_repeat():
    # The real-code benchmark (cobra): a one-line hole shown as the same `if` block four times, the last cut short.
    block = "if !c.IsAvailableCommand() {\n\t\t\tcontinue\n\t\t}"
    item = block + ("\n\t\t" + block) * 2 + "\n\t\tif !c.IsAvailableCommand() {\n\t\t\tcont"
    c = ctx(GO_LOOP, language="go")
    assert remove_repeated_statement(item, c) == block


def test_a_repeat_nested_in_the_item_is_cut_too():
    c = ctx("def f(words):\n    ║\n")
    item = ("for word in words:\n        if word == ' ':\n            continue\n"
            "        if word == ' ':\n            continue\n        yield word")
    assert remove_repeated_statement(item, c) == "for word in words:\n        if word == ' ':\n            continue"


def test_a_run_of_statements_written_again_is_cut_before_the_repeat():
    # The real-code benchmark (rich): a one-line hole shown as an assignment and an `if` block, twice.
    c = ctx("def emit(self, record):\n    if self.formatter:\n        ║\n    return message\n")
    run = "message = self.format(record)\n        if self.formatter:\n            self.formatter.usesTime()"
    assert remove_repeated_statement(run + "\n        " + run, c) == run
    pair = "a = f()\n        b = g()"
    assert remove_repeated_statement(pair + "\n        " + pair + "\n        c = h()", c) == pair


def test_one_line_repeats_and_different_statements_stay():
    c = ctx("def f(out):\n    ║\n")
    assert remove_repeated_statement("out.write('\\n')\n    out.write('\\n')\n    out.flush()\n    x = 1", c) \
        == "out.write('\\n')\n    out.write('\\n')\n    out.flush()\n    x = 1"
    item = "if a:\n        f(a)\n    if b:\n        f(b)"
    assert remove_repeated_statement(item, c) == item
    # a statement and its `else` are one statement, not a repeat of the `if` line
    item = "if a:\n        f(a)\n    else:\n        f(a)"
    assert remove_repeated_statement(item, c) == item


def test_one_line_written_three_times_is_a_loop_and_keeps_its_first():
    # The default model at `def f():` / an indented empty line: `print("Hello")` six times, shown as two lines.
    c = ctx("def f():\n    ║\n")
    item = "\n    ".join(['print("Hello")'] * 6)
    assert remove_repeated_statement(item, c) == 'print("Hello")'
    assert remove_repeated_statement("i += 1\n    i += 1\n    i += 1\n    return i", c) == "i += 1"
    assert remove_repeated_statement('print("hello")\n    print("hello")\n    print("hello")', c) == 'print("hello")'
    # twice stays (code repeats a short line on purpose), and so does a line whose third copy is another statement
    twice = "i += 1\n    i += 1\n    return i\n    x = 2"
    assert remove_repeated_statement(twice, c) == twice


def test_rows_inside_brackets_are_data_not_statements():
    # The cut simulation (rich/box.py): a box drawing whose rows repeat in pairs is not a loop.
    c = ctx("║\n")
    item = 'DOUBLE: Box = Box(\n    "╔═╤╗\\n"\n    "║ │║\\n"\n    "╟─┼╢\\n"\n    "║ │║\\n"\n    "╟─┼╢\\n"\n)'
    assert remove_repeated_statement(item, c) == item
