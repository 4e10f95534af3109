"""The discard rules: model answers that must not reach the editor even though they parse.

A next edit is shown unasked, away from where the user types: a wrong one costs attention, a destructive one
costs code. So an edit is dropped when it is no edit (no change, only whitespace), when it is the model's
machinery showing (a leaked control token), when it undoes what the user just did, or when it is too big to be a
"next edit" at all. Truncated and malformed answers never get here (the parser gives no window for them).

The thresholds, and why. "A hunk a person makes in one go" is at most 8 lines (the bound of Zed's word diff, and the
benchmark's task hunks, bench/next_edit/tasks.py): an answer past that is not one next edit.
- LARGE_DELETION_LINES = 9: an edit removing 9 or more lines more than it adds is dropped. A model that lost track of
  its window (fell short, ended early; Zed#52770's self-hosted Zeta 2 "deleting large regions") deletes blocks; a
  person's next edit deletes at most the 8 lines of one hunk.
- LARGE_DELETION_CHARS = 1000: the same for long lines: an edit that removes 1000 characters or more and adds only
  whitespace (or nothing) is dropped whatever its line count.
- HUGE_REWRITE_LINES = 20: an edit adding more than 20 lines more than it removes is dropped: Sweep's server cuts
  off more than 20 added lines, and a next-edit window is 21 lines; such an output is generation, not an edit.
- HUGE_REWRITE_FACTOR = 3 (+ 1000 characters): a rewritten window over three times the size of the window is junk
  (a model repeating itself) whatever edit the diff would pick from it.
- REWRITE_SHARE = 1/2, over REWRITE_MIN_LINES = 8 lines: a rewrite changing more than half of the window's lines, and
  more than one hunk's worth, is a rewrite of the window, not an edit in it (Sweep's server drops ≥ 5 added and
  ≥ 5 deleted lines for the same reason); and so is a rewrite keeping none of the lines of a window of 3 or more (a
  model answering in prose, or with another file)."""

from __future__ import annotations

import difflib
import re

from .diff import apply_edit
from .types import NextEditRequest, TextEdit
from .window import text_before_latest_edit

LARGE_DELETION_LINES = 9
LARGE_DELETION_CHARS = 1000
HUGE_REWRITE_LINES = 20
HUGE_REWRITE_FACTOR = 3
HUGE_REWRITE_SLACK = 1000
REWRITE_SHARE = 0.5
REWRITE_MIN_LINES = 8

_SPACE = re.compile(r"\s+")


def leaked_sentinel(rewritten: str, current: str, tokens: tuple[str, ...]) -> str | None:
    """The first control token in the rewrite that the current window does not hold itself."""
    for token in tokens:
        if token in rewritten and token not in current:
            return token
    return None


def _indents(lines: str) -> list[str]:
    return [line[:len(line) - len(line.lstrip())] for line in lines.split("\n") if line.strip()]


def is_whitespace_only(text: str, edit: TextEdit) -> bool:
    """The edit changes nothing but whitespace (a formatter's business, not a next edit: vscode#258482), and not
    the indentation of a line of code either (in Python or YAML that moves the line into or out of a block)."""
    if _SPACE.sub("", text[edit.start:edit.end]) != _SPACE.sub("", edit.text):
        return False
    line_start = text.rfind("\n", 0, edit.start) + 1
    line_end = text.find("\n", edit.end)
    line_end = len(text) if line_end < 0 else line_end
    before = text[line_start:line_end]
    after = text[line_start:edit.start] + edit.text + text[edit.end:line_end]
    old, new = _indents(before), _indents(after)
    return len(old) != len(new) or old == new


def is_revert(request: NextEditRequest, edit: TextEdit) -> bool:
    """Applying the edit gives the file as it was before the user's own last edit of it."""
    before = text_before_latest_edit(request)
    return before is not None and before != request.text and apply_edit(request.text, edit) == before


def is_large_deletion(text: str, edit: TextEdit) -> bool:
    removed = text[edit.start:edit.end]
    if removed.count("\n") - edit.text.count("\n") >= LARGE_DELETION_LINES:
        return True
    return len(removed) >= LARGE_DELETION_CHARS and not edit.text.strip()


def _changed_lines(window: str, rewritten: str) -> tuple[int, int]:
    """(lines of the window, how many of them the rewrite does not keep)."""
    old, new = window.splitlines(), rewritten.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    kept = sum(block.size for block in matcher.get_matching_blocks())
    return len(old), len(old) - kept


def is_huge_rewrite(window: str, rewritten: str, edit: TextEdit | None, text: str) -> bool:
    if len(rewritten) > HUGE_REWRITE_FACTOR * len(window) + HUGE_REWRITE_SLACK:
        return True
    if edit is not None and edit.text.count("\n") - text[edit.start:edit.end].count("\n") > HUGE_REWRITE_LINES:
        return True
    if not rewritten.strip():
        return False  # nothing left: a deletion (or no change), judged as such
    lines, changed = _changed_lines(window, rewritten)
    if changed > REWRITE_MIN_LINES and changed > REWRITE_SHARE * lines:
        return True
    return lines >= 3 and changed == lines


def discard_reason(request: NextEditRequest, window: str, rewritten: str, edit: TextEdit | None,
                   sentinels: tuple[str, ...]) -> str | None:
    """Why the edit (from `rewritten`, the model's version of `window`) is dropped, or None to keep it."""
    if leaked_sentinel(rewritten, window, sentinels) is not None:
        return "sentinel"
    if is_huge_rewrite(window, rewritten, edit, request.text):
        return "huge rewrite"
    if edit is None:
        return "no change"
    if is_whitespace_only(request.text, edit):
        return "whitespace only"
    if is_revert(request, edit):
        return "revert"
    if is_large_deletion(request.text, edit):
        return "large deletion"
    return None
