"""Cut an item before a run of lines that equals the code after the cursor."""

from __future__ import annotations

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import is_blank

# How many of the next non-blank lines may be matched: bounds the work at len(item lines) * this.
MAX_MATCHED_LINES = 20


def cut_before_suffix_lines(text: str, ctx: PostprocessContext) -> str | None:
    """A model that wrote the new code and then carried on with the code that follows (which the user already has)
    would duplicate it. Find the earliest line from which the item's remaining non-blank lines equal the next
    non-blank lines after the cursor (indentation included, trailing spaces ignored) and cut there. The first line
    only counts when it starts a line of its own (nothing but indentation before the cursor)."""
    lines = text.split("\n")
    wanted = [line.rstrip() for line in ctx.suffix_lines[1:] if not is_blank(line)][:MAX_MATCHED_LINES]
    if not wanted:
        return text
    full = [ctx.line_prefix + lines[0] if is_blank(ctx.line_prefix) else None, *lines[1:]]
    content = [i for i, line in enumerate(full) if line is not None and not is_blank(line)]
    for position, start in enumerate(content):
        tail = content[position:]
        if len(tail) > len(wanted):
            continue
        if all((full[i] or "").rstrip() == wanted[k] for k, i in enumerate(tail)):  # tail: lines that are not None
            if start == 0:
                return None
            return "\n".join(lines[:start]).rstrip()
    return text
