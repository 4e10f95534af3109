"""The user's recent edits as hunks, fed by the document store's own changes, for prompts and propagation.

Per keystroke only the lines a change touches are read (before it is applied) and kept: a hunk holds its lines
before the first edit and as they are now, never a copy of the document. Edits coalesce into the newest hunk when
they are in the same document, at most NEARBY_LINES lines from it and less than PAUSE_S after its last edit (Zed's
rules: a rename typed character by character is one event; a change elsewhere or after a pause is the next one).
Across documents there is one history, newest last, so an edit in one file can predict the next in another.

Undo and redo: a hunk whose lines come back to where they started (an undo within the hunk) is dropped, and a new
hunk that exactly reverts the document's newest one (an undo after a pause) removes both, so neither prompts nor
propagation repeat a change the user took back. A redo is an edit like any other. A large change (a paste of more
than BULK_CHARS characters or BULK_LINES lines, or as large a deletion) is one event of its own, kept for prompts
but marked `bulk`, so propagation does not repeat it (but for a block condensed, `Hunk.condensed`) and later typing
does not coalesce into it."""

from __future__ import annotations

import dataclasses
import difflib
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator

from engine.next_edit.diff import common_ends
from engine.next_edit.types import EditEvent

from ..documents import LINE_BREAK

PAUSE_S = 1.0
NEARBY_LINES = 8
BULK_CHARS = 200
BULK_LINES = 8
#: A hunk that would grow past this many lines on either side starts a new one (sweep shows ≤ 40 lines per side).
MAX_HUNK_LINES = 40
#: Lines of a bulk event that are kept (for the prompt; the rest is cut).
BULK_KEEP_LINES = 60
MAX_EVENTS = 32
#: Characters per token when budgeting the history (zeta's bytes/3: code tokenizes denser than prose).
CHARS_PER_TOKEN = 3

#: Reads lines first..last (inclusive, 0-based) of the document as it is before the change; "" past its end.
LineReader = Callable[[int, int], "list[str]"]


@dataclass
class Hunk:
    uri: str
    path: str
    language: str
    #: First line of `new` in the document's current text.
    start: int
    old: list[str]
    new: list[str]
    last_edit: float
    bulk: bool = False
    #: The line of the newest change in the hunk (current text).
    last_line: int = 0

    @property
    def end(self) -> int:
        """One past the last current line of the hunk."""
        return self.start + len(self.new)

    def event(self) -> EditEvent:
        return EditEvent(self.path, self.start, "".join(f"{line}\n" for line in self.old),
                         "".join(f"{line}\n" for line in self.new))

    def condensed(self) -> bool:
        """Whether the hunk replaced a few whole lines (a block, at most BULK_LINES) by fewer, shorter ones (a
        helper's call for its body): a large deletion that is a rewrite, not text thrown away or pasted."""
        return 1 < len(self.old) <= BULK_LINES and 0 < len(self.new) < len(self.old) \
            and sum(map(len, self.new)) <= BULK_CHARS

    def latest_part(self) -> EditEvent | None:
        """The changed lines of the hunk nearest its newest change, when the hunk has several (an edit typed
        within a second of another one nearby joins its hunk, yet may be the substitution to repeat)."""
        groups = [op for op in difflib.SequenceMatcher(None, self.old, self.new, autojunk=False).get_opcodes()
                  if op[0] != "equal"]
        if len(groups) < 2:
            return None
        line = self.last_line - self.start
        _, i1, i2, j1, j2 = min(groups, key=lambda op: 0 if op[3] <= line < max(op[4], op[3] + 1)
                                else min(abs(line - op[3]), abs(line - op[4])))
        return EditEvent(self.path, self.start + j1, "".join(f"{x}\n" for x in self.old[i1:i2]),
                         "".join(f"{x}\n" for x in self.new[j1:j2]))

    def size(self) -> int:
        return sum(map(len, self.old)) + sum(map(len, self.new)) + len(self.old) + len(self.new) + len(self.path)


def split_lines(text: str) -> list[str]:
    """LSP's lines of `text` (breaks at "\\r\\n", "\\r", "\\n"; the last line may be empty). str.split where there
    is no "\\r": the regular expression took 11 ms on a 5 MB minified line, twice per keystroke in it."""
    return text.split("\n") if "\r" not in text else LINE_BREAK.split(text)


def _trim(start: int, old: list[str], new: list[str]) -> tuple[int, list[str], list[str]]:
    """Drop the lines both sides share at their beginning and end."""
    head, tail = common_ends(old, new)
    return start + head, old[head:len(old) - tail], new[head:len(new) - tail]


