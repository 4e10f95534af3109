"""Trim whitespace where the item joins the existing text."""

from __future__ import annotations

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import ONLY_CLOSING, is_blank


def trim_whitespace(text: str, ctx: PostprocessContext) -> str | None:
    """A space before the cursor plus a space the model starts with would give two; trailing blanks and newlines at
    the end of a line are noise the user would have to delete; before auto-closed brackets they would push the
    brackets to a line of their own (or, with the replace range, leave a blank line). Leading whitespace after an
    indentation-only prefix is left to re-indentation, and newlines at the start are kept (they are the item's
    structure)."""
    text = trim_start(text, ctx.line_prefix)
    rest = ctx.line_suffix
    if is_blank(rest) or rest[0] in " \t" or ONLY_CLOSING.fullmatch(rest):
        text = text.rstrip()
    return text


def trim_start(text: str, line_prefix: str) -> str:
    """The item's beginning as shown after `line_prefix`: no spaces after a space the line already ends with. Also
    applied to a generation's text so far (lsp_server/inflight.py), which is compared with what the user typed."""
    if not is_blank(line_prefix) and line_prefix[-1] in " \t":
        return text.lstrip(" \t")
    return text
