"""The editable window around the cursor, and the same window before the user's latest edit.

Lines are the file's rows split at "\\n" (a file ending in "\\n" has a last, empty row), as Zed's buffer rows are:
the window runs from the start of its first row to the end of its last row and includes the line break after the
last row when there is one. Prompts add a final "\\n" when the window has none (the file's end), and the parser
takes it off again, so the model always sees whole lines."""

from __future__ import annotations

from dataclasses import dataclass

from .types import EditEvent, NextEditRequest


@dataclass(frozen=True)
class Window:
    #: Code-point offset of the window's first character in the request's text.
    start: int
    #: Code-point offset just past the window.
    end: int
    #: The window's text: `text[start:end]`.
    text: str
    #: The cursor's offset inside `text`, None when the cursor lies outside the window (a request with a focus).
    cursor: int | None
    #: The first and last row (0-based, inclusive).
    first_row: int
    last_row: int


def _rows(text: str) -> list[str]:
    return text.split("\n")


def _row_start(rows: list[str], row: int) -> int:
    return sum(len(r) + 1 for r in rows[:row])


def _span(rows: list[str], first: int, last: int) -> str:
    """Rows first..last joined, with the break after `last` when another row follows."""
    body = "\n".join(rows[first:last + 1])
    return body + "\n" if last + 1 < len(rows) else body


def cursor_window(text: str, cursor: int, above: int, below: int, focus: int | None = None) -> Window:
    """`above` rows before the cursor's row (or the focus's), the row itself and `below` rows after it, clipped to
    the file."""
    cursor = max(0, min(cursor, len(text)))
    center = cursor if focus is None else max(0, min(focus, len(text)))
    rows = _rows(text)
    row = text.count("\n", 0, center)
    first = max(0, row - above)
    last = min(len(rows) - 1, row + below)
    start = _row_start(rows, first)
    body = _span(rows, first, last)
    end = start + len(body)
    inside = start <= cursor < end or cursor == end == len(text)
    return Window(start=start, end=end, text=body, cursor=cursor - start if inside else None, first_row=first,
                  last_row=last)


def hunk_lines(hunk: str) -> list[str]:
    """A hunk's whole lines ("a\\nb\\n" → ["a", "b"]; "" → [])."""
    if not hunk:
        return []
    return (hunk[:-1] if hunk.endswith("\n") else hunk).split("\n")


def latest_event_of(request: NextEditRequest) -> EditEvent | None:
    """The newest history event of the request's own file."""
    for event in reversed(request.history):
        if event.path == request.path:
            return event
    return None


@dataclass(frozen=True)
class LatestEdit:
    """The newest edit of the request's file, checked against its text: rows [first, end) of the current text
    were `old` before it."""

    first: int
    end: int
    old: list[str]


def latest_edit(request: NextEditRequest) -> LatestEdit | None:
    """None when there is no edit of this file, or when it does not match the text (stale: its `new` lines are not
    at `start_line`)."""
    event = latest_event_of(request)
    if event is None:
        return None
    rows = _rows(request.text)
    new = hunk_lines(event.new)
    first, end = event.start_line, event.start_line + len(new)
    if first < 0 or end > len(rows) or rows[first:end] != new:
        return None
    return LatestEdit(first, end, hunk_lines(event.old))


def text_before_latest_edit(request: NextEditRequest) -> str | None:
    """The file with the newest edit of it undone, or None."""
    edit = latest_edit(request)
    if edit is None:
        return None
    rows = _rows(request.text)
    return "\n".join(rows[:edit.first] + edit.old + rows[edit.end:])


def original_window(request: NextEditRequest, window: Window) -> str:
    """The window as it was before the newest edit of this file (Zed's sweep prompt maps the current window into the
    snapshot before that edit). The current window when there is no such edit or it is stale; an edit outside the
    window maps it onto the same text."""
    edit = latest_edit(request)
    if edit is None:
        return window.text
    rows = _rows(request.text)
    old_rows = rows[:edit.first] + edit.old + rows[edit.end:]
    delta = len(edit.old) - (edit.end - edit.first)

    def to_old(row: int) -> int:
        if row < edit.first:
            return row
        if row >= edit.end:
            return row + delta
        return edit.first + min(row - edit.first, len(edit.old))

    old_first = to_old(window.first_row)
    old_end = to_old(window.last_row + 1)  # exclusive
    if old_end <= old_first:
        return ""
    return _span(old_rows, old_first, old_end - 1)
