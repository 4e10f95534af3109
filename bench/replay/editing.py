"""What both simulated users of the typing replay share: the region of a file they type, LSP positions, how an
inline completion answer is recorded, and how much of a suggestion is right.

A module of its own so that the passive user (`typing_replay`, which also owns the command line) and the accepting
user (`accepting_user`) both import it, and neither imports the other's internals in a cycle."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

#: Extension → LSP languageId for the files the replay accepts.
LANGUAGE_IDS = {".py": "python", ".js": "javascript", ".ts": "typescript", ".rs": "rust", ".go": "go",
                ".java": "java", ".c": "c", ".h": "c", ".cpp": "cpp", ".rb": "ruby", ".lua": "lua"}


@dataclass(frozen=True)
class Region:
    """`text[start:end]` is typed; `text[:start]` and `text[end:]` are in the document from the start."""

    start: int
    end: int


def choose_region(text: str, start_fraction: float, max_keystrokes: int) -> Region:
    """Whole lines from the first line start at or after `start_fraction` of the file, skipping that line's
    indentation (as if the editor had put it there). It ends at the first line end after `max_keystrokes`
    keystrokes (or the end of the file), so the cursor's line never has text after it."""
    start = 0 if start_fraction <= 0 else text.find("\n", int(len(text) * start_fraction)) + 1
    if start <= 0 or start >= len(text):
        start = 0
    while start < len(text) and text[start] in " \t":
        start += 1
    end = start
    count = 0
    while end < len(text):
        if text[end] == "\n":
            if count >= max_keystrokes:
                break
            end += 1
            while end < len(text) and text[end] in " \t":
                end += 1
        else:
            end += 1
        count += 1
    return Region(start, end)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def position_of(text: str) -> tuple[int, int]:
    """LSP position (utf-16) of the end of `text`."""
    line = text.count("\n")
    last = text[text.rfind("\n") + 1:]
    return line, utf16_len(last)


def accepted_chars(suggestion: str, typed_next: str) -> int:
    """Characters of the suggestion a user could accept: the common beginning with what they typed next."""
    n = 0
    for a, b in zip(suggestion, typed_next):
        if a != b:
            break
        n += 1
    return n


@dataclass(kw_only=True)
class Answer:
    """One inline request as both replays (this one and the accepting user's) record it: when it was sent, when
    and how it was answered, and whether its suggestion reached the screen."""

    file: str
    sent: float
    answered: float | None = None
    error: str | None = None
    text: str | None = None  # the first item's text after the cursor; None when empty
    shown: bool = False

    @property
    def latency_ms(self) -> float | None:
        return None if self.answered is None else (self.answered - self.sent) * 1000.0


def _percentile(values: Sequence[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def _delta(before: dict[str, Any] | None, after: dict[str, Any] | None, key: str) -> float | None:
    if not before or not after or key not in after:
        return None
    return after[key] - before.get(key, 0)


def _items(result: Any) -> list[Any]:
    if result is None:
        return []
    if isinstance(result, list):
        return result
    return list(getattr(result, "items", None) or [])


def _item_text(item: Any) -> str:
    text = item.insert_text
    return text if isinstance(text, str) else getattr(text, "value", "")


def answer_item(future: Any, record: Answer) -> Any | None:
    """Note on `record` when (and whether successfully) a request was answered; the answer's first item."""
    record.answered = time.perf_counter()
    if future.cancelled():
        record.error = "cancelled by the client"
        return None
    exc = future.exception()
    if exc is not None:
        record.error = f"{type(exc).__name__}: {exc}"
        return None
    items = _items(future.result())
    return items[0] if items else None

