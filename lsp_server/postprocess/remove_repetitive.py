"""Remove the loops a small model falls into: a line ending in a repeating pattern, a run of near-identical lines,
a run of near-identical blocks, a statement (or a run of statements) of several lines written twice in a row."""

from __future__ import annotations

import re

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import indent_width, is_blank, near_identical, open_brackets

# (shortest period, repetitions): a 3+ character pattern 6 times, or a 10+ character pattern 4 times.
REPETITION_RULES = ((3, 6), (10, 4))
# Only the end of a line is examined; a loop long enough to matter shows there.
MAX_REPETITION_WINDOW = 600
# Near-identical: edit distance within 10% of the longer line or block.
SIMILARITY = 0.1
REPEATED_LINES = 5
REPEATED_BLOCKS = 2
# At most this many neighbour comparisons per item: a longer run is still cut (at the oldest line or block
# examined), and the cost stays bounded however long the item is.
MAX_COMPARISONS = 20
_BLOCK_SEPARATOR = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)*")


def ends_with_repetition(line: str) -> bool:
    """Whether the line ends with one of `REPETITION_RULES`' periodic runs. Linear per period tried."""
    tail = line[-MAX_REPETITION_WINDOW:]
    for shortest, times in REPETITION_RULES:
        for period in range(shortest, len(tail) // times + 1):
            window = tail[-period * times:]
            if window[period:] == window[:-period]:
                return True
    return False


def remove_line_ending_with_repetition(text: str, ctx: PostprocessContext) -> str | None:
    """A model stuck in a loop (`a = a = a = a = …`, `))))))))`) fills the rest of its budget with the pattern. The
    last non-blank line is removed when it ends that way; an item that is only such a line is dropped."""
    lines = text.split("\n")
    index = len(lines) - 1
    while index >= 0 and is_blank(lines[index]):
        index -= 1
    if index < 0 or not ends_with_repetition(lines[index]):
        return text
    if index == 0:
        return None
    return "\n".join(lines[:index]).rstrip()


def remove_repetitive_lines(text: str, ctx: PostprocessContext) -> str | None:
    """Five or more near-identical lines in a row at the end of an item are a loop, not code: keep the first of the
    run. The last line is not compared (it may be cut short by the token limit)."""
    lines = text.split("\n")
    count = 0
    index = len(lines) - 2
    while index >= 1 and count < MAX_COMPARISONS:
        if is_blank(lines[index]):
            index -= 1
            continue
        prev = index - 1
        while prev >= 0 and is_blank(lines[prev]):
            prev -= 1
        if prev < 0 or not near_identical(lines[index].strip(), lines[prev].strip(), SIMILARITY):
            break
        count += 1
        index = prev
    if count >= REPEATED_LINES:
        return "\n".join(lines[: index + 1]).rstrip()
    return text


def _blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the blocks separated by blank lines."""
    spans = []
    start = 0
    for match in _BLOCK_SEPARATOR.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if not is_blank(text[s:e])]


def remove_repetitive_blocks(text: str, ctx: PostprocessContext) -> str | None:
    """The same loop at block scale (test cases, methods differing by a number): when the last blocks repeat each
    other twice or more, keep up to the first of the repeated run. The last block is not compared (it may be cut)."""
    spans = _blocks(text)
    count = 0
    index = len(spans) - 2
    while index >= 1 and count < MAX_COMPARISONS:
        current = text[spans[index][0]:spans[index][1]].strip()
        previous = text[spans[index - 1][0]:spans[index - 1][1]].strip()
        if not near_identical(current, previous, SIMILARITY):
            break
        count += 1
        index -= 1
    if count >= REPEATED_BLOCKS:
        return text[: spans[index][1]].rstrip()
    return text


#: A line that carries the statement above it on at its indentation (`}`, `});`, `} else {`, `else:`, `except E:`).
_CARRIES_ON = re.compile(r"[)\]}]|(?:else|elif|except|finally|catch)\b")


def _statement_end(lines: list[str], widths: list[int], start: int) -> int:
    """The index after the statement that starts at `start`: its deeper lines and the lines that carry it on."""
    end = start + 1
    while end < len(lines) and (is_blank(lines[end]) or widths[end] > widths[start]
                                or (widths[end] == widths[start] and _CARRIES_ON.match(lines[end].strip()))):
        end += 1
    return end


def _depths(lines: list[str]) -> list[int]:
    """For each line, how many brackets the item's lines before it leave open (string literals aside)."""
    depths, depth = [], 0
    for line in lines:
        depths.append(depth)
        depth += open_brackets(line)
    return depths


def _code(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if not is_blank(line)]


#: The longest run of statements looked for written again (`a = f()` / `if a: …`, then the same two).
MAX_REPEATED_RUN = 3


def remove_repeated_statement(text: str, ctx: PostprocessContext) -> str | None:
    """A statement of several lines, or a run of up to `MAX_REPEATED_RUN` statements of several lines in all, that
    the model writes again right after itself, at the same indentation and the same line for line (real-code
    benchmark, one-line holes: `if !c.IsAvailableCommand() {` / `continue` / `}` four times; `message = …` and an
    `if` block, twice), is a loop, not code: the item ends before the first repeat. So is one line written three times
    in a row (the default model at an empty function body: `print("Hello")` six times, which the rule for runs showed
    as two lines). One line written twice stays (code repeats a short line on purpose: `i++`, `out.write("\\n")`), and
    so do lines inside brackets: the rows of a table or a literal repeat on purpose (the cut simulation: rich's box
    drawings)."""
    lines = text.split("\n")
    if len(lines) < 3:
        return text
    widths = [indent_width(ctx.line_prefix + lines[0])] + [indent_width(line) for line in lines[1:]]
    depths = _depths(lines)
    outside = depths[0]  # the shallowest bracket depth so far: lines deeper are inside brackets the item opened
    for start in range(len(lines)):
        outside = min(outside, depths[start])
        if is_blank(lines[start]) or _CARRIES_ON.match(lines[start].strip()) or depths[start] > outside:
            continue  # not a statement: a line inside brackets is data (rows of a table repeat on purpose)
        ends = [start]  # where each statement at this indentation starts, then where the last one ends
        while len(ends) <= 2 * MAX_REPEATED_RUN and ends[-1] < len(lines) and widths[ends[-1]] == widths[start]:
            ends.append(_statement_end(lines, widths, ends[-1]))
        for size in range(1, (len(ends) - 1) // 2 + 1):
            run = _code(lines[start:ends[size]])
            if len(run) >= 2 and _code(lines[ends[size]:ends[2 * size]]) == run:
                return "\n".join(lines[:ends[size]]).rstrip()
            if size == 1 and len(run) == 1 and len(ends) > 3 and _code(lines[ends[1]:ends[2]]) == run \
                    and _code(lines[ends[2]:ends[3]]) == run:
                return "\n".join(lines[:ends[1]]).rstrip()
    return text
