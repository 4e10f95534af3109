"""Open documents: Infill's own store, updated in O(edit) per change, and position ⇄ offset conversion.

LSP positions count code units of utf-16 (default), utf-8 or utf-32 within a line, and lines end at "\\n", "\\r\\n"
or "\\r" only (not at the other characters `str.splitlines` treats as breaks). Getting this wrong shifts the cursor by
one per emoji or per CRLF, so the conversion is done here with LSP's own rules; the text is kept exactly as the
editor has it (CRLF included) so that prefix and suffix are byte-faithful.

A document is a list of chunks of whole lines (about CHUNK_CHARS characters each) with, per chunk, the offsets
where its lines end. An edit rewrites the one or two chunks it touches, so a keystroke costs the same in a 2 MB
file as in a 5 KB one; per-document sums over the chunk list (line and character counts before each chunk) are
rebuilt lazily with `itertools.accumulate`, a C loop over a few hundred integers for 2 MB. The same layout as
`sortedcontainers`' list of lists, which beats a balanced tree in Python; no maintained Python rope tracks LSP
lines, so it is written here."""

from __future__ import annotations

import bisect
import re
import sys
from array import array
from itertools import accumulate, count, repeat
from operator import add
from urllib.parse import quote, unquote, urlsplit, urlunsplit

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"
ENCODINGS = (UTF8, UTF16, UTF32)

#: A position in a line longer than this is remembered until the next change: a keystroke converts the same one
#: several times (the edit history and the store each read the change's range; a request its cursor), and in a
#: 5 MB minified line with astral characters each conversion reads the line up to it.
_REMEMBER_LINE = 4096

#: Target size of a chunk in characters: an edit copies about this much. A chunk holds at least one line, so a
#: single longer line makes a longer chunk (an edit in it costs O(line)).
CHUNK_CHARS = 4096

#: LSP's line breaks: "\r\n", "\r" and "\n" (a "\r\n" pair is one break). The other modules that split lines as
#: the client counts them use this one.
LINE_BREAK = re.compile(r"\r\n|\r|\n")
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def line_starts(text: str) -> list[int]:
    """Offsets (in code points) where each line begins; a "\\r\\n" pair counts as one break."""
    return [0, *(m.end() for m in LINE_BREAK.finditer(text))]


def code_units(ch: str, encoding: str) -> int:
    """How many code units one code point takes in `encoding`."""
    cp = ord(ch)
    if encoding == UTF16:
        return 2 if cp > 0xFFFF else 1
    if encoding == UTF8:
        return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    return 1


def _compact_head() -> int | None:
    """The fixed part of `sys.getsizeof` of a compact non-ASCII string, or None when sizes do not follow CPython's
    layout (PEP 393: one, two or four bytes a character, the narrowest that holds the string's widest character)."""
    try:
        head = sys.getsizeof("\xe9") - 2
        samples = {1: "\xe9" * 7, 2: "\u4e2d" * 7, 4: "\U0001f600" * 7}
        if all(sys.getsizeof(text) == head + width * 8 for width, text in samples.items()):
            return head
    except TypeError:
        pass
    return None


_COMPACT_HEAD = _compact_head()
_PAIR_STARTS = bytes(range(0xD8, 0xDC))


def _within_bmp(text: str) -> bool:
    """Whether no character of `text` lies beyond the Basic Multilingual Plane (each is one UTF-16 unit), in O(1):
    CPython stores a string one or two bytes a character when it can, and `sys.getsizeof` tells which. False when
    unsure (a string of four bytes a character holds an astral character; the caller then counts)."""
    if text.isascii():
        return True
    return _COMPACT_HEAD is not None and sys.getsizeof(text) - _COMPACT_HEAD <= 2 * (len(text) + 1)


