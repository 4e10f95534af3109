"""The prompt oracle: every model request the loopback receives must show the model what the reference says one
of the server's requests may show it: nothing or a context block, then the end of the text before that request's
cursor, clipped no shorter than the budgets in force allow, and the beginning of the text after the cursor.
`Expect` is what one request may show; `PromptOracle`, Fuzz's base class, records one per completion request
(`expect`) and judges every model request as it arrives (`judge`), counting what it found in `oracle`."""

from __future__ import annotations

import bisect
import re
import time
from dataclasses import dataclass
from typing import Any

from .backend import ModelCall
from .client import Client
from .settings import PREFIX_BUDGETS, SUFFIX_BUDGETS
from .text import Doc, as_sent

#: Characters of the text before (after) the cursor kept per request for the oracle; longer texts are compared
#: through their hash as a whole.
KEEP = 8192
#: A model request may reach the loopback after the request it serves was answered (cancelled or superseded while
#: the HTTP request was on its way, or while the server was busy): such a request's prompt is still checked against
#: that request's text, and counted (`after_answer`), while fewer than this many later requests have been answered.
#: Counted in answers, not seconds, so that the check does not depend on the machine's load: the lag grows with it
#: (measured, seed 5, 3,000 actions: at load 3, 362 prompts came after their answer, 37 of them over 50 ms after;
#: under a busy test suite plus busy loops, 20 times slower, 43 came over 15 s after), while the answers in between
#: stay few: at most 59–106 (seeds 5 and 9, both encodings, idle or at load 3) and 48 (seed 5, six busy loops), the
#: report's `late_answers_max`.
LATE_ANSWERS = 200
#: Any line ending in a context block's label for the current file (`# Path: src/f1.py`, `// Path: …`).
_LABEL = re.compile(r"Path: [^\n]*\n")


@dataclass
class Expect:
    """What a completion request may make the model see: the reference text before and after its cursor (as the
    engine sends it), kept as the last / first KEEP characters plus the length and hash of the whole."""

    msg_id: int
    before: str
    before_len: int
    before_hash: int
    after: str
    after_len: int
    after_hash: int
    #: Index into Fuzz.budgets of the settings in force when the request was sent.
    settings_version: int

    @classmethod
    def of(cls, msg_id: int, before: str, after: str, settings_version: int) -> "Expect":
        return cls(msg_id, before[-KEEP:], len(before), hash(before), after[:KEEP], len(after), hash(after),
                   settings_version)