def changed_span(old: str, new: str) -> tuple[int, int, int]:
    """(start, old_end, new_end): `new` is `old` with old[start:old_end] replaced by new[start:new_end]. For clients
    that send whole documents; comparisons of slices run in C, so 2 MB cost a few milliseconds."""
    lo, hi = 0, min(len(old), len(new))
    while lo < hi:  # the longest common prefix, by bisection
        mid = (lo + hi + 1) // 2
        if old[:mid] == new[:mid]:
            lo = mid
        else:
            hi = mid - 1
    start = lo
    lo, hi = 0, min(len(old), len(new)) - start
    while lo < hi:  # the longest common suffix not overlapping the prefix
        mid = (lo + hi + 1) // 2
        if old[len(old) - mid:] == new[len(new) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return start, len(old) - lo, len(new) - lo


class EditHistory:
    """The recent hunks of all documents, oldest first. `clock` is injectable so that tests need no sleeps."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_events: int = MAX_EVENTS) -> None:
        self.clock = clock
        self._events: deque[Hunk] = deque(maxlen=max_events)

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[Hunk]:
        return iter(self._events)

    def newest(self, uri: str | None = None) -> Hunk | None:
        """The newest hunk (of `uri`, when given)."""
        for hunk in reversed(self._events):
            if uri is None or hunk.uri == uri:
                return hunk
        return None

    def record(self, uri: str, path: str, language: str, start: tuple[int, int], end: tuple[int, int], text: str,
               read_lines: LineReader) -> None:
        """One ranged change, before the document applies it: replace from `start` to `end` ((line, code-point
        column), clamped to the document) by `text`."""
        (a_line, a_col), (b_line, b_col) = start, end
        inserted = split_lines(text)
        bulk = len(text) > BULK_CHARS or len(inserted) - 1 > BULK_LINES or b_line - a_line > BULK_LINES
        if bulk:  # keep only what a prompt could show
            before = read_lines(a_line, min(b_line, a_line + BULK_KEEP_LINES))
            if b_line > a_line + BULK_KEEP_LINES:
                before = before + read_lines(b_line, b_line)
        else:
            before = read_lines(a_line, b_line)
        after = split_lines(before[0][:a_col] + text + before[-1][b_col:])
        if bulk:
            after = after[:BULK_KEEP_LINES]
        elif sum(map(len, before)) - min(a_col, len(before[0])) - max(0, len(before[-1]) - b_col) > BULK_CHARS:
            bulk = True  # a large deletion within a few lines
        if before == after:
            return
        now = self.clock()
        last = self._events[-1] if self._events else None
        if not bulk and last is not None and self._coalesces(last, uri, a_line, b_line, now):
            lo, hi = min(last.start, a_line), max(last.end - 1, b_line)
            current = before if (lo, hi) == (a_line, b_line) else read_lines(lo, hi)  # typing in the hunk's line
            rel = last.start - lo
            old = current[:rel] + last.old + current[rel + len(last.new):]
            erel = a_line - lo
            new = current[:erel] + after + current[erel + b_line - a_line + 1:]
            last.start, last.old, last.new = _trim(lo, old, new)
            last.last_edit, last.last_line = now, a_line
            if last.old == last.new:  # undone within the hunk
                self._events.pop()
            return
        first, old, new = _trim(a_line, before, after)
        hunk = Hunk(uri, path, language, first, old, new, now, bulk, a_line)
        previous = self.newest(uri)
        if previous is not None and not bulk and previous.start == hunk.start and previous.old == hunk.new \
                and previous.new == hunk.old:
            self._events.remove(previous)  # an undo of the document's newest edit: as if neither happened
            return
        self._events.append(hunk)

    @staticmethod
    def _coalesces(last: Hunk, uri: str, a_line: int, b_line: int, now: float) -> bool:
        if last.uri != uri or last.bulk or now - last.last_edit > PAUSE_S:
            return False
        if a_line > last.end - 1 + NEARBY_LINES or b_line < last.start - NEARBY_LINES:
            return False
        lo, hi = min(last.start, a_line), max(last.end - 1, b_line)
        return hi - lo + 1 <= MAX_HUNK_LINES

    def copy(self) -> EditHistory:
        """An independent copy (the same clock): what the history would be after an edit not yet made, for a
        prediction made before it (prefetch.py)."""
        other = EditHistory(self.clock, self._events.maxlen or MAX_EVENTS)
        other._events.extend(dataclasses.replace(h, old=list(h.old), new=list(h.new)) for h in self._events)
        return other

    def forget(self, uri: str) -> None:
        """Drop a document's hunks (it became excluded, or its text was replaced by a new didOpen)."""
        for hunk in [h for h in self._events if h.uri == uri]:
            self._events.remove(hunk)

    def events(self, budget_tokens: int, keep: Callable[[Hunk], bool] = lambda hunk: True
               ) -> tuple[EditEvent, ...]:
        """The newest hunks that fit in `budget_tokens` (and that `keep` accepts), oldest first as prompts want."""
        out: list[EditEvent] = []
        budget = budget_tokens * CHARS_PER_TOKEN
        for hunk in reversed(self._events):
            if not keep(hunk):
                continue
            size = hunk.size()
            if size > budget:
                break
            budget -= size
            out.append(hunk.event())
        return tuple(reversed(out))
