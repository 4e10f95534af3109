"""Recently edited, viewed and yanked code: a small ring of chunks, updated in batches.

The design of llama.vim's ring buffer of extra context (ggml-org/llama.vim, autoload/llama.vim): chunks are queued
as events happen and moved into the ring at most once per flush (the server flushes about once a second, never per
keystroke), a chunk more than 0.9 similar to one already there replaces it, and the ring keeps its order, so the
context block built from it changes rarely and only at its end — the model server's prompt cache stays valid."""

from __future__ import annotations

from .ranking import Candidate
from .text import jaccard

#: A new chunk this similar to an existing one replaces it (llama.vim: 0.9).
REPLACE_SIMILARITY = 0.9
#: Chunks with fewer non-blank lines say too little (llama.vim skips chunks under 3 lines).
MIN_LINES = 3


#: A chunk is a ranking Candidate (source edit | view | yank) whose score is given when a request ranks it.
Chunk = Candidate


class Ring:
    def __init__(self, capacity: int = 16) -> None:
        self.capacity = capacity
        self.chunks: list[Chunk] = []
        self._pending: list[Chunk] = []
        #: Bumped whenever the ring's content changes (selections made before are then stale).
        self.version = 0

    def offer(self, chunk: Chunk) -> None:
        """Queue a chunk; it enters the ring at the next flush."""
        if sum(1 for line in chunk.text.splitlines() if line.strip()) < MIN_LINES and chunk.source != "yank":
            return
        if not chunk.text.strip():
            return
        self._pending = [c for c in self._pending if jaccard(c.words, chunk.words) <= REPLACE_SIMILARITY
                         and not (c.key == chunk.key and c.start == chunk.start and c.source == chunk.source)]
        self._pending.append(chunk)

    def pending_keys(self) -> set[str | None]:
        """The documents the queued chunks come from (a yank without a document counts as None)."""
        return {c.key or None for c in self._pending}

    @property
    def pending(self) -> int:
        return len(self._pending)

    def flush(self) -> bool:
        """Move queued chunks into the ring; returns whether the ring changed."""
        if not self._pending:
            return False
        for chunk in self._pending:
            self.chunks = [c for c in self.chunks if jaccard(c.words, chunk.words) <= REPLACE_SIMILARITY
                           and not _same_place(c, chunk)]
            self.chunks.append(chunk)
        self._pending.clear()
        if len(self.chunks) > self.capacity:
            del self.chunks[:len(self.chunks) - self.capacity]
        self.version += 1
        return True

    def forget(self, key: str) -> None:
        """Drop a document's chunks (closed, or now excluded)."""
        before = len(self.chunks)
        self.chunks = [c for c in self.chunks if c.key != key]
        self._pending = [c for c in self._pending if c.key != key]
        if len(self.chunks) != before:
            self.version += 1


def _same_place(a: Chunk, b: Chunk) -> bool:
    """Two chunks of the same document whose line ranges overlap: the newer one holds the current text."""
    return a.key == b.key and a.start >= 0 and b.start >= 0 and a.start < b.end and b.start < a.end
