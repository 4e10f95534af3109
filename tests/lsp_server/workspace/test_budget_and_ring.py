"""The token budget (with the prompt's counter) and the ring of recent chunks (batched, deduplicated)."""

from __future__ import annotations

from lsp_server.workspace.budget import LABEL_TOKENS, TokenCounter, fit
from lsp_server.workspace.ring import Chunk, Ring


class WordCounter:
    """A stand-in tokenizer counting words, which also counts its own calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, text: str) -> int:
        self.calls += 1
        return len(text.split())


async def test_fit_takes_items_in_order_while_they_fit_and_skips_too_large_ones():
    counter = WordCounter()
    items = ["a " * 20, "b " * 100, "c " * 10, "d " * 5]
    chosen = await fit(items, lambda t: t, 20 + 10 + 2 * LABEL_TOKENS, counter, max_items=10)
    assert [t for t, _ in chosen] == ["a " * 20, "c " * 10]
    assert sum(tokens for _, tokens in chosen) <= 20 + 10 + 2 * LABEL_TOKENS


async def test_fit_stops_at_max_items_and_at_zero_budget():
    counter = WordCounter()
    assert len(await fit(["x y"] * 5, lambda t: t, 1000, counter, max_items=2)) == 2
    assert await fit(["x y"] * 5, lambda t: t, 0, counter, max_items=5) == []


async def test_token_counter_memoises_and_falls_back_to_characters():
    words = WordCounter()
    counter = TokenCounter(words)
    assert await counter("one two three") == 3
    assert await counter("one two three") == 3
    assert words.calls == 1

    async def broken(text: str) -> int:
        raise RuntimeError("tokenizer down")

    assert await TokenCounter(broken)("12345678") == 2
    assert await TokenCounter(None)("123456789") == 3


def chunk(text: str, key: str = "file:///a.py", start: int = 0, source: str = "edit") -> Chunk:
    return Chunk(source, key, "a.py", start, start + text.count("\n") + 1, text)


LINES = "alpha_one = 1\nbeta_two = 2\ngamma_three = 3\n"


def test_ring_changes_only_at_flush():
    ring = Ring()
    ring.offer(chunk(LINES))
    assert ring.chunks == [] and ring.version == 0
    assert ring.flush() and len(ring.chunks) == 1 and ring.version == 1
    assert not ring.flush() and ring.version == 1


def test_a_similar_chunk_replaces_the_old_one_and_short_chunks_are_skipped():
    ring = Ring()
    ring.offer(chunk(LINES, start=0))
    ring.flush()
    ring.offer(chunk(LINES + "alpha_one\n", key="file:///b.py", start=50))
    ring.offer(chunk("tiny_chunk = 1", start=100))  # fewer than three lines
    ring.flush()
    assert [c.key for c in ring.chunks] == ["file:///b.py"]


def test_ring_keeps_its_capacity_oldest_out_and_order_stable():
    ring = Ring(capacity=3)
    for i in range(5):
        ring.offer(chunk(f"name_{i}_a = 1\nname_{i}_b = 2\nname_{i}_c = 3", key=f"file:///{i}.py"))
        ring.flush()
    assert [c.key for c in ring.chunks] == ["file:///2.py", "file:///3.py", "file:///4.py"]


def test_yanks_may_be_short_and_forget_drops_a_document():
    ring = Ring()
    ring.offer(chunk("copied_name", source="yank"))
    ring.offer(chunk(LINES, key="file:///other.py"))
    ring.flush()
    ring.forget("file:///other.py")
    assert [c.source for c in ring.chunks] == ["yank"]
