"""Which occurrence the user changes next, and how much of the file that one edit covers: the order (top-down, a
rename back to the top, code before comments, the same line again, the edited one's neighbouring words in prose) and
the run of lines taken as one hunk are about the user's path through the file, not about roles, so they are kept
apart from the checks that find the occurrences."""

from __future__ import annotations

import re

from engine.next_edit.types import EditEvent, TextEdit

from ..lexical import CODE, COMMENT, STRING
from .last_edit import Substitution, _called
from .roles import _bracket_kind
from .same_role import _class_tagged, _Lexed, _typed_mention, occurrences
from .tokens import KEYWORDS, _WORDY, _is_name, _tokens

#: Occurrences this many lines after the first one (0: on its line) are part of the same edit.
ADJACENT_LINES = 1
#: A run of occurrences on consecutive lines is one edit up to this many lines (the most a hunk holds).
MAX_RUN_LINES = 8


def _line_breaks(text: str, start: int, end: int) -> int:
    between = text[start:end]
    return between.count("\n") + between.count("\r") - between.count("\r\n")


#: Tokens on each side of an occurrence compared with the edited one's neighbours.
CONTEXT_TOKENS = 3
#: How far (lines) past the next occurrence in prose one with the edited one's neighbours is preferred: a screenful.
CONTEXT_LINES = 50


def _side_tokens(text: str) -> list[str]:
    return [t for t in _tokens(text) if not t.isspace()]


def _matching(xs: list[str], ys: list[str]) -> int:
    n = 0
    for x, y in zip(xs[:CONTEXT_TOKENS], ys[:CONTEXT_TOKENS]):
        if x != y:
            break
        n += 1
    return n


def _context_score(text: str, start: int, end: int, context: tuple[str, str]) -> int:
    """How many tokens next to an occurrence, on its line (up to CONTEXT_TOKENS each side), are those next to the
    edited one: `@param {string} totalErrors` shares two on the left and one on the right with itself elsewhere."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    before = _side_tokens(text[max(line_start, start - 200):start])[::-1]
    after = _side_tokens(text[end:min(len(text) if line_end < 0 else line_end, end + 200)])
    return _matching(before, _side_tokens(context[0])[::-1]) + _matching(after, _side_tokens(context[1]))


def _best_context(text: str, ahead: list[tuple[int, int]], context: tuple[str, str]) -> list[tuple[int, int]]:
    """`ahead` (occurrences after the cursor, in order), from the one within a screenful of the first that has
    the most of the edited one's neighbours: in prose, a word's role is the words around it (the same parameter's
    `{string}` in the next doc comment, not the `@returns {string}` just below), and the user edits some mentions,
    not all. Ties: the nearest."""
    pool, lines, at = [], 0, ahead[0][0]
    for span in ahead:
        lines += text.count("\n", at, span[0])
        if lines > CONTEXT_LINES:
            break
        pool.append(span)
        at = span[0]
    scores = [_context_score(text, start, end, context) for start, end in pool]
    best = scores.index(max(scores))
    return ahead[best:]


#: The fewest names of an old text that says by itself where it is repeated, so that the same whole line farther
#: down is no surer a repeat than its next occurrence (`_same_line_first` is for a value or argument of few names).
SELF_ANCHORED_NAMES = 3


def _same_line_first(text: str, ahead: list[tuple[int, int]], sub: Substitution,
                     reach: int | None = CONTEXT_LINES) -> list[tuple[int, int]]:
    """`ahead` (occurrences after the cursor, in order), from the first within `reach` lines (a screenful; None:
    anywhere) whose whole line is the edited line as it was (`match: typing.Optional[str] = None,` again, not the
    `message: ...` above it): the same line elsewhere is the surest repeat of a changed value or argument;
    unchanged when there is none."""
    line = (sub.context[0] + sub.old + sub.context[1]).strip()
    if "\n" in line:
        return ahead
    lines, at = 0, ahead[0][0]
    for i, (start, end) in enumerate(ahead):
        lines += text.count("\n", at, start)
        if reach is not None and lines > reach:
            break
        at = start
        first = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
        last = len(text)
        for stop in ("\n", "\r"):
            found = text.find(stop, end)
            if found >= 0:
                last = min(last, found)
        if text[first:last].strip() == line:
            return ahead[i:]
    return ahead


def _appended(sub: Substitution) -> bool:
    """Whether the change only appends text after its old word (not a longer name: `e` → `err` is a rename)."""
    return sub.new.startswith(sub.old) and _WORDY.match(sub.new[len(sub.old):len(sub.old) + 1] or " ") is None


#: A comment begun after code on its line: a noqa comment, ` // eslint-disable-line no-var`.
_TRAILING_COMMENT = re.compile(r"[ \t]+(?:#|//|/\*)")


def _commented(sub: Substitution) -> bool:
    """Whether the change only appends a comment after its old word at a line's end (a lint suppression, `#
    pragma: no cover`): the line itself is unchanged, so an import line is as much its place as any other."""
    return sub.at_line_end and sub.new.startswith(sub.old) \
        and _TRAILING_COMMENT.match(sub.new, len(sub.old)) is not None


def _uncommented(sub: Substitution) -> bool:
    """Whether the change only takes a comment off the end of a line of code (`x,  # noqa: ARG002` → `x,`)."""
    return sub.at_line_end and not sub.new and _TRAILING_COMMENT.match(sub.old) is not None


