"""Where the old text still stands in the same role: a plain search at token boundaries, then the same-role checks,
each of which refuses a look-alike (an attribute for a variable, a parameter list for a call, a comment for code).
Kept apart from the choice among them (next_occurrence.py) because these checks are about roles, that choice about the
user's path through the file; the document is lexed here, once, and only where the old text stands somewhere."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator

from ..lexical import CODE, COMMENT, STRING, Regions, regions
from .last_edit import _DECLARED, Substitution, _called
from .roles import (
    PARAMETERS_REACH, _applied, _attribute_at, _bracket_kind, _callee, _cast_at, _lead_at, _method_at,
    _receiver, _subscript_argument, _type_position,
)
from .tokens import KEYWORDS, _OPENERS, _RECEIVERS, _VERSION, _WORDY, _is_name, _quoted, _tokens
from .widening import _BLOCK_COMMENT, _QUALIFIER

_NAME_START = re.compile(r"[^\W\d]")

#: Keywords that declare the name before a `<`: its type parameters (`type X<T>`) are no type arguments.
_DECLARES = re.compile(r"\b(?:type|interface|class|function|def)\s+[\w$]+\s*\Z")


def _type_argument(text: str, start: int, end: int, sub: Substitution) -> bool:
    """Whether the name at [start, end) is a type argument as the wrapped one was: after the same opening character
    (`IsRecord<T, false>` like `IsValues<T>`), closed or followed by the next argument, and not a declaration's type
    parameter (`type IsRecord<T, U>`)."""
    ends: tuple[str, ...] = (">", "]", "}", ",", "|")
    if sub.lead:  # an annotation wrapped (`file_path: PurePath` → `FromPath[PurePath]`): the next annotation's end too
        ends += (")", " ", ":", "=", "\n", "\r", "")
    if text[start - 1:start] != sub.around[0] or text[end:end + 1] not in ends:
        return False
    opener = start - 1
    return not (sub.around[0] in "<[" and _DECLARES.search(text, max(0, opener - 80), opener))


@lru_cache(maxsize=16)
def _pattern(sub: Substitution) -> re.Pattern[str]:
    """The regular expression of `sub.old` at token boundaries, for a CRLF document and an old text of several
    lines (the same lines with other breaks); `_matches` finds everything else with str.find."""
    body = re.escape(sub.old).replace("\\\n", r"\r?\n")
    head = r"(?<!\w)" if _WORDY.match(sub.old[0]) else ""
    tail = r"(?!\w)" if _WORDY.match(sub.old[-1]) else ""
    if sub.at_line_end:
        tail += r"(?=[ \t]*(?:\r|\n|\Z))"
    return re.compile(head + body + tail)


_LINE_END = re.compile(r"[ \t]*(?:\r|\n|\Z)")


def _matches(sub: Substitution, text: str) -> Iterator[tuple[int, int]]:
    """Spans of `sub.old` in `text` that start and end at token boundaries (and, for text added at a line end, end
    their line), in order, not overlapping. str.find, not a regular expression: compiling one per request cost more
    than the search (a request's substitution is new each time the user edits)."""
    old = sub.old
    if "\n" in old and "\r" in text:
        yield from (match.span() for match in _pattern(sub).finditer(text))
        return
    head, tail = _WORDY.match(old[0]) is not None, _WORDY.match(old[-1]) is not None
    version = _VERSION.match(old) is not None
    i = text.find(old)
    while i >= 0:
        end = i + len(old)
        if (head and i > 0 and _WORDY.match(text[i - 1]) and not (version and _tagged(text, i))) \
                or (tail and end < len(text) and _WORDY.match(text[end])) \
                or (sub.at_line_end and not _LINE_END.match(text, end)):
            i = text.find(old, i + 1)
            continue
        yield i, end
        i = text.find(old, end)


def _tagged(text: str, i: int) -> bool:
    """Whether the version at `i` is written as a tag, `v3.46.0` (a `v` that begins a word)."""
    return text[i - 1] == "v" and (i < 2 or _WORDY.match(text[i - 2]) is None)


class _Lexed:
    """The regions of one text, lexed on first use and once: a request whose old text stands nowhere never lexes."""

    def __init__(self, text: str, language: str) -> None:
        self.text, self.language = text, language
        self._regions: Regions | None = None

    def kind_at(self, offset: int) -> str:
        if self._regions is None:
            self._regions = regions(self.text, self.language)
        return self._regions.kind_at(offset)


def occurrences(sub: Substitution, text: str, language: str = "", lexed: _Lexed | None = None
                ) -> Iterator[tuple[int, int]]:
    """Spans (start, end) of `text` where `sub.old` stands in the same role as the edited one, in order."""
    lexed = lexed or _Lexed(text, language)
    # Where the new text contains the old one (`foo` → `self.foo`), an old text inside an already replaced new one is
    # not an occurrence, wherever in the new text it stands (`file` → `file changed file`, words appended after a
    # comment's last word, holds it at its end as well)
    inside = _positions(sub.old, sub.new)
    # An old text with two names or more recurs verbatim only by design: its region does not matter.
    anchored = len([t for t in _tokens(sub.old) if _is_name(t)]) >= 2 or bool(_VERSION.match(sub.old))
    # an annotation comment taken out of code (`/* @__PURE__ */ `) is a comment itself: it stands where the code
    # before it does
    annotation = _BLOCK_COMMENT.fullmatch(sub.old.strip()) is not None
    # A renamed code name is renamed in the comments that mention it too.
    # `query` → `copy(query)`: a call put around a name goes around its uses in code, never around a parameter
    # being declared, nor into a comment
    called = _called(sub.old, sub.new, KEYWORDS)
    # ... and put around a parameter being declared (`CTXT_Object *context` → `*Py_UNUSED(context)`, a C
    # definition's type before the name, or a `def`'s), it goes around the next declared parameter of that name
    declared = called and (_bracket_kind(sub.context[0] + sub.old + sub.context[1], len(sub.context[0])) == "parameters"
                           or _DECLARED.search(sub.context[0]) is not None)
    mentioned = sub.name and sub.region == CODE and _code_name(sub.old) and not called
    # ... and a module's name renamed (`dspy.LMResponse`) where a message or a comment writes it with its module
    qualified = _module_of(sub.context[0]) if sub.name and sub.attribute and sub.region == CODE and not called \
        else ""
    # ... and a Python class renamed in code where a string is that class's name alone (`bound='View'`, a forward
    # reference a type checker reads as code)
    referenced = language == "python" and sub.name and sub.region == CODE and sub.old[:1].isupper() \
        and _is_name(sub.new) and not called
    # ... and a name renamed in a comment where it stands as code (a JSDoc type, `{Lru<T>}`; `` `x` ``) in the code
    typed = _typed_mention(sub)
    # `typeof x` → `_typeof(x)`: a change that puts brackets around the old text's last name wrapped that operand
    # whole, so where the name goes on (`typeof x[key]`, `typeof x.y`) the operand is another and ends elsewhere
    # (a bracket only appended, `x.size` → `x.size()`, wraps nothing: `x.size.toFixed` becomes `x.size().toFixed`)
    # ... and so does one that keeps that name but puts text after it (`not text` → `text is None`): `not
    # text.endswith(x)` negates another operand
    wraps = _wraps_last_name(sub.old, sub.new) or _name_followed(sub.old, sub.new)
    # `"L"` → `IMAGING_MODE_L`: a whole quoted literal replaced by code was a string where the code now stands
    literal = _quoted(sub.old) and not _quoted(sub.new)
    # a name made a call (`sqlite3` → `_sqlite3()`): an expression now, which a Python annotation cannot hold (in
    # JavaScript a `key: value` is no type)
    calls = sub.name and sub.new.endswith(")") and "(" in sub.new
    # an attribute taken off the end of a path (`usage.tokens` → `usage`) where the path ends an operand (`)`, `;`),
    # not where it goes on (`invocation.protocol.clientCapabilities`) or is one side of an operator (`__.id &&`)
    trimmed = not sub.name and sub.old.startswith(sub.new + ".") and _is_name(sub.old[len(sub.new) + 1:])
    for start, end in _matches(sub, text):
        if sub.old[0] == "." and text[start - 1:start] == ".":
            continue  # `.bindings` (an attribute) is not the end of a spread or range, `...bindings`
        if wraps and text[end:end + 1] in (".", "[", "(") and text[end:end + 1] != sub.around[1]:
            continue  # ... unless the edited one went on the same way (`functable.adler32(` → `CALL(adler32)(`)
        if sub.wrapped and not _type_argument(text, start, end, sub):
            continue
        # a qualifier taken off: where it qualifies a name, not where it is itself qualified (`a.typing.`); a
        # sentence taken out after a full stop (`. SVG edits are not supported.`) is no qualifier
        if not sub.new and _QUALIFIER.fullmatch(sub.old) \
                and (text[start - 1:start] == "." or _NAME_START.match(text, end) is None):
            continue
        if any(text[start - at:start - at + len(sub.new)] == sub.new for at in inside if at <= start):
            continue
        if sub.name and not sub.both_roles \
                and (_attribute_at(text, start) or _method_at(text, start, end, language)) != sub.attribute:
            continue  # a method defined by its name alone (`  process(x) {`) is a property, as `this.process` is
        if sub.receiver and _receiver(text[max(0, start - 40):start]) != sub.receiver \
                and not _method_at(text, start, end, language):
            continue  # `self.data` renamed: `frame.data` is another class's (but the method it calls is its own)
        if trimmed and text[end:end + 1] not in ("", "\n", "\r", ")", "]", "}", ",", ";"):
            continue
        if sub.typed_only and not _type_position(text, start):
            continue
        if calls and language == "python" and _type_position(text, start):
            continue  # `sqlite3` → `_sqlite3()`: a call is no type (`db: sqlite3.Connection | None` stays)
        if sub.callee and _callee(text[max(0, start - PARAMETERS_REACH):start]) != sub.callee:
            continue  # `, timeoutContext)` comes off calls of the edited one's function only
        if sub.lead and not _lead_at(text, start) and not _type_position(text, start) \
                and not _subscript_argument(text, start, language) \
                and not _cast_at(text, start, language):
            # `x: List` and `-> List` are both type positions, and so are a union's member (`None | str | Literal`),
            # a Python generic's argument (`Union[str, List[str]]`) and a TypeScript cast's type (`) as Factory;`)
            continue
        if sub.old[0] in _OPENERS and _applied(text[start - 1:start]) != _applied(sub.around[0]):
            continue  # `(adapters) =>` (parameters) is not `isArray(adapters)` (a call)
        if declared:
            if _bracket_kind(text, start) != "parameters":
                continue
        elif (sub.call and not (sub.name and _is_name(sub.new)) or called) \
                and _bracket_kind(text, start) == "parameters":
            continue  # an argument or expression (`this.#controller`) changed in a call is none of a parameter list's
        if called and _ASSIGNED.match(text, end):
            continue  # `return output` → `return f(output)`: an assignment's target (`output += ...`) is no use
        if not anchored or annotation:
            kind = lexed.kind_at(start)
            if annotation or literal:  # a comment or a string itself: its region is the one it stands in
                kind = lexed.kind_at(start - 1) if start > 0 else CODE
            if literal and (lexed.kind_at(start) != STRING or not _same_slot(sub, text, start, end)):
                continue  # ... and in the same slot (`f("L",`), not wherever the value is used (`strcmp(m, "L")`)
            if kind != sub.region and not (kind == COMMENT and mentioned) and not (kind == CODE and typed) \
                    and not (qualified and _module_of(text[max(0, start - 80):start]) == qualified) \
                    and not (kind == STRING and referenced and _forward_reference(text, start, end)):
                continue
        yield start, end


def _same_slot(sub: Substitution, text: str, start: int, end: int) -> bool:
    """Whether the occurrence at [start, end) stands where the edited one stood: the same characters around it and
    the same call around it (`CHOP2(..., "1")`, not `strcmp(mode, "1")`)."""
    if (text[start - 1:start], text[end:end + 1]) != sub.around:
        return False
    line_start = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    return _callee(text[line_start:start]) == _callee(sub.context[0])


def _wraps_last_name(old: str, new: str) -> bool:
    """Whether `new` ends in brackets around the name (or dotted path) that ends `old`, brackets `old` did not have
    there."""
    tokens = _tokens(old)
    if not tokens or not _is_name(tokens[-1]):
        return False
    # the operand may be a dotted path ending in the name: `typeof a.b` → `_typeof(a.b)`
    operand = r"[(\[{<]\s*(?:[\w$]+\s*\.\s*)*" + re.escape(tokens[-1])
    wrapped = re.search(operand + r"\s*[)\]}>]\s*\Z", new)
    return wrapped is not None and not re.search(operand + r"\Z", old)


def _name_followed(old: str, new: str) -> bool:
    """Whether `new` holds the name that ends `old` with more text after it, other than text appended to `old`
    (`not text` → `text is None`; not `x.size` → `x.size()`)."""
    tokens, after = _tokens(old), _tokens(new)
    if not tokens or not _is_name(tokens[-1]) or new.startswith(old) or not after or after[-1] == tokens[-1]:
        return False
    return tokens[-1] in after


def _positions(part: str, whole: str) -> tuple[int, ...]:
    """Where `part` begins in `whole` (overlapping ones too), in order."""
    out, i = [], whole.find(part)
    while i >= 0:
        out.append(i)
        i = whole.find(part, i + 1)
    return tuple(out)


#: An assignment after a name (`x = `, `x += `, not `x == `): the name is its target.
_ASSIGNED = re.compile(r"[ \t]*(?:[-+*/%&|^@]|//|<<|>>|\*\*)?=(?!=)")

#: A name's module before it: `dspy.` (one name, not itself an attribute, not a receiver such as `self.`).
_MODULE = re.compile(r"(?<![\w$.])([^\W\d][\w$]*)\.\Z")


def _forward_reference(text: str, start: int, end: int) -> bool:
    """Whether [start, end) is a whole quoted string's text where a type goes (`bound='View'`, `: 'View'`,
    `Optional['View']`, `-> "View"`), not an item of a list of names (`"OptionParser",` in a deprecation table)."""
    quote = text[start - 1:start]
    if quote not in ("'", '"') or text[end:end + 1] != quote or text[start - 2:start - 1] == quote:
        return False
    return text[:start - 1].rstrip(" \t")[-1:] in (":", "[", "=", ">", "|", "(")


def _module_of(before: str) -> str:
    """The module that qualifies a name, from the text before it (`... dspy.` → `dspy`), or ""."""
    found = _MODULE.search(before)
    return found.group(1) if found is not None and found.group(1) not in _RECEIVERS else ""


def _code_name(word: str) -> bool:
    """A name no prose uses as a word (`PSUTIL_HAVE_X`, `maxRetries`, `item2`): where a comment holds it, the
    comment names the code."""
    return "_" in word.strip("_") or any(c.isdigit() for c in word) or any(
        x.islower() and y.isupper() for x, y in zip(word, word[1:]))


#: A doc comment's tag naming a class without braces (`@augments TempNode`, `@extends Base`, `@implements I`).
_CLASS_TAG = re.compile(r"@(?:augments|extends|implements)[ \t]+$")


def _class_tagged(before: str) -> bool:
    """Whether the text just before a name (its line, up to the name) is a doc tag naming a class: the name is the
    class's type, as the code's `extends` clause is, not a word of prose."""
    return _CLASS_TAG.search(before) is not None


def _typed_mention(sub: Substitution) -> bool:
    """Whether `sub` renames a name in a comment where the comment writes it as code: a JSDoc type (`{Lru<T>}`,
    `{Lru}`), a class named by a doc tag (`@augments TempNode`) or a code span (`` `Lru` ``, `` `Crypto.Crypto`
    ``)."""
    return sub.name and sub.region == COMMENT and (sub.around[0] in ("{", "`") and (
        sub.around[1] in ("}", "<", "`", "[") or sub.around == ("`", ".")) or _class_tagged(sub.context[0]))
