"""Single-line mode: keep a multi-line item only when it can live on the current line."""

from __future__ import annotations

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import ONLY_CLOSING, unpaired_tokens


def trim_to_single_line(text: str, ctx: PostprocessContext) -> str | None:
    """When the context asks for one line, the model's further lines would be inserted into the middle of existing
    code. If the first line ends by re-typing the code after the cursor, that first line minus the echo is the
    answer (when it is bracket-balanced; closing brackets alone are left to the replace range). If code (not just
    closing brackets) follows the cursor, a multi-line answer means the model misunderstood the gap, so the item is
    dropped; at the end of a line the first line is kept."""
    if ctx.multiline or "\n" not in text:
        return text
    first = text.split("\n", 1)[0].rstrip()
    rest = ctx.line_suffix.rstrip()
    closing_only = bool(ONLY_CLOSING.fullmatch(rest))
    if rest and not closing_only and first.endswith(rest) and len(first) > len(rest):
        kept = first[: len(first) - len(rest)]
        if not unpaired_tokens(kept):
            return kept
    if rest and not closing_only:
        return None
    return first or None
