"""How much of the rest of the current line an item replaces."""

from __future__ import annotations

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import ONLY_CLOSING, unpaired_tokens

_PUNCTUATION = frozenset(";,")


def _units(rest: str) -> list[tuple[str, int]]:
    """The rest of the line as (token, end offset) pairs, whitespace skipped; `/>` is one token."""
    units = []
    i = 0
    while i < len(rest):
        if rest[i].isspace():
            i += 1
        elif rest.startswith("/>", i):
            units.append(("/>", i + 2))
            i += 2
        else:
            units.append((rest[i], i + 1))
            i += 1
    return units


def replace_range_end(text: str, ctx: PostprocessContext) -> int:
    """Editors auto-close `( [ { " '`, so the cursor often sits before closers the model writes again; inserting the
    item there would double them. When the rest of the line holds only closing brackets, quotes, `;` and `,`, walk
    it in order: a closer is covered when it is the item's next unpaired closer (or quote), a `;`/`,` when the item
    also writes one after the closers matched so far. The item replaces everything up to the last covered
    character, provided the walk used up either the rest of the line or all of the item's unpaired tokens (so an
    item that leaves a closer of its own unmatched, or stops half-way, replaces nothing). Returns a length in
    characters (code points) of `ctx.line_suffix`."""
    rest = ctx.line_suffix
    body = rest.rstrip()
    if not body or not ONLY_CLOSING.fullmatch(body):
        return 0
    tokens = unpaired_tokens(text)
    units = _units(body)
    next_token = 0
    item_position = 0
    covered = 0
    consumed = 0
    for unit, end in units:
        if next_token < len(tokens) and tokens[next_token][0] == unit:
            item_position = tokens[next_token][1]
            next_token += 1
        elif unit in _PUNCTUATION and unit in text[item_position:]:
            item_position = text.index(unit, item_position) + 1
        else:
            break
        covered = end
        consumed += 1
    if consumed == 0:
        return 0
    if consumed == len(units) or next_token == len(tokens):
        return covered
    return 0
