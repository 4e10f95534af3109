"""Drop a block-closing line that the code after the cursor already has."""

from __future__ import annotations

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import is_blank, is_block_closing


def drop_duplicated_closing_line(text: str, ctx: PostprocessContext) -> str | None:
    """The editor auto-closed the block (or the user wrote the `}` first), and the model closes it again: the item's
    last line dedents and equals (one being the start of the other, so `};` matches `}`) the next non-blank line
    after the cursor, indentation included. Remove it."""
    lines = text.split("\n")
    last = len(lines) - 1
    while last >= 1 and is_blank(lines[last]):
        last -= 1
    if last < 1 or ctx.next_line is None:
        return text
    detect = [ctx.line_prefix + lines[0], *lines[1:]]
    if not is_block_closing(detect, last):
        return text
    ours = lines[last].rstrip()
    theirs = ctx.next_line.rstrip()
    if ours.startswith(theirs) or theirs.startswith(ours):
        return "\n".join(lines[:last]).rstrip()
    return text
