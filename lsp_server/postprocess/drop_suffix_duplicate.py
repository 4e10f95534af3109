"""Drop an item that repeats the code right after the cursor."""

from __future__ import annotations

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import is_blank, leading_ws

COMPARED_LINES = 3
CLOSERS = frozenset("})];,")


def _first_lines(lines: list[str], count: int) -> tuple[list[str], int]:
    start = 0
    while start < len(lines) and is_blank(lines[start]):
        start += 1
    return lines[start:start + count], len(lines) - start


def drop_suffix_duplicate(text: str, ctx: PostprocessContext) -> str | None:
    """FIM models often "complete" by re-typing the next lines, which the user already has: inserting it duplicates
    code. Compare the first (up to three) non-blank lines of the item with as many non-blank lines of the text after
    the cursor; when they are the same text once whitespace is squeezed, the item is dropped.

    Only real repeats: a line that differs in a literal or an argument is new code, not a copy (found by the cut
    simulation: `x = strings.ReplaceAll(x, "-", "_")` above `x = strings.ReplaceAll(x, ":", "_")` was dropped when
    the rule allowed 5% edit distance, and so are sibling test cases and struct fields)."""
    item_lines, item_left = _first_lines(text.split("\n"), COMPARED_LINES)
    suffix_lines, suffix_left = _first_lines(ctx.suffix_lines, COMPARED_LINES)
    count = min(COMPARED_LINES, item_left, suffix_left)
    if count < 1:
        return text
    item = "\n".join(item_lines[:count]).strip()
    suffix = "\n".join(suffix_lines[:count]).strip()
    if item and set(item) <= CLOSERS:
        # Only closing brackets: `    }` before a `}` closes another, outer block, so the column decides (found by
        # the quality benchmark: right `}` lines were dropped in 13 of 100 SantaCoder Java tasks).
        first = ctx.line_prefix + item_lines[0] if text.startswith(item_lines[0]) else item_lines[0]
        return None if leading_ws(first) == leading_ws(suffix_lines[0]) and item == suffix else text
    return None if _squeezed(item) == _squeezed(suffix) else text


def _squeezed(text: str) -> str:
    """The text with its whitespace runs made one space: a repeat re-typed with other spacing is still a repeat."""
    return " ".join(text.split())
