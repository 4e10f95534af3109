"""Properties that hold for any item and any document."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_server.postprocess import PostprocessContext, after_cache, before_cache, replace_range_end
from lsp_server.postprocess.limit_scope import limit_scope
from lsp_server.postprocess.reindent import fix_odd_indent, reindent
from lsp_server.postprocess.line_mode import cut_to_line_mode
from lsp_server.postprocess.textutil import ONLY_CLOSING, bounded_distance
from lsp_server.postprocess.trim_whitespace import trim_whitespace

ALPHABET = "ab x=(){}[]<>/\"';,:\n\n\t    "
code = st.text(alphabet=ALPHABET, max_size=80)
contexts = st.builds(
    PostprocessContext,
    prefix=code,
    suffix=code,
    language=st.sampled_from(["python", "rust", "javascript", "plaintext"]),
    indent_unit=st.sampled_from(["  ", "    ", "\t"]),
    line_mode=st.sampled_from(["line", "statement", "block"]),
    min_chars=st.integers(0, 4),
    model_ended=st.booleans(),
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def squeeze(text: str) -> str:
    return re.sub(r"\s", "", text)


@SETTINGS
@given(code, contexts)
def test_before_cache_only_cuts(text, ctx):
    """Before caching nothing is re-indented, so the result is a piece of the model's text."""
    out = before_cache(text, ctx)
    assert out is None or (out and out in text)


@SETTINGS
@given(code, contexts)
def test_after_cache_adds_nothing_but_indentation(text, ctx):
    out = after_cache(text, ctx)
    assert out is None or squeeze(text).startswith(squeeze(out))


@SETTINGS
@given(code, contexts)
def test_replace_range_covers_only_closers_of_the_current_line(text, ctx):
    end = replace_range_end(text, ctx)
    assert 0 <= end <= len(ctx.line_suffix)
    assert ONLY_CLOSING.fullmatch(ctx.line_suffix[:end])


def mixed_indentation(text: str) -> bool:
    """A line indented with tabs and spaces together: converting its tabs leaves spaces that a second pass reads
    as a different unit, so re-indentation is only idempotent without such lines."""
    return any({" ", "\t"} <= set(line[: len(line) - len(line.lstrip(" \t"))]) for line in text.split("\n"))


@SETTINGS
@given(code, contexts)
def test_idempotent_filters(text, ctx):
    for apply in (trim_whitespace, cut_to_line_mode, limit_scope, reindent, fix_odd_indent):
        if apply is reindent and mixed_indentation(ctx.line_prefix + text):
            continue
        once = apply(text, ctx)
        if once:
            assert apply(once, ctx) == once, apply.__name__


@SETTINGS
@given(st.text(alphabet="abc", max_size=30), st.text(alphabet="abc", max_size=30), st.integers(0, 40))
def test_bounded_distance_agrees_with_the_full_distance(a, b, limit):
    full = _levenshtein(a, b)
    assert bounded_distance(a, b, limit) == (full if full <= limit else limit + 1)


def _levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        previous = current
    return previous[-1]