def column_to_index(line: str, column: int, encoding: str) -> int:
    """Code-point index in `line` (no line break) for a column in code units; past the end clamps to the end.

    A column that falls inside a character (half a surrogate pair, part of a UTF-8 sequence) rounds down. `line`
    may be cut after its first `column` characters (the index is never larger). Constant time for ASCII and for
    utf-16 without astral characters (the string's width says so); otherwise O(column) in C (`encode`, `translate`).
    A regular expression looking for astral characters scanned a 5 MB minified line of non-ASCII text on every
    keystroke (7 ms, 6 times), and made a match object for each emoji in it."""
    column = max(0, column)
    if encoding == UTF32 or line.isascii():  # isascii() reads a flag of the string: O(1) in a 5 MB minified line
        return min(column, len(line))
    head = line[:column]  # a character takes a unit at least: the first `column` units lie in here
    if encoding == UTF16:
        if _within_bmp(line):
            return len(head)
        try:
            units = head.encode("utf-16-le")[:2 * column]  # the first `column` units (fewer at the line's end)
        except UnicodeEncodeError:  # a lone surrogate, which would read as half a pair: count the astral ones
            astral = 0
            for match in _ASTRAL.finditer(head):  # each takes a unit at least: none lies past `column`
                if column <= match.start() + astral:
                    break
                astral += 1
            return min(column - astral, len(head))
        # Each astral character is a pair whose first unit's high byte is 0xD8-0xDB; the characters in these units
        # are the units less those first halves (a pair the column cuts counts as none: rounded down).
        return len(units[1::2].translate(None, _PAIR_STARTS))
    try:
        return len(head.encode("utf-8")[:column].decode("utf-8", "ignore"))
    except UnicodeEncodeError:  # a lone surrogate
        pass
    # utf-8 with lone surrogates, which it does not encode: count one character at a time.
    counted = 0
    for index, ch in enumerate(head):
        width = code_units(ch, encoding)
        if counted + width > column:
            return index
        counted += width
    return len(head)


def index_to_column(line: str, index: int, encoding: str) -> int:
    if encoding == UTF32 or line.isascii() or (encoding == UTF16 and _within_bmp(line)):
        return index
    if encoding == UTF16:
        return len(line[:index].encode("utf-16-le", "surrogatepass")) // 2
    return len(line[:index].encode("utf-8", "surrogatepass"))


def _line_ends(chunk: str) -> array:
    """Offsets just after each line break of `chunk`, computed in C loops (split, map, accumulate): a Python loop
    over the lines cost about 0.2 µs a line, and an edit redid it for its whole chunk."""
    if "\r" not in chunk:
        if "\n" not in chunk:
            return array("I")
        return array("I", map(add, accumulate(map(len, chunk.split("\n")[:-1])), count(1)))
    breaks = LINE_BREAK.findall(chunk)
    if not breaks:
        return array("I")
    return array("I", accumulate(map(add, map(len, LINE_BREAK.split(chunk)), map(len, breaks))))


def _edited_line_ends(chunk: str, ends: array, start: int, end: int, new: str) -> array:
    """`_line_ends(new)` where `new` is `chunk` with `chunk[start:end]` replaced, from the chunk's `ends`: only the
    lines the edit touches are scanned, the breaks before it are kept and those after it shifted (a C loop). A
    didChange of 10,000 one-line edits scanned its chunk 10,000 times, thousands of lines each time.

    A break that ends before `start` reads only characters before it, so it stays. One that ends at or past
    `end + 3` begins at `end + 1` or later (a break is one or two characters), after a character the edit kept, so
    it stays too, moved by the edit's length change; the text between is scanned again."""
    delta = len(new) - len(chunk)
    first = bisect.bisect_left(ends, start)
    last = bisect.bisect_left(ends, end + 3)
    scan_from = ends[first - 1] if first else 0
    if last < len(ends):
        after = ends[last]
        scan_to = after - (2 if chunk.startswith("\r\n", after - 2) else 1) + delta
    else:
        scan_to = len(new)
    if new.find("\n", scan_from, scan_to) < 0 and new.find("\r", scan_from, scan_to) < 0:
        middle = array("I")  # typing within a line: no copy of it (5 MB in a minified file)
    else:
        middle = array("I", map(add, _line_ends(new[scan_from:scan_to]), repeat(scan_from)))
    return ends[:first] + middle + array("I", map(add, ends[last:], repeat(delta)))


