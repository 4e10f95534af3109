"""Which slot of Infill's own llama-server a completion runs on.

llama-server picks a slot by prompt similarity among the *idle* ones. While the user types, the slot holding the
document's prompt is often still busy: a superseded request finishes its current prefill batch before its cancel
takes effect, or the speculative prefetch runs there. The next request then lands on the other slot and prefills its
whole prompt again; and a prefetch kept on a slot of its own prefilled every file's prompt a second time. The typing
replay measured both: about half of all prefilled prompt tokens were such second copies (slot logs of
`bench.replay.typing_replay --user accepting`, 1 December).

Infill is the only client of its own server and knows what it sent to each slot, so it pins each request to the slot
whose last prompt shares the longest beginning with it. llama-server makes a request for a busy slot wait until that
slot is released, which for a cancelled request is after one batch: shorter than prefilling everything elsewhere.

- A slot with a stream still open (a generation nobody cancelled) is avoided while another is free.
- A speculative request goes to the user's slot only when it continues what that slot holds (its prompt shares at
  least half of the slot's); otherwise it takes the last slot, so that a guess never evicts the user's prompt cache.
- A user's llama-server (the `llama.cpp/*` kinds) is shared with others: its requests are never pinned. Nor are
  those to Infill's own server while other Infill processes of the machine use it too (engine.local.shared)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

#: A speculative request continues a slot's prompt when it shares at least this fraction of it.
CONTINUES = 0.5
#: A request sharing less than this fraction of itself with every slot is new there (llama-server's own
#: `--slot-prompt-similarity` default): it takes the least recently used slot.
COLD = 0.1


def shared_length(a: str, b: str) -> int:
    """Characters at the start that `a` and `b` have in common."""
    return len(os.path.commonprefix([a, b]))


@dataclass
class SlotRouter:
    """What each slot was last given (`texts`), how many streams are open on it (`open`) and when it was last
    chosen (`used`)."""

    slots: int
    texts: list[str] = field(default_factory=list)
    open: list[int] = field(default_factory=list)
    used: list[int] = field(default_factory=list)
    _clock: int = 0

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError("a llama-server has at least one slot")
        self.texts = [""] * self.slots
        self.open = [0] * self.slots
        self.used = [0] * self.slots

    def choose(self, key: str, speculative: bool = False) -> int:
        """The slot for a prompt whose text (or, for `/infill`, its context and prefix) is `key`. A prompt new to
        every slot takes the one used least recently, so that switching between two files keeps both cached."""
        free = [i for i in range(self.slots) if not self.open[i]] or list(range(self.slots))
        shared = {i: shared_length(key, self.texts[i]) for i in free}
        if speculative:
            last = self.slots - 1
            best = max(free, key=lambda i: (shared[i], i))
            if best == last or (shared[best] > 0 and shared[best] >= CONTINUES * len(self.texts[best])):
                return best
            return last if last in free else best
        best = max(free, key=lambda i: (shared[i], self.used[i]))
        if shared[best] < COLD * len(key):
            best = min(free, key=lambda i: self.used[i])
        return best

    def begin(self, slot: int, key: str) -> None:
        """A request with `key` was sent to `slot`; its stream is open until `end`."""
        if 0 <= slot < self.slots:
            self.note(slot, key)
            self.open[slot] += 1

    def end(self, slot: int) -> None:
        if 0 <= slot < self.slots and self.open[slot] > 0:
            self.open[slot] -= 1

    def note(self, slot: int, key: str) -> None:
        """`slot` now holds `key` (also from a reply naming the slot an unpinned request ran on)."""
        if 0 <= slot < self.slots:
            self._clock += 1
            self.texts[slot] = key
            self.used[slot] = self._clock
