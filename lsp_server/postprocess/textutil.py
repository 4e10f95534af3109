"""Small text helpers shared by the filters: lines near the cursor, indentation, a bounded edit distance and the
bracket stack. Pure functions, all linear (or O(n * bound)) so that they are safe on every keystroke."""

from __future__ import annotations

import re
from collections import Counter

# Edit distances are computed on at most this many characters of each side: enough to recognise a repeated line or
# block, and it keeps the worst case bounded whatever the model produced.
MAX_DISTANCE_CHARS = 200


def is_blank(text: str) -> bool:
    return not text.strip()


def indent_width(line: str) -> int:
    """Leading spaces and tabs, each counted as one column (a file mixes them rarely; comparisons stay consistent)."""
    return len(line) - len(line.lstrip(" \t"))


def leading_ws(line: str) -> str:
    return line[: indent_width(line)]


def tail_lines(text: str, count: int) -> list[str]:
    """The last `count` lines of `text` (without their "\\n"), found from the end so a long text costs nothing."""
    end = len(text)
    lines: list[str] = []
    while len(lines) < count:
        start = text.rfind("\n", 0, end)
        lines.append(text[start + 1:end])
        if start < 0:
            break
        end = start
    lines.reverse()
    return lines


def head_lines(text: str, count: int) -> list[str]:
    """The first `count` lines of `text` (without their "\\n")."""
    start = 0
    lines: list[str] = []
    while len(lines) < count:
        end = text.find("\n", start)
        if end < 0:
            lines.append(text[start:])
            break
        lines.append(text[start:end])
        start = end + 1
    return lines


def first_non_blank(lines: list[str]) -> str | None:
    for line in lines:
        if not is_blank(line):
            return line
    return None


def is_block_opening(lines: list[str], index: int) -> bool:
    """The next line is indented deeper (`function f() {`, `if x:`). Immediate neighbours on purpose: a blank line
    in between means the code moved on (in Python, a dedent after a blank line is a new statement)."""
    return 0 <= index < len(lines) - 1 and indent_width(lines[index]) < indent_width(lines[index + 1])


def is_block_closing(lines: list[str], index: int) -> bool:
    """The previous line is indented deeper (`}`, `end`, `else:`)."""
    return 0 < index < len(lines) and indent_width(lines[index - 1]) > indent_width(lines[index])


_INDENT_SIZES = (2, 3, 4, 8)


def detect_indent_unit(lines: list[str], base_width: int | None = None, prefer: str | None = None) -> str | None:
    """The indent unit the lines use: a tab when tab-indented lines dominate, else the most common positive step in
    space indentation between consecutive non-blank lines (2, 3, 4 or 8), else None (nothing indented).

    Steps rather than widths, because absolute widths mix the unit with nesting depth and alignment. `base_width`
    is the indentation of the line before `lines` (it counts for the first step, not for the tab/space vote).
    `prefer` (a candidate such as the target unit) wins whenever the evidence fits it: every step a multiple of it,
    or, without any step, every width; otherwise 4, 2, 8 spaces are tried on the widths."""
    tabs = spaces = 0
    steps: Counter[int] = Counter()
    previous = base_width
    for line in lines:
        if is_blank(line):
            continue
        if line.startswith("\t"):
            tabs += 1
        elif line.startswith(" "):
            spaces += 1
            width = indent_width(line)
            if previous is not None and width > previous and (width - previous) in _INDENT_SIZES:
                steps[width - previous] += 1
        previous = indent_width(line) if not line.startswith("\t") else None
    if tabs and tabs >= spaces:
        return "\t"
    if not spaces:
        return None
    if steps and prefer and prefer != "\t" and all(size % len(prefer) == 0 for size in steps):
        return prefer  # every step is a whole number of preferred units: nothing contradicts them
    if steps:
        # On a tie the larger step wins: the smaller one is usually alignment (`f(a,` / `  b)`).
        best = max(steps.values())
        return " " * max(size for size, n in steps.items() if n == best)
    widths = [indent_width(line) for line in lines if line.startswith(" ") and not is_blank(line)]
    # 3 only shows as a step: a lone 3-wide line is more likely alignment.
    sizes = ([len(prefer)] if prefer and prefer != "\t" else []) + [4, 2, 8]
    for size in sizes:
        if all(w % size == 0 for w in widths):
            return " " * size
    return None


