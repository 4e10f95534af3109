"""Drop blank and too-short items."""

from __future__ import annotations

from lsp_server.postprocess.context import PostprocessContext


def drop_short(text: str, ctx: PostprocessContext) -> str | None:
    """A ghost text of one or two characters costs the user more attention than typing them; a blank one shows
    nothing. `ctx.min_chars` counts characters other than whitespace."""
    stripped = text.strip()
    if not stripped or len(stripped) < ctx.min_chars:
        return None
    return text
