"""Drop an item that repeats the code right after the cursor."""

from __future__ import annotations

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import is_blank, leading_ws

COMPARED_LINES = 3
MAX_LINES = 40
CLOSERS = frozenset("})];,")


def _first_lines(lines: list[str], count: int) -> tuple[list[str], int]:
    start = 0
    while start < len(lines) and is_blank(lines[start]):
        start += 1
    return lines[start:start + count], len(lines) - start


def drop_suffix_duplicate(text: str, ctx: PostprocessContext) -> str | None:
    """FIM models often "complete" by re-typing the next lines, which the user already has: inserting it duplicates
    code. When the item's lines are the same text as the next lines after the cursor once whitespace is squeezed,
    the item is dropped.

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
    return None if _repeats(text, ctx.suffix_lines) else text


def _repeats(text: str, suffix_lines: list[str]) -> bool:
    """Every non-blank line of the item (up to MAX_LINES) is the next non-blank line below, whitespace squeezed; the
    item's last line may stop part-way (a re-typing cut by the token limit). An item that goes on with code of its own
    after lines the code below also has (a test repeating the setup of the next one) is new code."""
    ours = [_squeezed(line) for line in text.split("\n") if line.strip()][:MAX_LINES]
    theirs = [_squeezed(line) for line in suffix_lines if line.strip()][:len(ours)]
    if len(theirs) < len(ours):
        return False
    if ours[:-1] != theirs[:len(ours) - 1]:
        return False
    return ours[-1] == theirs[-1] or (len(ours) > 1 and theirs[-1].startswith(ours[-1]))


def _squeezed(text: str) -> str:
    """The text with its whitespace runs made one space: a repeat re-typed with other spacing is still a repeat."""
    return " ".join(text.split())