def _words(text: str, word: str) -> int:
    """How many times `word` stands in `text` as a whole word."""
    return len(re.findall(r"(?<![\w$])" + re.escape(word) + r"(?![\w$])", text))


def _existed(sub: Substitution, text: str, event: EditEvent | None) -> bool:
    """Whether the new name of `sub` stood in `text` before `event` made it: then the edit chose another existing
    name at its place (`-> RenderableType` → `-> Blank`, `_append` → `_insert`), no declaration was renamed."""
    if event is None or not _is_name(sub.new):
        return False
    return _words(text, sub.new) - _words(event.new, sub.new) + _words(event.old, sub.new) > 0


#: A line that imports names: `from x import a, b`, `import a`, `import { a } from "x"`.
_IMPORT_START = r"[ \t]*(?:from\s+\S+\s+)?import\b"
_IMPORT_LINE = re.compile(_IMPORT_START)


def _imported(text: str, name: str) -> bool:
    """Whether an import line of `text` already brings `name`."""
    return re.search(r"(?m)^" + _IMPORT_START + r"[^\n]*(?<![\w$])" + re.escape(name) + r"(?![\w$])", text) \
        is not None


def _in_prose(text: str, start: int, lexed: _Lexed) -> bool:
    """Whether `start` is in a comment, or in a string on a line that begins inside it (a docstring's line, `Dict[str,
    List[str]]: the cookies`), not in a string literal of a line of code."""
    kind = lexed.kind_at(start)
    return kind == COMMENT or (kind == STRING and lexed.kind_at(text.rfind("\n", 0, start) + 1) == STRING)


