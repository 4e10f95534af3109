"""Recent completions, so that the same cursor context never costs a second model call.

Two lookups, both O(1) in the number of entries:
- exact: an LRU keyed by (document, prefix, suffix) with a time-to-live;
- typing-through: per document, the suggestion last shown. When the new prefix is the shown prefix plus characters
  that match the beginning of the suggestion (and the suffix is unchanged), the rest of the suggestion is returned
  at once. Comparing strings by `startswith` avoids Tabby's one-entry-per-typed-character forwarding table, which
  would hold a copy of the key for every character."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

Clock = Callable[[], float]


@dataclass(frozen=True)
class CacheEntry:
    texts: tuple[str, ...]
    created: float


@dataclass(frozen=True)
class Shown:
    """The suggestions last returned for a document, with the context they were computed for."""

    prefix: str
    suffix: str
    texts: tuple[str, ...]
    created: float


class CompletionCache:
    def __init__(self, max_entries: int = 100, ttl: float = 300.0, typing_through_max: int = 50,
                 clock: Clock = time.monotonic) -> None:
        self.max_entries = max_entries
        self.ttl = ttl
        self.typing_through_max = typing_through_max
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str, str], CacheEntry] = OrderedDict()
        self._shown: dict[str, Shown] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def _fresh(self, created: float) -> bool:
        return self._clock() - created <= self.ttl

    def get(self, uri: str, prefix: str, suffix: str) -> tuple[str, ...] | None:
        key = (uri, prefix, suffix)
        entry = self._entries.get(key)
        if entry is None:
            return None
        if not self._fresh(entry.created):
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry.texts

    def put(self, uri: str, prefix: str, suffix: str, texts: tuple[str, ...]) -> None:
        if self.max_entries <= 0:
            return
        key = (uri, prefix, suffix)
        self._entries[key] = CacheEntry(tuple(texts), self._clock())
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def remember_shown(self, uri: str, prefix: str, suffix: str, texts: tuple[str, ...]) -> None:
        if texts:
            self._shown[uri] = Shown(prefix, suffix, tuple(texts), self._clock())

    def typing_through(self, uri: str, prefix: str, suffix: str) -> tuple[str, ...] | None:
        """The rest of the shown suggestions after the characters typed since they were shown, or None."""
        shown = self._shown.get(uri)
        if shown is None or suffix != shown.suffix or not self._fresh(shown.created):
            return None
        if len(prefix) <= len(shown.prefix) or len(prefix) - len(shown.prefix) > self.typing_through_max:
            return None
        if not prefix.startswith(shown.prefix):
            return None
        typed = prefix[len(shown.prefix):]
        rests = tuple(text[len(typed):] for text in shown.texts if text.startswith(typed) and len(text) > len(typed))
        return rests or None

    def forget_document(self, uri: str) -> None:
        self._shown.pop(uri, None)
        for key in [k for k in self._entries if k[0] == uri]:
            del self._entries[key]

    def clear(self) -> None:
        self._entries.clear()
        self._shown.clear()