def _common_tail(a: str, b: str) -> int:
    """Length of the longest common ending of `a` and `b` (binary search over C-speed comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a.endswith(b[len(b) - mid:]):
            lo = mid
        else:
            hi = mid - 1
    return lo


def prefix_fits(before: str, label_ends: list[int], expect: Expect, floor: int, block_allowed: bool) -> int | None:
    """How many characters of `expect`'s text before the cursor `before` (a model request's text before the hole)
    ends with, when what precedes them is nothing or a context block ending in the current file's label; None when
    it is not so, or when fewer than `min(text, floor)` characters were kept although the budget had room."""
    common = _common_tail(before, expect.before)
    if common == len(expect.before) and expect.before_len > len(expect.before):  # longer than kept: the whole?
        if len(before) >= expect.before_len and hash(before[len(before) - expect.before_len:]) == expect.before_hash:
            common = expect.before_len
        elif floor >= expect.before_len:
            return None  # the whole text was due and this is not it
        else:
            return common  # KEEP characters match: more than any floor short of the whole
    cut = len(before) - common  # the earliest place where the text of the document may start
    if cut == 0:
        start = 0
    else:
        index = bisect.bisect_left(label_ends, cut)
        if not block_allowed or index == len(label_ends):
            return None
        start = label_ends[index]
    kept = len(before) - start
    if kept < min(expect.before_len, floor):
        return None
    return kept


def joins(later: Expect, earlier: Expect, max_typed: int = 50) -> bool:
    """`later` continues `earlier`: the same text after the cursor, at most `max_typed` characters more before it
    (the server's typing_through_max), ending as `earlier` did before them."""
    typed = later.before_len - earlier.before_len
    if not 0 <= typed <= max_typed or later.after_len != earlier.after_len or later.after_hash != earlier.after_hash:
        return False
    head = later.before[:len(later.before) - typed]
    overlap = min(len(head), len(earlier.before))
    return head[len(head) - overlap:] == earlier.before[len(earlier.before) - overlap:]


def suffix_fits(after: str | None, expect: Expect, floor: int) -> bool:
    if after is None:
        return True
    if len(after) < min(expect.after_len, floor):
        return False
    if len(after) <= len(expect.after):
        return expect.after.startswith(after)
    if not after.startswith(expect.after):
        return False
    return len(after) < expect.after_len or (len(after) == expect.after_len and hash(after) == expect.after_hash)


#: Configurations sent before a request that may still be waiting to be applied when it is served (see `floors`).
PENDING_SETTINGS = 2


class PromptOracle:
    """The oracle's state during one run and its checks; Fuzz performs the run and keeps the state current."""

    def __init__(self) -> None:
        #: Requests whose prompt the model may receive (recent ones; excluded documents never), by id.
        self.expects: dict[int, Expect] = {}
        #: (prefix, suffix) budget in characters of each configuration sent, in order; Expect.settings_version
        #: indexes it.
        self.budgets: list[tuple[int, int]] = []
        #: What the oracle found, counted (the run's report holds these counts).
        self.oracle = {"model_requests": 0, "warm_ups": 0, "with_context": 0, "after_answer": 0, "joined": 0,
                       "bad_prompts": 0, "empty_prefix": 0, "late_answers_max": 0}
        self.bad_examples: list[dict[str, Any]] = []
        self.client: Client | None = None

    def note_settings(self, payload: Any) -> None:
        """A configuration was sent: its budgets may be in force from now on (a refused one leaves the previous)."""
        completion = payload.get("completion") if isinstance(payload, dict) else None
        last = self.budgets[-1] if self.budgets else (PREFIX_BUDGETS[0] * 4, SUFFIX_BUDGETS[0] * 4)
        if isinstance(completion, dict):
            prefix, suffix = completion.get("max_prefix_tokens"), completion.get("max_suffix_tokens")
            last = (prefix * 4 if isinstance(prefix, int) else last[0], suffix * 4 if isinstance(suffix, int)
                    else last[1])
        self.budgets.append(last)

    def floors(self, version: int) -> tuple[int, int]:
        """Characters a prompt keeps at least of the text before / after the cursor (when there are that many):
        half the smallest budget in force since the request was sent (clipping cuts at a line start within one
        eighth of the budget). The last `PENDING_SETTINGS` configurations sent before the request count as in force
        too: the server applies configurations one after another, and one it pulls (`settings: null`) only once
        the client has answered its workspace/configuration, so a request right behind one may still be served
        with the one before (seen once: a suffix cut to the 2-token budget sent two configurations earlier)."""
        budgets = self.budgets[max(0, version - PENDING_SETTINGS):] or self.budgets[-1:]
        return min(b[0] for b in budgets) // 2, min(b[1] for b in budgets) // 2

    def expect(self, msg_id: int, doc: Doc, offset: int) -> None:
        """Request `msg_id` at `offset` of `doc` may make the model see this text around the cursor."""
        if not doc.excluded:
            self.expects[msg_id] = Expect.of(msg_id, as_sent(doc.text[:offset]), as_sent(doc.text[offset:]),
                                             len(self.budgets) - 1)
            if len(self.expects) > 2000:
                del self.expects[next(iter(self.expects))]

    def judge(self, call: ModelCall) -> None:
        """The oracle, for one model request as it arrives: its text before the hole is a context block (or
        nothing) followed by the end of the text before the cursor of a request still open (for a warm-up: of a
        request made before), clipped no shorter than the budget allows; the text after the hole the beginning of
        the text after that cursor."""
        self.oracle["model_requests"] += 1
        self.oracle["warm_ups"] += call.warm
        before = call.before
        label_ends = [m.end() for m in _LABEL.finditer(before)] if "Path: " in before else []
        self.oracle["with_context"] += bool(label_ends or call.extra)
        client = self.client
        answered_count = client.answered_count if client is not None else 0
        recent = list(self.expects.values())
        pending = client.pending if client is not None else {}
        if call.warm:
            candidates = recent[::-1]
        else:
            candidates = []
            for expect in reversed(recent[-400:]):
                answered = None if client is None else client.answers_by_id.get(expect.msg_id, {}).get("answered")
                if expect.msg_id in pending or (answered is not None and answered_count - answered < LATE_ANSWERS):
                    candidates.append(expect)
        if not call.unparsed:
            for expect in candidates:
                if self._fits(call, label_ends, expect):
                    if not call.warm and expect.msg_id not in pending:
                        self.oracle["after_answer"] += 1
                        lag = answered_count - (client.answers_by_id[expect.msg_id]["answered"] if client else 0)
                        self.oracle["late_answers_max"] = max(self.oracle["late_answers_max"], lag)
                    return
            if not call.warm:
                # A generation a newer request joined (it typed on from the generation's state; inflight.py) is
                # still that request's: the older one may have been answered (superseded) long ago.
                opened = [e for e in candidates if e.msg_id in pending]
                for expect in reversed(recent[-400:]):
                    if expect in candidates or not self._fits(call, label_ends, expect):
                        continue
                    if any(joins(later, expect) for later in opened):
                        self.oracle["joined"] += 1
                        return
        self.oracle["bad_prompts"] += 1
        document_part = before[label_ends[-1]:] if label_ends else before
        empty = document_part == "" and any(e.before_len for e in candidates)
        self.oracle["empty_prefix"] += empty
        if len(self.bad_examples) < 8:
            self.bad_examples.append({
                "at": time.strftime("%H:%M:%S", time.localtime()) + f"{time.time() % 1:.3f}"[1:],
                "protocol": call.protocol, "warm": call.warm, "empty_prefix": empty, "unparsed": call.unparsed,
                "before_end": before[-120:], "after_start": (call.after or "")[:60], "extra": call.extra,
                "open_candidates": len(candidates),
                "nearest": self._nearest(call, label_ends, candidates)})

    def _fits(self, call: ModelCall, label_ends: list[int], expect: Expect) -> bool:
        floor, suffix_floor = self.floors(expect.settings_version)
        if call.warm:  # a warm-up of an empty prefix would look like a completion that lost its prefix
            if not expect.before_len:
                return False
            floor = max(floor, 1)
        return prefix_fits(call.before, label_ends, expect, floor, call.protocol != "infill") is not None \
            and suffix_fits(call.after, expect, suffix_floor)

    def _nearest(self, call: ModelCall, label_ends: list[int], candidates: list[Expect]) -> list[dict[str, Any]]:
        """For a bad prompt's report: the candidates it comes closest to, and what they lack."""
        out = []
        for expect in candidates:
            kept = prefix_fits(call.before, label_ends, expect, 0, call.protocol != "infill")
            if kept is None and not suffix_fits(call.after, expect, 0):
                continue
            floor, suffix_floor = self.floors(expect.settings_version)
            out.append({"id": expect.msg_id, "before_len": expect.before_len, "after_len": expect.after_len,
                        "kept_before": kept, "floors": (floor, suffix_floor), "sent": len(call.after or ""),
                        "suffix_fits": suffix_fits(call.after, expect, 0)})
        return out[:4]