def bounded_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance between `a` and `b`, or `limit + 1` as soon as it must exceed `limit`.

    Banded dynamic programming: O(len * limit) instead of O(len²), so a long completion cannot stall a keystroke."""
    if a == b:
        return 0
    if limit <= 0:
        return 1
    # Common prefix and suffix cost nothing.
    start = 0
    shortest = min(len(a), len(b))
    while start < shortest and a[start] == b[start]:
        start += 1
    end = 0
    while end < shortest - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a = a[start:len(a) - end]
    b = b[start:len(b) - end]
    n, m = len(a), len(b)
    over = limit + 1
    if abs(n - m) > limit:
        return over
    if n == 0 or m == 0:
        return max(n, m)
    previous = [j if j <= limit else over for j in range(m + 1)]
    for i in range(1, n + 1):
        low = max(1, i - limit)
        high = min(m, i + limit)
        current = [over] * (m + 1)
        if i <= limit:
            current[0] = i
        char = a[i - 1]
        best = current[0]
        for j in range(low, high + 1):
            value = previous[j - 1] + (char != b[j - 1])
            if previous[j] + 1 < value:
                value = previous[j] + 1
            if current[j - 1] + 1 < value:
                value = current[j - 1] + 1
            if value > over:
                value = over
            current[j] = value
            if value < best:
                best = value
        if best >= over:
            return over
        previous = current
    return min(previous[m], over)


def near_identical(a: str, b: str, ratio: float, minimum: int = 0) -> bool:
    """Edit distance at most `max(minimum, ratio * len)` of the longer string, computed on capped strings.

    Character counts give a lower bound of the distance for free, which settles most dissimilar pairs before the
    dynamic programming runs."""
    a = a[:MAX_DISTANCE_CHARS]
    b = b[:MAX_DISTANCE_CHARS]
    limit = int(max(minimum, ratio * len(a), ratio * len(b)))
    if a == b:
        return True
    counts_a, counts_b = Counter(a), Counter(b)
    if max(sum((counts_a - counts_b).values()), sum((counts_b - counts_a).values())) > limit:
        return False
    return bounded_distance(a, b, limit) <= limit


# Bracket pairs for the replace range. "<" only opens before a word character or "/" (a tag or a generic), and ">"
# after "-" or "=" or before "=" is an operator (->, =>, >=), not a closer (see _BRACKET_TOKEN).
_OPEN_TO_CLOSE = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")", "]", "}"}
_QUOTES = {'"', "'", "`"}


_BRACKET_TOKEN = re.compile(r"[()\[\]{}\"'`]|<(?=[\w/])|/>|(?<![-=])>(?!=)")


def unpaired_tokens(text: str) -> list[tuple[str, int]]:
    """What `text` leaves open or closes without opening, in order, with each token's end offset in `text`.

    A stack walk over the bracket characters only (found by one regular expression, so plain text costs nothing):
    openers push, a closer pops its opener or is recorded as unpaired, a quote closes the nearest matching open quote
    (dropping what was opened inside it) or opens one. Escapes and comments are not understood; this only decides
    how much of the rest of the line an item replaces, where a wrong guess costs little."""
    stack: list[tuple[str, int]] = []
    open_quotes: dict[str, list[int]] = {quote: [] for quote in _QUOTES}  # stack indices, so closing is O(1)
    for match in _BRACKET_TOKEN.finditer(text):
        token = match.group()
        end = match.end()
        if token in _OPEN_TO_CLOSE or token == "<":
            stack.append((token, end))
        elif token in _QUOTES:
            if open_quotes[token]:
                open_at = open_quotes[token][-1]
                del stack[open_at:]
                for positions in open_quotes.values():
                    while positions and positions[-1] >= open_at:
                        positions.pop()
            else:
                open_quotes[token].append(len(stack))
                stack.append((token, end))
        else:  # a closer: ) ] } > />
            opener = stack[-1][0] if stack else ""
            closes_bracket = token in _CLOSERS and _OPEN_TO_CLOSE.get(opener) == token
            closes_tag = token in (">", "/>") and opener == "<"
            if closes_bracket or closes_tag:
                stack.pop()
            else:
                stack.append((token, end))
    return stack


ONLY_CLOSING = re.compile(r"(?:[)\]}>\"'`;,\s]|/>)*")
#: The closers a line starts with (`}` of `} else {`, `})` of `}) => {`), with the indentation before them: a cut
#: before such a line, or of a header that reopens a block, keeps them so that the block stays closed.
LEADING_CLOSERS = re.compile(r"[ \t]*[)\]}]+")


#: String literals on one line, whose brackets do not count (`"\\033["`).
_STRING = re.compile(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`")


def open_brackets(line: str) -> int:
    """Brackets the line leaves open (negative: closes more than it opens), outside the string literals that open
    and close on the line (a multi-line string is not understood, which only makes a statement end a line early or
    late)."""
    if "\"" in line or "'" in line or "`" in line:
        line = _STRING.sub("", line)
    return sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
