"""Model-free next edits: repeat the user's last substitution at the next place where the old text still stands.

The commonest next edit is the same change again: a renamed identifier's other uses, a changed literal or argument
at the next call, a parameter added to the next call. When the last history event is such a substitution, the next
occurrence of its old text in the same role is the prediction: found in O(window), no model call, and right far more
often than a small model (docs/next-edit.md has the benchmark). Anything else (new code, several different changes,
a half-typed argument) is not a substitution, and this module proposes nothing, but for lines rewritten in several
spans that stand again verbatim at the same indentation: those are rewritten there the same way (`same_lines`).

The event's lines are diffed token by token (identifiers, numbers, single punctuation, whitespace runs); every changed
span must be the same change. A change that is not a whole identifier on both sides (a literal, an inserted
argument, a deletion) is widened with its neighbouring tokens until its old side holds a name, so that `timeout=30`
→ `timeout=60` is looked for as `timeout=30`, never as any `30`. Occurrences must start and end at token boundaries,
lie in the same kind of region (code, string, comment: lexical.py) and, for names, be an attribute (after ".") exactly
when the edited one was.

Which occurrence: the next one after the cursor; only a rename in code goes back above it (not a one-letter name, nor
to a comment). A change in code goes to code before mentions in comments and docstrings; in comments and strings,
where the user picks each mention, the one in the edited one's shape and with its neighbouring words comes first
(docs/next-edit.md has the rules and what was tried and dropped; what each rule fixed on the benchmark is in its git
history).

The package, in the order a request goes through it: tokens.py cuts text into tokens (shared by all); last_edit.py
says what the last edit changed (`substitution()`), with widening.py for the anchors of changes that are no whole
name; same_role.py finds where the old text stands in the same role (`occurrences()`; roles.py reads a place's role,
the same way in the hunk and in the document); next_occurrence.py picks the one the user changes next and makes the
edit; template.py rewrites the next use of a generic type the user rewrote around its arguments (`Optional[int]`
after `Optional[str]` → `str | None`), which comes first; special_cases.py holds the cases outside those rules;
`propagate()`, here, tries them in order."""

from __future__ import annotations

import dataclasses

from engine.next_edit.types import EditEvent, TextEdit

from ..lexical import CODE

from .last_edit import Substitution, substitution
from .next_occurrence import _repeated
from .roles import _method_at
from .same_role import _Lexed, _matches, occurrences
from .special_cases import (
    _bumped, _keyword_added, _keyword_removed, _parametrized, _passed_on, _same_phrase, _sibling, same_lines,
    _twice,
)
from .template import rewritten, template
from .tokens import _quoted

__all__ = ["Substitution", "occurrences", "propagate", "same_lines", "substitution"]


def propagate(history_event: EditEvent, text: str, cursor: int, language: str = "", *,
              names_only: bool = False, region: str | None = None, edit_at: int | None = None,
              previous: EditEvent | None = None) -> TextEdit | None:
    """The edit that repeats `history_event`'s substitution at the next occurrence after `cursor` in `text` (a
    rename wraps to the start: all its uses must follow; other changes go top-down), or None. Occurrences on a run
    of consecutive lines are one edit (the next hunk as the user would make it, as a diff groups it; chaining
    reaches the rest; in prose the next line joins only after an edit over lines). `names_only`: only renames (an
    event of another file: a literal there is unlikely to be the same one). `region`: the kind of region the edit
    is in, as the whole document says (the hunk alone cannot tell a line inside a block comment); or `edit_at`:
    where in `text` the edited text begins (`substitution(...).offset` from the hunk's first line), so that the
    one lexing of `text` tells it. Pure; O(len(text)), and `text` is lexed only when its old text stands
    somewhere. `previous`: the edit before it in the same document, when the user made the same change there too."""
    sub = substitution(history_event.old, history_event.new, language)
    if sub is None and not names_only:
        return same_lines(history_event, text, cursor)  # no substitution: the same lines rewritten again, if any
    if sub is None or (names_only and not sub.name):
        return None
    if sub.name and not sub.attribute and edit_at is not None and 0 <= edit_at < len(text) \
            and _method_at(text, edit_at, edit_at + len(sub.new), language):
        # a method's `def` whose `self` stands on the next line, beyond the hunk: a property, as `self.name` is
        sub = dataclasses.replace(sub, attribute=True)
    lexed: _Lexed | None = None
    if _quoted(sub.new) and not _quoted(sub.old) and sub.lead and region is None and edit_at is not None \
            and 0 < edit_at < len(text):
        # `cache: DualCache` → `cache: "UserApiKeyCache"` (a forward reference, in a type position): the region is the
        # one the name stood in, before the quote that now begins the edit (a value made a literal, `mode=mode` →
        # `mode="rb"`, is a change of that place)
        lexed = _Lexed(text, language)
        region = lexed.kind_at(edit_at - 1)
    # the same change made in the edit before: the user's own renaming goes on, so the new name's other places are
    # the user's, not names the file already had (see `_existed`)
    before = substitution(previous.old, previous.new, language) if previous is not None else None
    event = None if before is not None and (before.old, before.new) == (sub.old, sub.new) else history_event
    if event is None and sub.name and sub.lead and before is not None and before.attribute == sub.attribute:
        # ... so a variable, also where it stood after a `:` (`testPassed: testOk,`, an object's value; made once
        # there, the name is that place's value): renamed wherever it stands
        sub = dataclasses.replace(sub, lead="")
    shape = None if names_only else template(sub)
    if shape is not None:  # a generic rewritten around its arguments: the next use of it, whatever its arguments
        if lexed is None:
            lexed = _Lexed(text, language)
        if region is None and edit_at is not None and 0 <= edit_at < len(text):
            region = lexed.kind_at(edit_at)
        edit = rewritten(shape, text, cursor, lexed) if region in (None, CODE) else None
        if edit is not None:
            return edit
    for each in (sub, sub.fallback, _twice(sub, history_event, previous)):
        if each is None or not any(True for _ in _matches(each, text)):
            continue
        if lexed is None:
            lexed = _Lexed(text, language)
            if region is None and edit_at is not None and 0 <= edit_at < len(text):
                region = lexed.kind_at(edit_at)
        if region is not None and region != each.region:
            each = dataclasses.replace(each, region=region)
        edit = _repeated(each, text, cursor, language, lexed, event)
        if edit is not None:
            return edit
    return (_bumped(sub, text, cursor) or _sibling(sub, text, cursor) or _keyword_added(sub, text, cursor, language)
            or _keyword_removed(sub, text, cursor, language) or _passed_on(sub, text, cursor, language)
            or _parametrized(sub, text, cursor, language) or _same_phrase(sub, text, cursor, region))
