"""Post-processing: the clean-up between the model's raw text and the ghost text the editor shows.

Every filter is a small pure function ``(text, ctx) -> str | None`` (None drops the item) in a module of its own.
They run in two fixed stages, because the session caches items between them:

Before caching (once per model answer; the work is independent of where the user types next):
  1. ``cut_to_line_mode``        where the item may end (`line_mode.py`): the model's own end, else one
                                 line, one statement or a block, by the cursor's situation
  2. ``cut_line_echo``           a one-line item that re-types the rest of the line loses the repeat
  3. ``remove_line_ending_with_repetition``   a last line stuck in a loop (`a = a = a = …`) goes
  4. ``cut_parse_errors``        lines that make the code around the cursor parse worse go (tree-sitter)
  5. ``drop_suffix_duplicate``   an item that repeats the code after the cursor (same text) is dropped
  6. ``trim_whitespace``         no doubled spaces at the start, no trailing blanks at a line end
  7. ``drop_short``              blank or too short (``ctx.min_chars``) items are dropped

After caching (on every item shown, also when it comes from the cache while the user types through it):
  1. ``remove_repetitive_blocks``      two or more repeated blocks at the end: keep the first
  2. ``remove_repetitive_lines``       five or more near-identical lines at the end: keep the first
  3. ``remove_repeated_statement``     a statement (or a run) of several lines written twice in a row: keep
                                       the first
  4. ``limit_scope``                   cut where the indentation leaves the block being completed (only a real
                                       closer, `}`/`end`, or a reopener, `} else {`/`else:`, may stand below it)
  5. ``cut_unreachable``               code after a `return`/`raise`/`break` in the same block goes (it never runs)
  6. ``drop_dangling_end``             no ending on an indented empty line or in a header without its body
  7. ``drop_duplicated_closing_line``  a closing line the suffix already has goes
  8. ``reindent``                      tabs/spaces and unit to the document's (else the editor's) indentation
  9. ``fix_odd_indent``                a stray space after the cursor's indentation goes
 10. ``drop_suffix_duplicate``         again, on the trimmed item
 11. ``trim_whitespace``               again, cuts above may leave trailing blanks
 12. ``cut_before_suffix_lines``       a tail equal to the next lines after the cursor goes
 13. ``drop_short``                    again

The order matters: scope is limited before the closing-line check (which looks at the item's last line),
re-indentation comes after all cuts, and the drops come last in each stage. ``replace_range_end`` is separate: the
server calls it on the final text to size the item's range over auto-closed brackets.

The behaviour follows Tabby's agent where its golden cases agree (see tests/lsp_server/postprocess/test_golden.py,
which records where and why we differ)."""

from __future__ import annotations

from typing import Callable

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.cut_before_suffix_lines import cut_before_suffix_lines
from lsp_server.postprocess.cut_line_echo import cut_line_echo
from lsp_server.postprocess.cut_unreachable import cut_unreachable
from lsp_server.postprocess.dangling_end import drop_dangling_end
from lsp_server.postprocess.drop_duplicated_closing_line import drop_duplicated_closing_line
from lsp_server.postprocess.drop_short import drop_short
from lsp_server.postprocess.drop_suffix_duplicate import drop_suffix_duplicate
from lsp_server.postprocess.limit_scope import limit_scope
from lsp_server.postprocess.line_mode import cut_to_line_mode
from lsp_server.postprocess.parse_clean import cut_parse_errors
from lsp_server.postprocess.reindent import fix_odd_indent, reindent
from lsp_server.postprocess.remove_repetitive import (
    remove_line_ending_with_repetition,
    remove_repeated_statement,
    remove_repetitive_blocks,
    remove_repetitive_lines,
)
from lsp_server.postprocess.replace_range import replace_range_end
from lsp_server.postprocess.trim_whitespace import trim_whitespace

Filter = Callable[[str, PostprocessContext], "str | None"]

FILTERS_BEFORE_CACHE: tuple[tuple[str, Filter], ...] = (
    ("cut_to_line_mode", cut_to_line_mode),
    ("cut_line_echo", cut_line_echo),
    ("remove_line_ending_with_repetition", remove_line_ending_with_repetition),
    ("cut_parse_errors", cut_parse_errors),
    ("drop_suffix_duplicate", drop_suffix_duplicate),
    ("trim_whitespace", trim_whitespace),
    ("drop_short", drop_short),
)

FILTERS_AFTER_CACHE: tuple[tuple[str, Filter], ...] = (
    ("remove_repetitive_blocks", remove_repetitive_blocks),
    ("remove_repetitive_lines", remove_repetitive_lines),
    ("remove_repeated_statement", remove_repeated_statement),
    ("limit_scope", limit_scope),
    ("cut_unreachable", cut_unreachable),
    ("drop_dangling_end", drop_dangling_end),
    ("drop_duplicated_closing_line", drop_duplicated_closing_line),
    ("reindent", reindent),
    ("fix_odd_indent", fix_odd_indent),
    ("drop_suffix_duplicate", drop_suffix_duplicate),
    ("trim_whitespace", trim_whitespace),
    ("cut_before_suffix_lines", cut_before_suffix_lines),
    ("drop_short", drop_short),
)


def run_filters(text: str, ctx: PostprocessContext, filters: tuple[tuple[str, Filter], ...]) -> str | None:
    """Apply `filters` in order; an empty result counts as a drop, so no filter has to check for it."""
    current: str | None = text
    for _name, apply in filters:
        if not current:
            return None
        current = apply(current, ctx)
    return current or None


def before_cache(text: str, ctx: PostprocessContext) -> str | None:
    """Clean a model answer before it is cached; None means the item is dropped."""
    return run_filters(text, ctx, FILTERS_BEFORE_CACHE)


def after_cache(text: str, ctx: PostprocessContext) -> str | None:
    """Clean an item about to be shown (fresh or from the cache); None means the item is dropped."""
    return run_filters(text, ctx, FILTERS_AFTER_CACHE)


__all__ = [
    "FILTERS_AFTER_CACHE",
    "FILTERS_BEFORE_CACHE",
    "PostprocessContext",
    "after_cache",
    "before_cache",
    "replace_range_end",
    "run_filters",
]
