"""Choosing snippets: drop what the prompt already shows, drop near-copies, rank, and order for the prompt cache.

Pure functions over Candidates, so every rule is testable without a server."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from .scan import language_of
from .text import identifiers, jaccard

_WORDS: OrderedDict[str, frozenset] = OrderedDict()
#: Identifier sets kept (1-3 KB each with their text, for a 16-line chunk of real code). A request ranks a few dozen
#: candidates, most of them the same as the previous request's; but the edited document's windows and chunks are
#: new text after every tick, so a larger memo only fills with texts that never come back: 4096 could hold some
#: 10 MB, and grew the server steadily over issue 27's half-hour soak, for no more hits than ten requests' worth.
WORDS_CACHE = 512


def words_of(text: str) -> frozenset:
    """The identifier set of a text, memoised: the same windows and definitions come back request after request."""
    words = _WORDS.get(text)
    if words is None:
        words = _WORDS[text] = frozenset(identifiers(text))
        if len(_WORDS) > WORDS_CACHE:
            _WORDS.popitem(last=False)
    else:
        _WORDS.move_to_end(text)
    return words

#: A candidate more similar than this to the code around the cursor is dropped: llama.vim found such chunks make
#: the model repeat what is already there.
NEAR_COPY = 0.5

#: Sources in the order they win a tie; definitions referenced at the cursor go first (Continue, Zed, Tabby).
PRIORITY = {"definition": 0, "yank": 1, "edit": 2, "view": 3, "open": 4, "file": 5, "next": 6}


@dataclass
class Candidate:
    source: str       # definition | yank | edit | view | open | file | next
    key: str          # file path or URI (current-file and exclusion checks)
    label: str        # the path shown to the model
    start: int        # line range in its file (-1 when not from a file, e.g. a yank)
    end: int
    text: str
    score: float = 0.0
    words: frozenset = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not self.words:
            self.words = words_of(self.text)

    @property
    def place(self) -> tuple[str, int, int, str]:
        return (self.key, self.start, self.end, self.source)


#: Languages whose code stands in for each other's as context (one family); any other two are kept apart.
LANGUAGE_FAMILY = {"javascriptreact": "javascript", "typescript": "javascript", "typescriptreact": "javascript",
                   "vue": "javascript", "cpp": "c"}
#: Sources chosen for their similarity to the code around the cursor: with a score of 0 or less they share nothing.
SIMILARITY_SOURCES = frozenset({"edit", "view", "open", "file"})


def same_language(candidate: Candidate, language: str | None) -> bool:
    """Whether a candidate comes from a file of the cursor's language family. Copilot shows neighbouring tabs of the
    cursor's language only; measured here, the recently edited chunks of the typing replay's other files (TypeScript
    above Python, Python above Go) took up to 470 tokens of a prompt, scoring -4.6 to 1.3 against the cursor's window.
    Unknown languages pass, and so does yanked text (copied to be pasted here)."""
    if not language or candidate.source in ("yank", "next"):
        return True
    theirs = language_of(candidate.key)
    return theirs is None or LANGUAGE_FAMILY.get(theirs, theirs) == LANGUAGE_FAMILY.get(language, language)


def relevant(candidate: Candidate) -> bool:
    """A similar-code candidate must share something with the cursor's window (score above 0): one that does not
    costs prompt tokens and shows the model unrelated code. Definitions, yanks and the next lines have their own
    reasons to be there."""
    return candidate.source not in SIMILARITY_SOURCES or candidate.score > 0


def overlaps(candidate: Candidate, key: str, lines: tuple[int, int]) -> bool:
    """Whether the candidate shows lines of `key` within `lines` (start inclusive, end exclusive)."""
    return candidate.key == key and candidate.start >= 0 and candidate.start < lines[1] and lines[0] < candidate.end


def drop_shown(candidates: list[Candidate], key: str, lines: tuple[int, int], cursor_words: frozenset,
               near_copy: float = NEAR_COPY) -> list[Candidate]:
    """Leave out candidates overlapping the cursor's own window and near-copies of it."""
    return [c for c in candidates
            if c.text.strip() and not overlaps(c, key, lines) and jaccard(c.words, cursor_words) <= near_copy]


def dedupe(candidates: list[Candidate]) -> list[Candidate]:
    """One candidate per place: overlapping ranges of one file and identical texts keep the best-ranked one."""
    kept: list[Candidate] = []
    texts: set[str] = set()
    for candidate in sorted(candidates, key=rank_key):
        text = candidate.text.strip()
        if text in texts:
            continue
        if any(k.key == candidate.key and k.start >= 0 and candidate.start >= 0 and k.start < candidate.end
               and candidate.start < k.end for k in kept):
            continue
        kept.append(candidate)
        texts.add(text)
    return kept


def rank_key(candidate: Candidate) -> tuple[int, float, int]:
    """Definitions first, then by score (higher first), then by source."""
    first = 0 if candidate.source == "definition" else 1
    return (first, -candidate.score, PRIORITY.get(candidate.source, 9))


#: Places `stable_order` remembers. Only the order of snippets that come back matters (consecutive prompts share
#: their beginning); every new window or chunk is a new place, so without a bound the map grows all session.
ORDER_KEPT = 1000


def stable_order(chosen: list[Candidate], order: dict[tuple, int]) -> list[Candidate]:
    """The prompt order: snippets already shown before keep their places, new ones go after them (nearest the
    code), so consecutive prompts share their beginning. `order` remembers first appearances across requests (a
    growing number: the newest place has the largest); past ORDER_KEPT places the oldest are forgotten, which leaves
    the order of the others as it was (clearing it all would reorder the next prompt's snippets)."""
    for candidate in chosen:
        if candidate.place not in order:
            order[candidate.place] = next(reversed(order.values()), -1) + 1
    ranked = sorted(chosen, key=lambda c: order[c.place])
    if len(order) > ORDER_KEPT:
        chosen_places = {c.place for c in chosen}
        for place in [p for p in order if p not in chosen_places][:len(order) - ORDER_KEPT]:
            del order[place]  # dicts keep insertion order: these are the oldest
    return ranked
