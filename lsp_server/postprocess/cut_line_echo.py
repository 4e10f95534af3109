"""Cut the end of a one-line item when it re-types the rest of the current line."""

from __future__ import annotations

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import ONLY_CLOSING, unpaired_tokens

# An echo shorter than this is too likely to be a coincidence (`)`, `;`).
MIN_ECHO_CHARS = 3


def cut_line_echo(text: str, ctx: PostprocessContext) -> str | None:
    """Models often finish the gap and then repeat what already follows the cursor (`ok: boolean }) => {` before an
    existing ` }) => {`). Cut the repeat, but only when it is code rather than closing brackets (those are covered by
    the replace range instead) and the part kept is bracket-balanced, so the cut can never unbalance the line."""
    if "\n" in text:
        return text
    rest = ctx.line_suffix.strip()
    if len(rest) < MIN_ECHO_CHARS or ONLY_CLOSING.fullmatch(rest):
        return text
    body = text.rstrip()
    if not body.endswith(rest) or len(body) == len(rest):
        return text
    kept = body[: len(body) - len(rest)]
    if kept.strip() and not unpaired_tokens(kept):
        return kept
    return text
