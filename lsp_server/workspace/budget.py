"""Fitting snippets into the context budget, counted with the prompt's own token counter.

Counting goes through the engine's tokenizer (llama-server `/tokenize`) when there is one, and falls back to
CHARS_PER_TOKEN characters per token otherwise, as the prompt clipping does. Counts are memoised by text, since the
same snippets are counted again and again while the user types."""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Awaitable, Callable, Sequence, TypeVar

from engine.prompt import CHARS_PER_TOKEN, CountTokens

log = logging.getLogger(__name__)

#: The label line around each snippet ("# Path: pkg/x.py\n", "<|file_sep|>pkg/x.py\n") costs about this much.
LABEL_TOKENS = 8

T = TypeVar("T")


class TokenCounter:
    def __init__(self, count_tokens: CountTokens | None = None, capacity: int = 512) -> None:
        self.count_tokens = count_tokens
        self._memo: OrderedDict[str, int] = OrderedDict()
        self.capacity = capacity

    async def __call__(self, text: str) -> int:
        if self.count_tokens is None:
            return -(-len(text) // CHARS_PER_TOKEN)
        cached = self._memo.get(text)
        if cached is not None:
            self._memo.move_to_end(text)
            return cached
        try:
            count = await self.count_tokens(text)
        except Exception as exc:  # the tokenizer being down must not stop completions
            log.debug("counting tokens failed (%s); estimating from characters", exc)
            return -(-len(text) // CHARS_PER_TOKEN)
        self._memo[text] = count
        if len(self._memo) > self.capacity:
            self._memo.popitem(last=False)
        return count


async def fit(items: Sequence[T], text_of: Callable[[T], str], budget: int, count: Callable[[str], Awaitable[int]],
              max_items: int) -> list[tuple[T, int]]:
    """Take items in the given (priority) order while they fit; an item too large for what is left is skipped and
    smaller ones after it may still fit. Returns (item, tokens) pairs."""
    chosen: list[tuple[T, int]] = []
    left = budget
    for item in items:
        if len(chosen) >= max_items or left <= LABEL_TOKENS:
            break
        text = text_of(item)
        # More characters than CHARS_PER_TOKEN * 4 per token left cannot fit: no tokenizer call.
        if len(text) > left * CHARS_PER_TOKEN * 4:
            continue
        tokens = await count(text) + LABEL_TOKENS
        if tokens <= left:
            chosen.append((item, tokens))
            left -= tokens
    return chosen
