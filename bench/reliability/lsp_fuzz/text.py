"""The reference model of every document, written from LSP's rules independently of the server's: where a position
falls in either position encoding (UTF-16 or UTF-8 code units), where lines break (\\n, \\r\\n and \\r only), what
the engine sends for a piece of text (`as_sent`), and the random texts and positions the fuzz edits and asks at."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

SURROGATE = re.compile("[\ud800-\udfff]")

_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[tuple[int, int]]:
    """(start, end without break) of each line; LSP breaks lines at \\n, \\r\\n and \\r only."""
    out, start = [], 0
    for match in _BREAK.finditer(text):
        out.append((start, match.start()))
        start = match.end()
    out.append((start, len(text)))
    return out


def units(ch: str, encoding: str) -> int:
    cp = ord(ch)
    if encoding == "utf-16":
        return 2 if cp > 0xFFFF else 1
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


def offset_at(text: str, line: int, character: int, encoding: str) -> int:
    """Offset of an LSP position; a line past the end is the end of the document, a character past the end of its
    line the end of the line (positions inside a character are never generated)."""
    lines = split_lines(text)
    if line >= len(lines):
        return len(text)
    start, end = lines[line]
    column = 0
    for i in range(start, end):
        if column >= character:
            return i
        column += units(text[i], encoding)
    return end


def column_of(text: str, offset: int, encoding: str) -> tuple[int, int]:
    lines = split_lines(text)
    for number, (start, end) in enumerate(lines):
        if start <= offset <= end:
            return number, sum(units(ch, encoding) for ch in text[start:offset])
    return len(lines) - 1, 0


def as_sent(text: str) -> str:
    """What the engine sends for a piece of document text: LF line endings, lone surrogates as U+FFFD."""
    return SURROGATE.sub("\ufffd", text.replace("\r\n", "\n"))


PIECES = ["def f(x):\n", "    return x + 1\n", "import os\n", "x = 1", "if a:\n    b()\n", "class A:\n", "    ",
          "\t", "(", ")", "[", "]", "{", "}", "'", '"', "# note\n", "// c\n", "é", "ß", "中文", "😀", "👍🏽", "e\u0301",
          "\r\n", "\r", "\n", "\n\n", "\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\x00", "\x1b",
          "\x7f", "\ud800", "\udfff", "\udc00x", "\ufeff", "\u200b", "return ", "for i in range(3):\n", "None",
          "function g() {\n", "};\n", " = ", "y", "z", "0", "  \n"]


def random_text(rng: random.Random, pieces: int) -> str:
    """Random text as the server will read it: JSON makes one character of a high and a low surrogate that end up
    side by side in one string (as a UTF-16 editor would), so the reference does the same."""
    return json.loads(json.dumps("".join(rng.choice(PIECES) for _ in range(pieces))))


def big_text(rng: random.Random, size: int) -> str:
    block = "".join(rng.choice(PIECES[:20]) for _ in range(200)) + "\n"
    return (block * (size // len(block) + 1))[:size]


def random_position(rng: random.Random, text: str, encoding: str) -> tuple[int, int]:
    """Mostly a real position (on a character boundary); sometimes past the end of its line or of the document."""
    lines = split_lines(text)
    roll = rng.random()
    if roll < 0.05:
        return len(lines) + rng.randint(0, 3), rng.randint(0, 5)
    number = rng.randrange(len(lines))
    start, end = lines[number]
    width = sum(units(ch, encoding) for ch in text[start:end])
    if roll < 0.15:
        return number, width + rng.randint(1, 5)
    index = rng.randint(start, end)
    return number, sum(units(ch, encoding) for ch in text[start:index])


@dataclass
class Doc:
    """An open document as the reference holds it (the server must hold the same)."""

    text: str
    version: int
    language: str | int  # the languageId sent: a fuzz sends numbers too
    excluded: bool = False
