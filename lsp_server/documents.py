"""Open documents and position ⇄ offset conversion in the negotiated position encoding.

LSP positions count code units of utf-16 (default), utf-8 or utf-32 within a line, and lines end at "\\n", "\\r\\n"
or "\\r" only (not at the other characters `str.splitlines` treats as breaks). Getting this wrong shifts the cursor by
one per emoji or per CRLF, so the conversion is done here with LSP's own rules instead of pygls' helpers; the text is
kept exactly as the editor has it (CRLF included) so that prefix and suffix are byte-faithful."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlsplit, urlunsplit

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"
ENCODINGS = (UTF8, UTF16, UTF32)


def line_starts(text: str) -> list[int]:
    """Offsets (in code points) where each line begins; a "\\r\\n" pair counts as one break."""
    starts = [0]
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            starts.append(i + 1)
        elif ch == "\r":
            if i + 1 < n and text[i + 1] == "\n":
                i += 1
            starts.append(i + 1)
        i += 1
    return starts


def code_units(ch: str, encoding: str) -> int:
    """How many code units one code point takes in `encoding`."""
    cp = ord(ch)
    if encoding == UTF16:
        return 2 if cp > 0xFFFF else 1
    if encoding == UTF8:
        return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    return 1


def column_to_index(line: str, column: int, encoding: str) -> int:
    """Code-point index in `line` (no line break) for a column in code units; past the end clamps to the end.

    A column that falls inside a character (half a surrogate pair, part of a UTF-8 sequence) rounds down."""
    if encoding == UTF32:
        return max(0, min(column, len(line)))
    units = 0
    for index, ch in enumerate(line):
        width = code_units(ch, encoding)
        if units + width > column:
            return index
        units += width
    return len(line)


def index_to_column(line: str, index: int, encoding: str) -> int:
    if encoding == UTF32:
        return index
    return sum(code_units(ch, encoding) for ch in line[:index])


def _strip_break(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith(("\n", "\r")):
        return line[:-1]
    return line


@dataclass
class Document:
    uri: str
    text: str
    language_id: str = "plaintext"
    version: int | None = None
    _starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._starts = line_starts(self.text)

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line(self, number: int) -> str:
        """Line `number` without its line break ("" past the end)."""
        if number < 0 or number >= len(self._starts):
            return ""
        start = self._starts[number]
        end = self._starts[number + 1] if number + 1 < len(self._starts) else len(self.text)
        return _strip_break(self.text[start:end])

    def offset_at(self, line: int, character: int, encoding: str = UTF16) -> int:
        """Code-point offset of an LSP position; positions past the end of a line or the document clamp."""
        if line < 0:
            return 0
        if line >= len(self._starts):
            return len(self.text)
        return self._starts[line] + column_to_index(self.line(line), character, encoding)

    def position_at(self, offset: int, encoding: str = UTF16) -> tuple[int, int]:
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._starts, offset) - 1
        start = self._starts[line]
        text = self.line(line)
        return line, index_to_column(text, min(offset - start, len(text)), encoding)

    def apply_change(self, text: str, range_: tuple[int, int, int, int] | None, encoding: str = UTF16) -> None:
        """Apply one content change: a whole-document replacement (range None) or a ranged edit
        `(start_line, start_character, end_line, end_character)` in client units."""
        if range_ is None:
            self.text = text
        else:
            start = self.offset_at(range_[0], range_[1], encoding)
            end = self.offset_at(range_[2], range_[3], encoding)
            if end < start:
                start, end = end, start
            self.text = self.text[:start] + text + self.text[end:]
        self._starts = line_starts(self.text)


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
#: Characters left as they are in a file URI's path (RFC 3986 pchar minus "%"), so `quote` escapes the same set
#: whatever the client escaped.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_DRIVE = re.compile(r"/([A-Za-z]):")


def normalize_uri(uri: str) -> str:
    """One key per document however the client spells its URI.

    Clients differ: VS Code sends `file:///c%3A/x.py`, Neovim `file:///C:/x.py`; a fuzzer sends `a%2Epy` for `a.py`.
    For `file:` URIs the path is decoded and re-encoded with one fixed safe set (a file name cannot contain "/", so
    decoding `%2F` conflates nothing) and a Windows drive letter is lower-cased (as VS Code does). Other schemes get
    RFC 3986's equivalences only: upper-case escapes, unreserved characters decoded, lower-case scheme."""
    try:
        parts = urlsplit(uri)
    except ValueError:  # e.g. an unbalanced "[" in the authority: keep the URI as its own key
        return uri
    scheme = parts.scheme.lower()
    if scheme == "file":
        path = unquote(parts.path, errors="surrogateescape")
        path = _DRIVE.sub(lambda m: f"/{m.group(1).lower()}:", path, count=1) if _DRIVE.match(path) else path
        path = quote(path, safe=_PATH_SAFE, errors="surrogateescape")
        return urlunsplit(("file", parts.netloc.lower(), path, parts.query, parts.fragment))
    rest = uri[len(parts.scheme) + 1:] if parts.scheme else uri
    rest = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if chr(int(m.group(1), 16)) in _UNRESERVED
                       else "%" + m.group(1).upper(), rest)
    return f"{scheme}:{rest}" if parts.scheme else rest


class DocumentStore:
    """The documents the editor has open, keyed by normalised URI (see `normalize_uri`)."""

    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}

    def open(self, uri: str, text: str, language_id: str = "plaintext", version: int | None = None) -> Document:
        key = normalize_uri(uri)
        doc = Document(key, text, language_id or "plaintext", version)
        self._docs[key] = doc
        return doc

    def get(self, uri: str) -> Document | None:
        return self._docs.get(normalize_uri(uri))

    def close(self, uri: str) -> None:
        self._docs.pop(normalize_uri(uri), None)

    def __len__(self) -> int:
        return len(self._docs)
