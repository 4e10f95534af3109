"""Identifiers, windows and similarity: the small pure functions every source and the ranking share."""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterator

_IDENTIFIER = re.compile(r"[^\W\d]\w*")

#: Keywords and very common words of the languages we index: they say nothing about which file is related
#: (Copilot's similar-files ranking drops stop words the same way).
STOP_WORDS = frozenset("""
and as assert async await break case catch class const continue def default del do elif else enum export extends
false final finally fn for from func function go if impl implements import in interface is let match mod mut new nil
none not null or package pass private protected pub public raise return self static struct super switch this throw
throws true try type typeof use var void while with yield int str string bool float char long double byte unsigned
include define ifdef endif ifndef return self cls err ok len the of to it
""".split())


def identifiers(text: str) -> list[str]:
    """The identifiers of `text`, in order, without keywords and one-letter names."""
    return [word for word in _IDENTIFIER.findall(text) if len(word) > 1 and word not in STOP_WORDS]


def term_counts(text: str) -> Counter:
    return Counter(identifiers(text))


def jaccard(a: set | frozenset, b: set | frozenset) -> float:
    if not a or not b:
        return 0.0
    common = len(a & b)
    return common / (len(a) + len(b) - common)


def windows(lines: list[str], size: int, step: int) -> Iterator[tuple[int, int]]:
    """(start, end) line ranges of `size` lines every `step` lines, the last one ending at the last line."""
    n = len(lines)
    if n == 0:
        return
    if n <= size:
        yield 0, n
        return
    start = 0
    while True:
        end = min(start + size, n)
        yield start, end
        if end >= n:
            return
        start += step
        if start + size > n:  # the tail gets a full window ending at the last line
            start = max(0, n - size)


def split_lines(text: str) -> list[str]:
    """Lines without their breaks (LF or CRLF)."""
    return text.replace("\r\n", "\n").split("\n")
