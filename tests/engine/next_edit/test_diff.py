"""The rewritten window → one minimal edit: insertions, deletions, replacements, the hunk nearest the cursor, LF
text, code points (not bytes or UTF-16 units)."""

from __future__ import annotations

from engine.next_edit.diff import apply_edit, changed_span, common_ends, minimal_edit
from engine.next_edit.types import TextEdit

WINDOW = "def f(a):\n    return a\n\nprint(f(1))\n"


def edit_of(current: str, rewritten: str, cursor: int = 0, window_start: int = 0) -> TextEdit | None:
    return minimal_edit(current, rewritten, cursor, window_start)


def test_no_change_is_none():
    assert edit_of(WINDOW, WINDOW) is None


def test_insertion_inside_a_word_is_the_inserted_text():
    edit = edit_of("count = 0\n", "counter = 0\n")
    assert edit == TextEdit(5, 5, "er")


def test_insertion_of_an_argument():
    edit = edit_of(WINDOW, WINDOW.replace("f(1)", "f(1, 2)"))
    at = WINDOW.index("1))") + 1
    assert edit == TextEdit(at, at, ", 2")


def test_insertion_of_whole_lines():
    rewritten = WINDOW.replace("    return a\n", "    a += 1\n    return a\n")
    edit = edit_of(WINDOW, rewritten)
    assert edit is not None and apply_edit(WINDOW, edit) == rewritten
    assert edit.start == edit.end and edit.text == "    a += 1\n"


def test_deletion():
    rewritten = WINDOW.replace("\nprint(f(1))\n", "\n")
    edit = edit_of(WINDOW, rewritten)
    start = WINDOW.index("print")
    assert edit == TextEdit(start, start + len("print(f(1))\n"), "")


def test_replacement_of_a_word():
    edit = edit_of(WINDOW, WINDOW.replace("return a", "return -a"))
    at = WINDOW.index("a\n\n")
    assert edit == TextEdit(at, at, "-")
    edit = edit_of("x = foo(y)\n", "x = bar(y)\n")
    assert edit == TextEdit(4, 7, "bar")


def test_offsets_are_file_offsets():
    edit = edit_of("count = 0\n", "counter = 0\n", cursor=105, window_start=100)
    assert edit == TextEdit(105, 105, "er")


def test_the_hunk_nearest_the_cursor_wins():
    current = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n"
    rewritten = "a = 10\nb = 2\nc = 3\nd = 4\ne = 50\n"
    near_end = edit_of(current, rewritten, cursor=current.index("e ="))
    at = current.index("5\n") + 1
    assert near_end == TextEdit(at, at, "0")
    assert apply_edit(current, near_end) == "a = 1\nb = 2\nc = 3\nd = 4\ne = 50\n"
    near_start = edit_of(current, rewritten, cursor=2)
    assert apply_edit(current, near_start) == "a = 10\nb = 2\nc = 3\nd = 4\ne = 5\n"


def test_a_tie_goes_to_the_hunk_after_the_cursor():
    current = "x1\nm\nn\nx2\n"
    rewritten = "y1\nm\nn\ny2\n"
    cursor = current.index("n")  # 2 characters from the end of the first hunk and from the start of the second
    edit = edit_of(current, rewritten, cursor=cursor)
    assert apply_edit(current, edit) == "x1\nm\nn\ny2\n"


def test_hunks_one_unchanged_line_apart_are_one_edit():
    current = "a = f(x)\nkeep\nb = f(x)\n"
    rewritten = "a = f(x, y)\nkeep\nb = f(x, y)\n"
    edit = edit_of(current, rewritten)
    assert apply_edit(current, edit) == rewritten
    assert edit == TextEdit(current.index(")"), current.rindex(")"), ", y)\nkeep\nb = f(x, y")


def test_a_changed_line_and_lines_added_after_a_blank_line_are_one_edit():
    """difflib anchors the blank line, which splits the change in two hunks (seen on the benchmark's held-out tasks);
    the edit must be the whole change."""
    line = "  A extends SliceLike<any, infer State> ? State : never\n"
    new = ("  A extends SliceLike<any, infer State, any> ? State : never\n\ntype P<A> =\n"
           "  A extends SliceLike<any, any, infer P> ? P : never\n")
    current = "type S<A> =\n" + line + "\n"
    rewritten = "type S<A> =\n" + new + "\n"
    edit = edit_of(current, rewritten, cursor=current.index("infer"))
    assert apply_edit(current, edit) == rewritten


def test_changes_two_lines_apart_stay_two_edits():
    current = "a = 1\nk1\nk2\nb = 1\n"
    rewritten = "a = 2\nk1\nk2\nb = 2\n"
    assert apply_edit(current, edit_of(current, rewritten, cursor=0)) == "a = 2\nk1\nk2\nb = 1\n"


def test_large_hunks_are_replaced_whole_lines_trimmed():
    current = "".join(f"v{i} = {i}\n" for i in range(12))
    rewritten = "".join(f"v{i} = {i * 2}\n" for i in range(12))
    edit = edit_of(current, rewritten)
    assert apply_edit(current, edit) == rewritten
    assert edit.start == current.index("1\n")  # the common beginning "v0 = 0\nv1 = " is trimmed


def test_unicode_offsets_are_code_points():
    current = "naïve = '😀'\nx = naïve\n"
    rewritten = "naïve = '😀😀'\nx = naïve\n"
    edit = edit_of(current, rewritten)
    assert edit is not None and apply_edit(current, edit) == rewritten
    assert current[:edit.start] == "naïve = '😀" and edit.text == "😀"


def test_lf_text_keeps_its_line_breaks():
    current = "a\nb\n"
    rewritten = "a\nb\nc\n"
    edit = edit_of(current, rewritten)
    assert edit == TextEdit(4, 4, "c\n")
    assert "\r" not in edit.text


def test_a_window_without_final_newline():
    edit = edit_of("a\nb", "a\nbb")
    assert edit == TextEdit(3, 3, "b")


def test_common_ends_trims_the_shared_beginning_then_the_shared_end_of_the_rest() -> None:
    assert common_ends("count = 1", "counter = 1") == (5, 4)
    assert common_ends(["a", "b", "c"], ["a", "x", "y", "c"]) == (1, 1)  # lines, tokens: any sequence
    # The end is looked for only in what the beginning left: "aa" -> "aaa" is two shared, then an insertion.
    assert common_ends("aa", "aaa") == (2, 0)
    assert common_ends("same", "same") == (4, 0)
    assert changed_span("aa", "aaa") == (2, 2, "a")
    assert changed_span("count = 1", "counter = 1") == (5, 5, "er")