def _split(text: str, size: int) -> list[str]:
    """`text` cut into chunks of whole lines of about `size` characters (never inside "\\r\\n").

    The next "\\n" and "\\r" are found with str.find (a memchr) and kept until the cut passes them: a regular
    expression searched a 5 MB minified line at about 10 ns a character on every keystroke in it (26 ms)."""
    chunks = []
    start, n = 0, len(text)
    lf = cr = 0  # where the next "\n" and "\r" are, at or after the last place searched from (-1: there is none)
    while n - start > size:
        at = start + size
        if 0 <= lf < at:
            lf = text.find("\n", at)
        if 0 <= cr < at:
            cr = text.find("\r", at)
        if lf < 0 and cr < 0:
            break
        if cr < 0 or 0 <= lf < cr:
            end = lf + 1
        else:
            end = cr + 2 if text.startswith("\n", cr + 1) else cr + 1
        chunks.append(text[start:end])
        start = end
    if start < n or not chunks:
        chunks.append(text[start:])
    return chunks


class Document:
    """One open document. `text` joins the chunks (O(document)): per-keystroke code uses `line`, `offset_at`,
    `position_at` and `text_range` instead."""

    def __init__(self, uri: str, text: str, language_id: str = "plaintext", version: int | None = None, *,
                 chunk_chars: int = CHUNK_CHARS) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        #: Facts callers derive from the text around the cursor (the indent unit), each with the key it was derived
        #: under, so a keystroke need not derive them again.
        self.facts: dict[str, tuple[object, object]] = {}
        self._size = max(1, chunk_chars)
        self._set_text(text)

    def __repr__(self) -> str:
        return f"Document({self.uri!r}, {self.char_count} chars, {self.line_count} lines, version={self.version})"

    # --- layout ------------------------------------------------------------------------------------------------
    # Invariants: every chunk but the last ends with a line break; no chunk is empty unless it is the only one; a
    # chunk ending in "\r" is never followed by one starting with "\n" (that pair is one break).

    def _set_text(self, text: str) -> None:
        self._chunks: list[str] = _split(text, self._size)
        self._ends: list[array] = [_line_ends(chunk) for chunk in self._chunks]
        self._breaks = sum(len(ends) for ends in self._ends)
        self._chars = len(text)
        self._line_base: list[int] | None = None
        self._char_base: list[int] | None = None
        self._located: dict[tuple[int, int, str], tuple[int, int]] = {}

    def _lines_before(self) -> list[int]:
        if self._line_base is None:
            self._line_base = list(accumulate(map(len, self._ends), initial=0))
        return self._line_base

    def _chars_before(self) -> list[int]:
        if self._char_base is None:
            self._char_base = list(accumulate(map(len, self._chunks), initial=0))
        return self._char_base

    def _line_span(self, number: int) -> tuple[int, int, int]:
        """(chunk, start, end) of line `number` (0 ≤ number < line_count): local offsets, the break excluded."""
        base = self._lines_before()
        i = bisect.bisect_right(base, number, 0, len(self._chunks)) - 1
        j = number - base[i]
        chunk, ends = self._chunks[i], self._ends[i]
        start = ends[j - 1] if j else 0
        if j < len(ends):
            end = ends[j]
            end -= 2 if end - start >= 2 and chunk[end - 2] == "\r" and chunk[end - 1] == "\n" else 1
        else:
            end = len(chunk)
        return i, start, end

    def _locate(self, line: int, character: int, encoding: str) -> tuple[int, int]:
        """(chunk, local offset) of an LSP position, clamped as LSP says: a line past the end → the end of the
        document, a character past the end of its line → the end of the line (before its break)."""
        if line < 0:
            return 0, 0
        if line >= self.line_count:
            return len(self._chunks) - 1, len(self._chunks[-1])
        key = (line, character, encoding)
        found = self._located.get(key)
        if found is not None:
            return found
        i, start, end = self._line_span(line)
        # The index is at most the column: only that much of the line is read (not all of a 5 MB minified line).
        found = i, start + column_to_index(self._chunks[i][start:min(end, start + max(0, character))], character,
                                           encoding)
        if end - start > _REMEMBER_LINE:
            if len(self._located) >= 16:
                self._located.clear()
            self._located[key] = found
        return found

    # --- reading -----------------------------------------------------------------------------------------------

    @property
    def text(self) -> str:
        return "".join(self._chunks)

    @property
    def line_count(self) -> int:
        return self._breaks + 1

    @property
    def char_count(self) -> int:
        return self._chars

    def line(self, number: int) -> str:
        """Line `number` without its line break ("" past the end)."""
        if number < 0 or number >= self.line_count:
            return ""
        i, start, end = self._line_span(number)
        return self._chunks[i][start:end]

    def offset_at(self, line: int, character: int, encoding: str = UTF16) -> int:
        """Code-point offset of an LSP position; positions past the end of a line or the document clamp."""
        i, local = self._locate(line, character, encoding)
        return self._chars_before()[i] + local

    def position_at(self, offset: int, encoding: str = UTF16) -> tuple[int, int]:
        offset = max(0, min(offset, self._chars))
        bases = self._chars_before()
        i = max(0, bisect.bisect_right(bases, offset, 0, len(self._chunks)) - 1)
        local = offset - bases[i]
        ends = self._ends[i]
        j = bisect.bisect_right(ends, local)  # lines of this chunk that end at or before the offset
        line = self._lines_before()[i] + j
        _, start, end = self._line_span(line)
        stop = min(local, end)
        return line, index_to_column(self._chunks[i][start:stop], stop - start, encoding)

    def text_range(self, start: int, end: int) -> str:
        """The text between two code-point offsets, in O(end - start) plus a search of the chunk list."""
        start, end = max(0, start), min(end, self._chars)
        if start >= end:
            return ""
        bases = self._chars_before()
        i = bisect.bisect_right(bases, start, 0, len(self._chunks)) - 1
        pieces = []
        while i < len(self._chunks) and bases[i] < end:
            pieces.append(self._chunks[i][max(0, start - bases[i]):end - bases[i]])
            i += 1
        return "".join(pieces)

    # --- editing -----------------------------------------------------------------------------------------------

    def apply_change(self, text: str, range_: tuple[int, int, int, int] | None, encoding: str = UTF16) -> None:
        """Apply one content change: a whole-document replacement (range None) or a ranged edit
        `(start_line, start_character, end_line, end_character)` in client units, clamped as LSP says."""
        if range_ is None:
            self._set_text(text)
            return
        start = self._locate(range_[0], range_[1], encoding)
        end = self._locate(range_[2], range_[3], encoding)
        if end < start:
            start, end = end, start
        chunks = self._chunks
        lo, hi = start[0], end[0] + 1
        removed = sum(len(chunks[k]) for k in range(lo, hi))
        new = chunks[lo][:start[1]] + text + chunks[end[0]][end[1]:]
        # The edit ends before the last break of its chunk (a position clamps before a break, and a line start lies
        # in the chunk its line begins in), so `new` still ends as that chunk did. At the start, "\n" typed after a
        # chunk ending in "\r" joins that break: the two chunks become one.
        if lo > 0 and new.startswith("\n") and chunks[lo - 1].endswith("\r"):
            lo -= 1
            new = chunks[lo] + new
            removed += len(chunks[lo])
        # Keep chunks from shrinking to crumbs under repeated deletions: a small one joins its neighbour.
        if len(new) < self._size // 4 and hi < len(chunks):
            new += chunks[hi]
            removed += len(chunks[hi])
            hi += 1
        elif len(new) < self._size // 4 and lo > 0:
            lo -= 1
            new = chunks[lo] + new
            removed += len(chunks[lo])
        pieces = _split(new, self._size) if len(new) > 2 * self._size else [new]
        if not new and (lo > 0 or hi < len(chunks)):
            pieces = []  # the edit emptied these chunks and others remain
        if pieces == [new] and lo == start[0] == end[0] and hi == lo + 1:
            piece_ends = [_edited_line_ends(chunks[lo], self._ends[lo], start[1], end[1], new)]
        else:
            piece_ends = [_line_ends(piece) for piece in pieces]
        old_counts = [len(ends) for ends in self._ends[lo:hi]]
        new_counts = [len(ends) for ends in piece_ends]
        if new_counts != old_counts:  # typing within a line keeps the line sums as they are
            self._line_base = None
        chunks[lo:hi] = pieces
        self._ends[lo:hi] = piece_ends
        self._breaks += sum(new_counts) - sum(old_counts)
        self._chars += len(new) - removed
        self._char_base = None
        self._located.clear()


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
        try:
            path = quote(path, safe=_PATH_SAFE, errors="surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate the JSON held ("\\ud800"), not an undecodable byte
            return uri
        return urlunsplit(("file", parts.netloc.lower(), path, parts.query, parts.fragment))
    rest = uri[len(parts.scheme) + 1:] if parts.scheme else uri
    rest = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if chr(int(m.group(1), 16)) in _UNRESERVED
                       else "%" + m.group(1).upper(), rest)
    return f"{scheme}:{rest}" if parts.scheme else rest


