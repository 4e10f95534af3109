"""Where the model should look when propagation found nothing: the next line below the cursor's window that still
holds a name the user's last edit removed.

Most real next edits lie outside the ±10-line window around the cursor (58 % on the benchmark's dev tasks, median 15
lines below), where a model shown only that window cannot reach them. A name the last edit removed (renamed,
replaced) that still stands further below marks the likeliest place of the next edit, so the window is centred
there (`NextEditRequest.focus`). Where such a name still stands inside the cursor's own window, the window stays:
the next edit is likely there."""

from __future__ import annotations

import re

from engine.next_edit.types import EditEvent

_NAME = re.compile(r"[^\W\d]\w*")
#: How far below the cursor a focus may be (lines).
MAX_LINES = 200


def removed_names(event: EditEvent) -> set[str]:
    """Names of the event's old lines that its new lines no longer have."""
    return set(_NAME.findall(event.old)) - set(_NAME.findall(event.new))


def jump_focus(event: EditEvent, text: str, cursor: int, lines_below: int, max_lines: int = MAX_LINES) -> int | None:
    """The offset (in `text`, LF line breaks) of the line to centre the model's window on, or None for the cursor."""
    names = removed_names(event)
    if not names:
        return None
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?!\w)")
    line_start = text.rfind("\n", 0, cursor) + 1
    at = line_start
    for row in range(max_lines + 1):
        end = text.find("\n", at)
        line = text[at:] if end < 0 else text[at:end]
        if (row > 0 or at < cursor) and pattern.search(line):
            return None if row <= lines_below else at
        if end < 0:
            return None
        at = end + 1
    return None
