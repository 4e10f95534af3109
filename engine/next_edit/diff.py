"""The model's rewritten window → one minimal edit of the file.

A next-edit model rewrites a whole window; the editor shows (and the user accepts) one change. So the window is
diffed line by line; of the changed hunks, the one nearest the cursor is kept (the clients show one edit per request
and ask again after it is accepted, which brings the next hunk); inside a small hunk a word diff finds the changed
words, and the common beginning and end are trimmed off, so that "count" → "counter" is the insertion of "er"
(ghost text at the cursor) rather than the replacement of a line.

Why difflib: it is in the standard library (no dependency for one diff per suggestion), and its SequenceMatcher
over lines is the same kind of diff as Sweep's server (difflib, n=0 hunks); Zed uses imara-diff's histogram diff,
which differs only in how it aligns repeated lines, and a 21-line window has few of those. `autojunk` is off: on
short inputs its "popular element" heuristic (lines occurring in more than 1% of a sequence of 200+ items) would
only make alignments worse."""

from __future__ import annotations

import difflib
import re
from typing import Sequence, TypeVar

from .types import TextEdit

#: Word diff only inside hunks of at most this many lines (both sides together) and bytes (UTF-8, both sides), as
#: Zed's text_diff.rs: beyond that a word alignment is slow and no more readable than whole lines.
WORD_DIFF_MAX_LINES = 8
WORD_DIFF_MAX_BYTES = 512

#: Changed hunks at most this many unchanged lines apart are one edit (see _line_hunks).
MERGE_GAP_LINES = 1

T = TypeVar("T")

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)


def _line_hunks(current: list[str], rewritten: list[str]) -> list[tuple[int, int, int, int]]:
    """The changed line ranges (i1, i2, j1, j2), with hunks that only an unchanged line or blank lines separate
    merged into one: difflib anchors on the first equal line it finds, and a lone shared line (a blank, a closing
    bracket) inside a changed block is an artefact of that, not a boundary between two edits. (A changed line with
    new lines added after a blank line came out as two hunks, and the edit kept only the first.)"""
    matcher = difflib.SequenceMatcher(None, current, rewritten, autojunk=False)
    hunks: list[tuple[int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if hunks:
            p1, p2, q1, q2 = hunks[-1]
            gap = current[p2:i1]
            if len(gap) <= MERGE_GAP_LINES or not "".join(gap).strip():
                hunks[-1] = (p1, i2, q1, j2)
                continue
        hunks.append((i1, i2, j1, j2))
    return hunks


def _offsets(lines: list[str]) -> list[int]:
    """Start offset of each line and, last, the end of the text."""
    out = [0]
    for line in lines:
        out.append(out[-1] + len(line))
    return out


def _distance(start: int, end: int, cursor: int) -> int:
    if start <= cursor <= end:
        return 0
    return start - cursor if cursor < start else cursor - end


def common_ends(old: Sequence[T], new: Sequence[T]) -> tuple[int, int]:
    """How many items (characters, lines, tokens) `old` and `new` share at their beginning, and then how many of
    the rest at their end: what is left between them is the one change. One trim for every unit the next-edit code
    diffs in."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    limit -= prefix
    while suffix < limit and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    return prefix, suffix


def changed_span(old: str, new: str) -> tuple[int, int, str]:
    """The one change from `old` to `new` with the common beginning and end trimmed off: [start, end) of `old`
    replaced by the returned text."""
    prefix, suffix = common_ends(old, new)
    return prefix, len(old) - suffix, new[prefix:len(new) - suffix]


def _word_span(old: str, new: str) -> tuple[int, int, int, int]:
    """The changed span of a small hunk at word boundaries: (old start, old end, new start, new end) from the first
    to the last changed word."""
    old_tokens, new_tokens = _TOKEN.findall(old), _TOKEN.findall(new)
    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    old_at, new_at = _offsets(old_tokens), _offsets(new_tokens)
    first, last = changes[0], changes[-1]
    return old_at[first[1]], old_at[last[2]], new_at[first[3]], new_at[last[4]]


def minimal_edit(current: str, rewritten: str, cursor: int, window_start: int) -> TextEdit | None:
    """One edit of the file turning the window `current` (which starts at `window_start` in the file) towards
    `rewritten`: the changed hunk nearest to `cursor` (an offset in the file, like `window_start`; ties go to the
    hunk after the cursor), with its common beginning and end trimmed off. None when nothing changed."""
    if current == rewritten:
        return None
    old_lines = current.splitlines(keepends=True)
    new_lines = rewritten.splitlines(keepends=True)
    hunks = _line_hunks(old_lines, new_lines)
    if not hunks:
        return None
    old_at, new_at = _offsets(old_lines), _offsets(new_lines)
    local_cursor = cursor - window_start

    def rank(hunk: tuple[int, int, int, int]) -> tuple[int, int]:
        start, end = old_at[hunk[0]], old_at[hunk[1]]
        return _distance(start, end, local_cursor), 0 if start >= local_cursor else 1

    i1, i2, j1, j2 = min(hunks, key=rank)
    old_start, new_start = old_at[i1], new_at[j1]
    old = current[old_start:old_at[i2]]
    new = rewritten[new_start:new_at[j2]]
    lines = (i2 - i1) + (j2 - j1)
    if lines <= WORD_DIFF_MAX_LINES and len(old.encode("utf-8")) + len(new.encode("utf-8")) <= WORD_DIFF_MAX_BYTES:
        a, b, c, d = _word_span(old, new)
        old_start, new_start = old_start + a, new_start + c
        old, new = old[a:b], new[c:d]
    first, last, text = changed_span(old, new)
    start, end = window_start + old_start + first, window_start + old_start + last
    if start == end and not text:
        return None
    return TextEdit(start=start, end=end, text=text)


def apply_edit(text: str, edit: TextEdit) -> str:
    return text[:edit.start] + edit.text + text[edit.end:]
