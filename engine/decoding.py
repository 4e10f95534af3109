"""Stop words, checked while the completion streams in.

Two pitfalls of the usual design are avoided: checking only the end of the text after each chunk misses a stop word
followed by more text in the same chunk, and re-reversing the whole text per chunk makes every chunk cost more than the
last. Here each chunk is scanned once, together with the few characters held back from the previous one, so the cost per
chunk depends on the chunk and on the longest stop word only.

`stop_trie` keeps the classic representation (stop words reversed into a pygtrie trie, as Tabby does): the baseline
`bench/latency/stop_condition.py` measures ours against, and behind `ends_with_stop_word`, which answers "does the text
end with a stop word" (only the tests ask it; completions use the matcher). The streaming matcher compiles the same
words into one regular expression shaped like a forward trie, because a pygtrie lookup per character (about 1 µs on a
2-core test machine) costs more than the whole naive approach (`bench/latency/stop_condition.py` measures ours and the
naive one). Even a regex search costs ~200 ns a call, so `feed` first settles the usual chunks with two `in` tests and
set lookups (a chunk with neither "\n" nor "<", a held indentation that grows or ends) and searches only when those
cannot tell."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterable

import pygtrie

from .validation import check_stop_words

#: Stop-word sets whose matcher (and trie) is kept. A request's own words (the line of code below the cursor: the
#: rejoin stop word) get a matcher of their own beside the language's (`StopConditions`), so a new place to type at
#: makes a new small matcher, and the language's large one (100-160 KB: every proper prefix of every word, the
#: characters that may follow each, the regex) is built once. With 256 kept and the rejoin word inside the language's
#: set, the server grew by some 10 MB over a half-hour soak (issue 27).
MATCHERS_KEPT = 16


def _validated(words: Iterable[str]) -> frozenset[str]:
    return frozenset(check_stop_words(words))


@functools.lru_cache(maxsize=MATCHERS_KEPT)
def _reversed_trie(words: frozenset[str]) -> pygtrie.CharTrie:
    trie = pygtrie.CharTrie()
    for word in words:
        trie[word[::-1]] = word
    return trie


def stop_trie(words: Iterable[str]) -> pygtrie.CharTrie:
    """The stop words reversed into a trie (key: reversed word, value: the word), built once per word set.

    The trie is shared between callers: do not modify it."""
    return _reversed_trie(_validated(words))


def ends_with_stop_word(text: str, words: Iterable[str]) -> str | None:
    """The longest stop word `text` ends with, or None."""
    valid = _validated(words)
    longest = _matcher(valid).longest
    step = _reversed_trie(valid).longest_prefix(text[max(0, len(text) - longest):][::-1])
    return step.value if step else None


# ---------------------------------------------------------------------------------------------------------------------
# The streaming matcher


_END = ""  # marks a node where a whole stop word ends


def _forward_trie(words: frozenset[str]) -> dict:
    root: dict = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[_END] = True
    return root


def _node_pattern(node: dict) -> str:
    """A regex that, from a position, matches the shortest whole stop word, or else the rest of the text when the
    rest is the start of a stop word (`\\Z`). Exactly one path can match, since every branch begins with a literal."""
    if _END in node:
        return ""
    branches = [re.escape(ch) + _node_pattern(child) for ch, child in sorted(node.items())]
    return "(?:" + "|".join(branches + [r"\Z"]) + ")"


@dataclass(frozen=True)
class _Matcher:
    words: frozenset[str]
    longest: int
    pattern: re.Pattern | None
    proper_prefixes: frozenset[str]
    # Proper prefixes on whose path no whole stop word ends: text that is such a prefix is held as a whole.
    pending: frozenset[str]
    # For pending prefixes with no first character of a stop word after their own first one: the characters that
    # keep them alive. Any other next character means no stop word can begin anywhere in the held text.
    alive_after: dict[str, frozenset[str]]
    starts: tuple[str, ...]  # the distinct first characters of the stop words
    # Pending prefixes that only blank-line stop words extend (p + spaces/tabs + "\n"), such as "\n" + indentation:
    # once a character other than a blank or "\n" follows the blanks, no stop word can begin in them.
    blank_held: frozenset[str]


@functools.lru_cache(maxsize=MATCHERS_KEPT)
def _matcher(words: frozenset[str]) -> _Matcher:
    if not words:
        return _Matcher(words, 0, None, frozenset(), frozenset(), {}, (), frozenset())
    root = _forward_trie(words)
    branches = [re.escape(ch) + _node_pattern(child) for ch, child in sorted(root.items())]
    prefixes = frozenset(word[:k] for word in words for k in range(1, len(word)))
    pending = frozenset(p for p in prefixes if not any(p[:k] in words for k in range(1, len(p) + 1)))
    starts = tuple(sorted({word[0] for word in words}))
    alive_after: dict[str, frozenset[str]] = {}
    for prefix in pending:
        if not any(ch in starts for ch in prefix[1:]):
            node = root
            for ch in prefix:
                node = node[ch]
            alive_after[prefix] = frozenset(ch for ch in node if ch != _END)
    blank_held: frozenset[str] = frozenset()
    if not {" ", "\t"} & set(starts):
        blank_held = frozenset(
            p for p in alive_after
            if all(w[len(p):-1].strip(" \t") == "" and w.endswith("\n") and len(w) > len(p)
                   for w in words if w.startswith(p)))
    return _Matcher(words, max(map(len, words)), re.compile("|".join(branches)), prefixes, pending, alive_after,
                    starts, blank_held)


def _no_match(text: str) -> None:
    return None


class StopCondition:
    """Cuts a streamed completion before the earliest stop word.

    `feed(chunk)` returns the text that is safe to show now: everything except a tail that may still turn into a stop
    word (at most longest-stop-word − 1 characters). When a stop word is found, `stopped` is set, `stop_word` names
    it, and the text before it is the last thing returned; later chunks are ignored. `finish()` returns the held-back
    text at the end of the stream.

    `prefix_tail` is the end of the document prefix. It lets a stop word begin before the completion ("\\n" at the
    end of the prefix + "\\n" generated is a blank line), but only when the generated part of that stop word is
    whitespace: a completion may itself begin with a keyword or a comment when the cursor is at column 0. The
    prefix tail is never part of the output; the suffix is never looked at."""

    def __init__(self, stop_words: Iterable[str], prefix_tail: str = ""):
        self._m = _matcher(_validated(stop_words))
        keep = self._m.longest - 1
        tail = prefix_tail[max(0, len(prefix_tail) - keep):] if keep > 0 else ""
        self._buf = tail  # the prefix tail still in play, then the generated text not yet returned
        self._n_tail = len(tail)
        self.stopped = False
        self.stop_word: str | None = None
        #: The text that followed the stop word in what was fed (dropped, unless the caller goes on with it).
        self.after = ""
        #: How many characters of the stop word lie in the prefix tail (a blank line the prefix began).
        self.tail_chars = 0
        self._search = self._m.pattern.search if self._m.pattern is not None else _no_match
        self._words, self._pending, self._alive_after = self._m.words, self._m.pending, self._m.alive_after
        self._blank_held = self._m.blank_held
        # Fast paths in `feed`, each giving what the regex search would (the property tests compare with an oracle).
        # They need the stop words' first characters to be at most two, as in every language's default set ("\n" and
        # "<"): two `in` tests cost a fifth of a regex search. Otherwise (and once stopped) `_c1` is "", which is in
        # every chunk, and every chunk takes the search.
        quick = 0 < len(self._m.starts) <= 2
        self._c1, self._c2 = (self._m.starts[0], self._m.starts[-1]) if quick else ("", "")

    @property
    def held(self) -> int:
        """How many generated characters are held back right now."""
        return len(self._buf) - self._n_tail

    @property
    def held_tail(self) -> int:
        """How many characters of the prefix tail are held (a stop word may still begin there)."""
        return self._n_tail

    def feed(self, chunk: str) -> str:
        held = self._buf
        if not held:
            if self._c1 not in chunk and self._c2 not in chunk:  # no stop word can begin in it: the common case
                return chunk
            if self.stopped or not chunk:
                return ""
        elif self._n_tail:
            self._buf = held + chunk
            return self._advance(final=False)
        else:
            # What is held is the start of a stop word and nothing else (the indentation after a "\n", say).
            blank = self._blank_held
            if held in blank or (chunk[:1] in (" ", "\t") and held + chunk[0] in blank):
                rest = chunk.lstrip(" \t")
                if rest and rest[0] != "\n":  # the blanks end in code, not in a blank line: show them
                    self._buf = ""
                    if self._c1 not in rest and self._c2 not in rest:
                        return held + chunk
                    return held + chunk[:len(chunk) - len(rest)] + self._scan(rest)
            alive = self._alive_after.get(held)
            if alive is not None and chunk and chunk[0] not in alive:
                # The next character ends it, and no stop word can begin elsewhere in it: it is safe to show.
                self._buf = ""
                if self._c1 not in chunk and self._c2 not in chunk:
                    return held + chunk
            else:
                joined = held + chunk
                if joined in self._pending:  # still only the start of a stop word: keep holding
                    self._buf = joined
                    return ""
                return self._scan(joined)
        c1, c2 = self._c1, self._c2
        if not c1 or (c2 != c1 and c2 in chunk):
            return held + self._scan(chunk)
        before, sep, after = chunk.partition(c1)
        rest = sep + after
        if rest in self._pending:  # the chunk ends with the start of a stop word (often a lone "\n")
            self._buf = rest
            return held + before
        return held + self._scan(chunk)

    def _scan(self, buf: str) -> str:
        """The general case: the leftmost match is either a whole stop word, or the start of one running to the end
        of the text, which is held back."""
        found = self._search(buf)
        if found is None:
            self._buf = ""
            return buf
        start = found.start()
        word = found.group()
        if word in self._words:
            self.stopped, self.stop_word, self._buf, self._c1 = True, word, "", ""
            self.tail_chars = 0
            self.after = buf[found.end():]
        else:
            self._buf = buf[start:]
        return buf[:start]

    def finish(self) -> str:
        """The held-back text at the end of the stream (a stop word still counts; a partial one does not)."""
        if self.stopped:
            return ""
        out = self._advance(final=True)
        self._buf, self._n_tail = "", 0
        return out

    def _advance(self, final: bool) -> str:
        buf, n_tail, pattern = self._buf, self._n_tail, self._m.pattern
        pos = 0
        hold = len(buf)
        while pattern is not None:
            found = pattern.search(buf, pos)
            if found is None:
                break
            start = found.start()
            if start < n_tail:
                kind, word = self._at_tail_position(start, final)
            elif found.group() in self._m.words:
                kind, word = "stop", found.group()
            else:
                kind, word = (None, None) if final else ("partial", None)
            if kind is None:
                pos = start + 1
                continue
            if kind == "stop":
                self.stopped, self.stop_word, self._c1 = True, word, ""
                self.tail_chars = max(0, n_tail - start)
                self.after = buf[start + len(word or ""):]
                self._buf, self._n_tail = "", 0
                return buf[n_tail:start] if start > n_tail else ""
            hold = start
            break
        if hold < n_tail:  # a stop word may still begin in the prefix tail: emit nothing yet
            self._buf, self._n_tail = buf[hold:], n_tail - hold
            return ""
        self._buf, self._n_tail = buf[hold:], 0
        return buf[n_tail:hold]

    def _at_tail_position(self, start: int, final: bool) -> tuple[str | None, str | None]:
        """Whether a stop word that begins in the prefix tail counts: its generated part must be whitespace."""
        buf, n_tail, words = self._buf, self._n_tail, self._m.words
        for end in range(n_tail + 1, min(len(buf), start + self._m.longest) + 1):
            if buf[start:end] in words and buf[n_tail:end].isspace():
                return "stop", buf[start:end]
        rest = buf[start:]
        if not final and rest in self._m.proper_prefixes and buf[n_tail:].strip() == "":
            return "partial", None
        return None, None


class StopConditions:
    """Several stop-word sets checked as one: the same answers as `StopCondition` over their union.

    Why: each request adds its own words (the line of code below the cursor, which ends a suggestion that rejoins
    it) to the language's fixed ones. A matcher over the union is a new regular expression for every place the user
    types at (5-10 ms to compile for a language's ~70 words, paid before the first character can be shown, and one
    more entry in `re`'s cache); a matcher per set keeps the language's compiled once and makes the request's, of a
    word or two, in microseconds.

    The earliest stop word wins, as in one matcher: where one set has stopped, the text before its stop word is
    shown only as far as every other set has cleared it, and the stop holds once no other set can still find a stop
    word that begins before it (of two beginning at the same place, the shorter)."""

    def __init__(self, word_sets: Iterable[Iterable[str]], prefix_tail: str = ""):
        self._conditions = [StopCondition(words, prefix_tail) for words in word_sets]
        self._out = [0] * len(self._conditions)  # generated characters each condition has let through
        self._text = ""  # generated text from `_shown` on
        self._shown = 0
        self._final = False
        self.stopped = False
        self.stop_word: str | None = None
        self.after = ""

    @property
    def held(self) -> int:
        """How many generated characters are held back right now (not shown, not known to be cut)."""
        return 0 if self.stopped else min(self._shown + len(self._text), self._stop_limit()) - self._shown

    def feed(self, chunk: str) -> str:
        if self.stopped or not chunk:
            return ""
        self._text += chunk
        for i, condition in enumerate(self._conditions):
            if not condition.stopped:
                self._out[i] += len(condition.feed(chunk))
        return self._settle()

    def finish(self) -> str:
        if self.stopped:
            return ""
        for i, condition in enumerate(self._conditions):
            if not condition.stopped:
                self._out[i] += len(condition.finish())
        self._final = True
        return self._settle()

    def _start(self, i: int) -> int:
        """Where condition i's stop word begins, counted from the first generated character (negative: in the
        prefix tail)."""
        return self._out[i] - self._conditions[i].tail_chars

    def _pending(self, i: int) -> float:
        """The earliest place where condition i may still find a stop word."""
        condition = self._conditions[i]
        if self._final:
            return float("inf")
        return -condition.held_tail if condition.held_tail else self._out[i]

    def _stop_limit(self) -> int:
        stops = [max(0, self._start(i)) for i, c in enumerate(self._conditions) if c.stopped]
        return min(stops) if stops else self._shown + len(self._text)

    def _limit(self) -> int:
        """How far the generated text may be shown now."""
        return min([self._stop_limit()] + [self._out[i] for i, c in enumerate(self._conditions) if not c.stopped])

    def _settle(self) -> str:
        stops = [(self._start(i), len(c.stop_word or ""), i) for i, c in enumerate(self._conditions) if c.stopped]
        if stops:
            start, length, i = min(stops)
            if all(self._pending(j) >= start for j, c in enumerate(self._conditions) if not c.stopped):
                cut = max(0, start) - self._shown
                out = self._text[:cut]
                end = max(0, start + length) - self._shown
                self.stopped, self.stop_word, self.after = True, self._conditions[i].stop_word, self._text[end:]
                self._shown, self._text = self._shown + len(out), ""
                return out
        upto = self._limit() - self._shown
        out, self._text = self._text[:upto], self._text[upto:]
        self._shown += len(out)
        return out


def stop_condition(word_sets: Iterable[Iterable[str]], prefix_tail: str = "") -> StopCondition | StopConditions:
    """One condition for the non-empty sets: a plain `StopCondition` when there is only one."""
    sets = [tuple(words) for words in word_sets]
    sets = [words for words in sets if words]
    if len(sets) <= 1:
        return StopCondition(sets[0] if sets else (), prefix_tail)
    return StopConditions(sets, prefix_tail)


def first_stop(text: str, stop_words: Iterable[str], prefix_tail: str = "") -> tuple[str, str | None]:
    """The whole-text form of StopCondition: (text cut before the earliest stop word, the stop word or None)."""
    condition = StopCondition(stop_words, prefix_tail)
    out = condition.feed(text)
    out += condition.finish()
    return out, condition.stop_word