def _repeated(sub: Substitution, text: str, cursor: int, language: str, lexed: _Lexed,
              event: EditEvent | None = None) -> TextEdit | None:
    spans = list(occurrences(sub, text, language, lexed))
    if spans and _commented(sub):
        # a comment appended to an import (a noqa comment after `import jwt`) goes to the same import, not to
        # another import of the name (`import simplejson as json  # type: ignore` is not `import json`'s)
        spans = [(s, e) for s, e in spans if _IMPORT_LINE.match(text, text.rfind("\n", 0, s) + 1) is None
                 or text[text.rfind("\n", 0, s) + 1:s].strip() == sub.context[0].strip()]
    elif spans and sub.name and sub.region == CODE and (not _is_name(sub.new) or _imported(text, sub.new)):
        # an import of the old name is no use to rename into a type expression (`PythonVersionInfo` →
        # `Tuple[int, int]`) or into a name an import already brings (`MutableMapping` → `EnvType`): it is the old
        # name's declaration, which goes or stays, not another import of the new one
        spans = [(s, e) for s, e in spans if _IMPORT_LINE.match(text, text.rfind("\n", 0, s) + 1) is None]
    if not spans:
        return None
    candidates = spans
    # `dspy.ReAct` → `dspy.ReActV2` in a docstring: code written in prose is renamed as code is, in every code span
    spanned = sub.region != CODE and sub.name and _in_code_span(sub.context[0])
    if _typed_mention(sub):  # the code below goes with the type renamed above it: code, or mentions of the same shape
        candidates = [(s, e) for s, e in spans if lexed.kind_at(s) == CODE
                      or (text[s - 1:s], text[e:e + 1]) == sub.around] or spans
    elif spanned:  # a name renamed inside a code span in prose: every code span naming it, top-down
        candidates = [(s, e) for s, e in spans if _in_code_span(text[text.rfind("\n", 0, s) + 1:s])] or spans
    elif sub.region != CODE:  # in prose, a word in the edited one's shape (`{Options}`) before any other use of it
        candidates = [(s, e) for s, e in spans if (text[s - 1:s], text[e:e + 1]) == sub.around] or spans
    if sub.region == CODE and any(_in_prose(text, s, lexed) for s, _ in candidates):
        # a code name's mentions in comments and docstrings come after its uses in code: the code must change, a
        # comment may not (but a class named by a doc tag, `@augments TempNode`, is its type as the code's `extends`
        # is: the user goes on top-down through both)
        code = [span for span in candidates if not _in_prose(text, span[0], lexed)
                or _class_tagged(text[text.rfind("\n", 0, span[0]) + 1:span[0]])]
        candidates = [span for span in code if span[0] >= cursor] or code + [
            span for span in candidates if span[0] >= cursor and span not in code]
    ahead = [span for span in candidates if span[0] >= cursor]
    if sub.near:  # the similar calls just below, in calls
        ahead = [(s, e) for s, e in ahead if _line_breaks(text, cursor, s) <= MAX_RUN_LINES
                 and _bracket_kind(text, e) == "call"]
        if not ahead:
            return None
    if ahead and sub.region != CODE and not spanned:
        code = [span for span in ahead if lexed.kind_at(span[0]) == CODE] if _typed_mention(sub) else []
        prose = [span for span in ahead if span not in code]
        ahead = _best_context(text, prose, sub.context) if prose else []
        if code and (not ahead or code[0][0] < ahead[0][0]):
            ahead = code  # a use in code before the next mention like the edited one: the code goes with the type
    if ahead and sub.region == CODE and not sub.name and not sub.near \
            and sum(map(_is_name, _tokens(sub.old))) < SELF_ANCHORED_NAMES:
        # (an old text of three names or more, `typing.Optional[float]`, a trailing `// eslint-disable-line ...`,
        # is its own anchor: the user goes on top-down, as with any other change)
        # a trailing comment taken off (a noqa comment for ARG002, once the argument is used) was about that line's
        # code: its twin first, however far
        ahead = _same_line_first(text, ahead, sub, None if _uncommented(sub) else CONTEXT_LINES)
    after = ahead[0] if ahead else None
    if after is None:
        if not sub.name or _appended(sub) or _called(sub.old, sub.new, KEYWORDS) or sub.region != CODE \
                or len(sub.old) == 1 or not candidates or _existed(sub, text, event):
            # a changed literal or argument is repeated where the user goes next, not back up; so is text appended
            # after a word (`identifier` → `identifier. Defaults to ...`) or a call put around it (`f(x)`): the word
            # is its anchor, not renamed; nor a name replaced by one that already stood in the file (no
            # declaration renamed, so no use above must follow); and
            # a word changed in prose, where no use above must follow (`a` → `an` in one sentence)
            return None
        after = candidates[0]  # a rename: every use must follow, the ones above too (in code)
    first = spans.index(after)
    chosen = [spans[first]]  # its neighbours join it whatever their shape: the same line is one edit
    # in code a use on the next line is the same edit; in prose the user picks each mention, so the next line's
    # joins only when the user's own edit spanned lines
    # (a string in a line of code, `cast("CrewAgentExecutor", x)`, is no prose: code's reach)
    reach = ADJACENT_LINES if sub.region == CODE or not _in_prose(text, spans[first][0], lexed) \
        else min(ADJACENT_LINES, sub.spread)
    if _uncommented(sub) and not sub.spread:
        reach = 0  # ... but a line's own comment taken off one line is that line's (a neighbour's noqa stays)
    for start, end in spans[first + 1:]:
        # on the line of the one before or the line after it: a run of lines is one edit, as a diff's hunk is; in a
        # string, lines that each begin with it are code (a shader's, a query's in a template), not prose
        near = reach if not (_begins_line(text, chosen[-1][0]) and _begins_line(text, start)) else ADJACENT_LINES
        if _line_breaks(text, chosen[-1][1], start) > near or _line_breaks(text, chosen[0][0], start) >= MAX_RUN_LINES:
            break
        chosen.append((start, end))
    begin, finish = chosen[0][0], chosen[-1][1]
    pieces, at = [], begin
    for start, end in chosen:
        pieces += [text[at:start], sub.new]
        at = end
    return TextEdit(begin, finish, "".join(pieces))


def _in_code_span(line_before: str) -> bool:
    """Whether the end of `line_before` (a line up to an occurrence) is inside a Markdown or reStructuredText code
    span: an odd number of backtick runs (`x`, ``x``) before it."""
    return len(re.findall(r"`+", line_before)) % 2 == 1


def _begins_line(text: str, start: int) -> bool:
    """Whether only indentation stands before `start` on its line."""
    return not text[text.rfind("\n", 0, start) + 1:start].strip()
