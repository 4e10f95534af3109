"""The editable window and the window before the user's latest edit (sweep's `original` block): edits inside,
above, below and across the window, deletions and insertions, stale events."""

from __future__ import annotations

from engine.next_edit.types import EditEvent, NextEditRequest
from engine.next_edit.window import cursor_window, original_window, text_before_latest_edit

TEXT = "".join(f"l{i}\n" for i in range(30))


def request(event: EditEvent | None, text: str = TEXT, cursor_line: int = 15) -> NextEditRequest:
    cursor = sum(len(line) + 1 for line in text.split("\n")[:cursor_line])
    return NextEditRequest(path="a.py", language="python", text=text, cursor=cursor,
                           history=(event,) if event else ())


def window_of(req: NextEditRequest, above: int = 2, below: int = 2):
    return cursor_window(req.text, req.cursor, above, below)


def test_window_rows_and_offsets():
    req = request(None)
    w = window_of(req)
    assert w.text == "l13\nl14\nl15\nl16\nl17\n" and (w.first_row, w.last_row) == (13, 17)
    assert req.text[w.start:w.end] == w.text and w.text[w.cursor:].startswith("l15")


def test_an_edit_inside_the_window_is_reverted():
    req = request(EditEvent("a.py", 14, "old\n", "l14\n"))
    assert original_window(req, window_of(req)) == "l13\nold\nl15\nl16\nl17\n"


def test_an_edit_above_or_below_the_window_leaves_it_as_it_is():
    for event in (EditEvent("a.py", 2, "x\ny\n", "l2\n"), EditEvent("a.py", 25, "", "l25\n")):
        req = request(event)
        assert original_window(req, window_of(req)) == window_of(req).text


def test_inserted_lines_in_the_window_disappear_and_deleted_ones_come_back():
    inserted = request(EditEvent("a.py", 14, "", "l14\nl15\n"))
    assert original_window(inserted, window_of(inserted)) == "l13\nl16\nl17\n"
    deleted = request(EditEvent("a.py", 15, "gone 1\ngone 2\n", ""))
    assert original_window(deleted, window_of(deleted)) == "l13\nl14\ngone 1\ngone 2\nl15\nl16\nl17\n"


def test_an_edit_across_the_window_start_maps_its_part():
    req = request(EditEvent("a.py", 12, "a\nb\nc\n", "l12\nl13\n"))
    # rows 12-13 were a, b, c: the window's first row (13) maps to "b", and "c" before row 14
    assert original_window(req, window_of(req)) == "b\nc\nl14\nl15\nl16\nl17\n"


def test_only_the_newest_event_of_this_file_counts():
    req = NextEditRequest(path="a.py", language="python", text=TEXT, cursor=TEXT.index("l15"),
                          history=(EditEvent("a.py", 15, "older\n", "l15\n"), EditEvent("b.py", 0, "", "x\n")))
    assert original_window(req, window_of(req)) == "l13\nl14\nolder\nl16\nl17\n"
    assert text_before_latest_edit(req) == TEXT.replace("l15\n", "older\n")


def test_a_stale_event_is_ignored():
    req = request(EditEvent("a.py", 14, "old\n", "not there\n"))
    assert original_window(req, window_of(req)) == window_of(req).text
    assert text_before_latest_edit(req) is None
    beyond = request(EditEvent("a.py", 400, "old\n", "l1\n"))
    assert text_before_latest_edit(beyond) is None


def test_cursor_out_of_range_is_clipped():
    req = NextEditRequest(path="a.py", language="python", text="a\nb", cursor=99)
    w = cursor_window(req.text, req.cursor, 1, 1)
    assert w.text == "a\nb" and w.cursor == 3


def test_a_focus_centres_the_window_away_from_the_cursor():
    req = NextEditRequest(path="a.py", language="python", text=TEXT, cursor=TEXT.index("l2\n"),
                          focus=TEXT.index("l20"))
    w = cursor_window(req.text, req.cursor, 1, 1, req.focus)
    assert w.text == "l19\nl20\nl21\n" and w.cursor is None
    inside = cursor_window(req.text, TEXT.index("l21"), 1, 1, req.focus)
    assert inside.cursor == 8