class DocumentStore:
    """The documents the editor has open: one per URI as the client spelled it in `didOpen`, each reachable by any
    equivalent spelling (see `normalize_uri`).

    Keyed by the spelling, not by the normalised key alone: a client that opens `a.py` and `a%2Epy` holds two
    documents, and each has its own text. With one entry per key the second `didOpen` replaced the first's text, so
    requests and edits for the first spelling read the second's (an outside fuzzer saw prompts with an empty prefix
    at line 793 of a 14,816-character document: issue 27). A spelling that was not opened (a client writing
    `c%3A` in requests and `C:` in `didOpen`) reaches the document of its key most recently opened. Documents carry
    the normalised key as their `uri`: caches and sessions keep one state per file."""

    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}
        #: Normalised key → the spellings open under it, most recently opened last.
        self._spellings: dict[str, list[str]] = {}

    def open(self, uri: str, text: str, language_id: str = "plaintext", version: int | None = None) -> Document:
        """`language_id` as the client sent it: lsprotocol lets any JSON number or null through, which is plain
        text here (the language table looks names up)."""
        key = normalize_uri(uri)
        doc = Document(key, text, language_id if isinstance(language_id, str) and language_id else "plaintext",
                       version)
        self._docs[uri] = doc
        spellings = self._spellings.setdefault(key, [])
        if uri in spellings:
            spellings.remove(uri)
        spellings.append(uri)
        return doc

    def get(self, uri: str) -> Document | None:
        doc = self._docs.get(uri)
        if doc is not None:
            return doc
        spellings = self._spellings.get(normalize_uri(uri))
        return self._docs[spellings[-1]] if spellings else None

    def close(self, uri: str) -> bool:
        """Close the document opened as `uri` (else the latest one of its key); returns whether another spelling of
        the same file is still open."""
        key = normalize_uri(uri)
        spellings = self._spellings.get(key)
        if not spellings:
            return False
        spelling = uri if uri in spellings else spellings[-1]
        spellings.remove(spelling)
        del self._docs[spelling]
        if not spellings:
            del self._spellings[key]
        return bool(spellings)

    def __len__(self) -> int:
        return len(self._docs)
