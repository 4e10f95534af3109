"""Narrow cases that `propagate()` tries outside the general rules, each on evidence of its own: the same built-in type
replaced twice (`_twice`), a version bumped whose old text stands nowhere ahead (`_bumped`), an argument appended to
a method call whose call stands nowhere ahead, made at another method of the same object (`_sibling`), a bare generic
given type arguments, given the same at its next bare use (`_parametrized`), a change in prose made again where its
phrase recurs in another region (`_same_phrase`), and lines rewritten in several spans, no substitution at all, that
recur verbatim (`same_lines`). Kept out of the general rules so that those read without the exceptions."""

from __future__ import annotations

import dataclasses
import difflib
import os
import re

from engine.next_edit.types import EditEvent, TextEdit

from ..lexical import CODE
from .last_edit import _LAST_WORDS, _UNFINISHED, Substitution
from .next_occurrence import MAX_RUN_LINES
from .roles import _type_position
from .same_role import _Lexed, _matches
from .tokens import COMMON_NAMES, KEYWORDS, LITERALS, _RECEIVERS, _balanced, _is_name, _tokens
from .widening import _CLOSERS


def _core(event: EditEvent) -> tuple[str, str] | None:
    """The one built-in type `event` replaced by one other name (`float` → `Number`), or None."""
    a, b = _tokens(event.old), _tokens(event.new)
    ops = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][2] - ops[0][1] != 1 or ops[0][4] - ops[0][3] != 1:
        return None
    old, new = a[ops[0][1]], b[ops[0][3]]
    if old not in COMMON_NAMES or old in LITERALS or not _is_name(new) or new in LITERALS:
        return None
    return old, new


def _twice(sub: Substitution, event: EditEvent, previous: EditEvent | None) -> Substitution | None:
    """A built-in type the user replaced by the same name in the edit before too (`blocking_timeout: Optional[float]`
    → `Number` after `timeout: Optional[float]` → `Number`): a change of that type wherever it stands as a type, no
    longer of one place; None when the two edits differ, or this one is no such change."""
    if previous is None or sub.name:
        return None
    core = _core(event)
    if core is None or core != _core(previous):
        return None
    return dataclasses.replace(sub, old=core[0], new=core[1], lead="", at_line_end=False, fallback=None,
                               typed_only=True, near=False, wrapped=False, call=False, around=("", ""))


_ANY_VERSION = re.compile(r"(?<![\w.])(\d+\.\d+\.)(\d+)(?![\w.])")


def _bumped(sub: Substitution, text: str, cursor: int) -> TextEdit | None:
    """A version bumped in its last number (`'2.13.0'` → `'2.13.1'`) whose old text stands nowhere ahead: the same
    bump of the next version after the cursor written between the same characters with the same last number
    (`'2.46.0'` → `'2.46.1'`, a pinned dependency released with it), else the same version written as a tuple of
    its numbers (`(9, 0, 1, 'final', 0)` after `'9.0.1'`, or `(major=0, minor=22, micro=2, ...)`), or None."""
    old, new = _ANY_VERSION.fullmatch(sub.old), _ANY_VERSION.fullmatch(sub.new)
    if old is None or new is None or old.group(1) != new.group(1) or old.group(2) == new.group(2):
        return None
    if _stands_ahead(sub, text, cursor):
        return None  # the version itself stands ahead (in a region or role the edit's rules refused)
    for found in _ANY_VERSION.finditer(text, cursor):
        start, end = found.span()
        if found.group(2) == old.group(2) and (text[start - 1:start], text[end:end + 1]) == sub.around:
            return TextEdit(found.start(2), end, new.group(2))
    numbers = sub.old.split(".")
    tupled = re.compile(r"(?<![\w.])\(\s*" + r"\s*,\s*".join(numbers[:-1]) + r"\s*,\s*(" + numbers[-1] + r")(?![\w.])")
    # ... or as a named tuple is built, every number named (`VersionInfo(major=0, minor=22, micro=2, ...)`)
    named = r"\s*,\s*[^\W\d]\w*\s*=\s*"
    keyworded = re.compile(r"(?<![\w.])[^\W\d][\w.]*\(\s*[^\W\d]\w*\s*=\s*" + named.join(numbers[:-1]) + named + "("
                           + numbers[-1] + r")(?![\w.])")
    written = [m for m in (tupled.search(text, cursor), keyworded.search(text, cursor)) if m is not None]
    if written:
        nearest = min(written, key=lambda m: m.start())
        return TextEdit(nearest.start(1), nearest.end(1), new.group(2))
    return None


_NAME_AT_END = re.compile(r"(?<![\w.])([^\W\d]\w*)\Z")
#: Typing's forms whose argument is the type of the one place they annotate (`result: Final[Wheel]`), not what a
#: generic holds throughout the module.
_PER_PLACE_FORMS = frozenset("Final ClassVar Annotated Literal Optional Union Required NotRequired ReadOnly".split())


def _type_arguments_added(sub: Substitution) -> tuple[str, str] | None:
    """For type arguments given to a bare generic in a type position (`app: App` → `app: App[_ReqT, _RespT]`,
    `IO | None` → `IO[bytes] | None`): the generic's name and the arguments added; else None."""
    head = len(os.path.commonprefix([sub.old, sub.new]))
    room = min(len(sub.old), len(sub.new)) - head
    tail = len(os.path.commonprefix([sub.old[::-1], sub.new[::-1]]))
    tail = min(tail, room)
    added = sub.new[head:len(sub.new) - tail]
    if len(sub.old) != head + tail or len(added) < 3 or added[0] not in _CLOSERS \
            or added[-1] != _CLOSERS[added[0]] or _balanced(added) != (0, 0, 0):
        return None
    name = _NAME_AT_END.search(sub.old, 0, head)
    before = sub.context[0] + sub.old[:head]
    if name is None or name.group(1) in _PER_PLACE_FORMS \
            or not _type_position(before, len(before) - len(name.group(1))):
        return None
    return name.group(1), added


def _parametrized(sub: Substitution, text: str, cursor: int, language: str) -> TextEdit | None:
    """Type arguments given to a bare generic in a type position (`def inspect_app(app: App)` → `App[_ReqT,
    _RespT]`) whose old text stands nowhere ahead (it holds the function's name): the same arguments for the next
    bare use of that generic in a type position in code (`def inspect_routes(app: App)`), or None. The arguments say
    what the generic holds throughout the module, as a rename says what a name is."""
    if sub.region != CODE:
        return None
    found = _type_arguments_added(sub)
    if found is None or _stands_ahead(sub, text, cursor):
        return None
    name, added = found
    lexed: _Lexed | None = None
    for use in re.compile(r"(?<![\w.])" + re.escape(name) + r"(?![\w\[<(.])").finditer(text, cursor):
        if not _type_position(text, use.start()):
            continue
        lexed = lexed or _Lexed(text, language)
        if lexed.kind_at(use.start()) == CODE:
            return TextEdit(use.end(), use.end(), added)
    return None


#: Words of the edited line taken on each side of a change in prose to make the phrase looked for (`_same_phrase`).
PHRASE_WORDS = 2
#: Names a phrase must hold (its words and the changed text's): fewer recur by accident.
MIN_PHRASE_NAMES = 4


def _words_taken(tokens: list[str]) -> int:
    """How many tokens from the start of `tokens` hold PHRASE_WORDS names (fewer where they run out), ending at one."""
    taken = names = 0
    while taken < len(tokens) and names < PHRASE_WORDS:
        names += _is_name(tokens[taken])
        taken += 1
    while taken and not _is_name(tokens[taken - 1]):
        taken -= 1
    return taken


def _phrase(sub: Substitution) -> tuple[str, int] | None:
    """The old text with up to PHRASE_WORDS words of its line on each side, beginning and ending at a word, and where
    the old text begins in it; None unless words stand on both sides and the phrase holds MIN_PHRASE_NAMES names."""
    before, after = _tokens(sub.context[0]), _tokens(sub.context[1])
    head = before[len(before) - _words_taken(before[::-1]):]
    tail = after[:_words_taken(after)]
    if not head or not tail or "\n" in "".join(head + tail) \
            or sum(map(_is_name, head + tail + _tokens(sub.old))) < MIN_PHRASE_NAMES:
        return None
    return "".join(head) + sub.old + "".join(tail), len("".join(head))


def _same_phrase(sub: Substitution, text: str, cursor: int, region: str | None) -> TextEdit | None:
    """A change in a comment or a string (`Copyright (C) 2005-2023 Mike Pall` → `2005-2025`) whose old text stands
    nowhere ahead in that role: the same change where the old text stands with the same words around it, in any
    region (the copyright line of a header comment is written again as a string: `#define LUAJIT_COPYRIGHT
    "Copyright (C) 2005-2023 Mike Pall"`). A phrase of several words recurs verbatim only by design."""
    if sub.name or (region or sub.region) == CODE or sum(map(_is_name, _tokens(sub.old))) >= 2:
        return None  # an old text of two names or more is its own anchor: the general rules judged its places
    found = _phrase(sub)
    if found is None:
        return None
    phrase, at = found
    i = text.find(phrase, cursor)
    while i >= 0:
        if (i == 0 or not text[i - 1].isalnum()) and not text[i + len(phrase):i + len(phrase) + 1].isalnum():
            return TextEdit(i + at, i + at + len(sub.old), sub.new)
        i = text.find(phrase, i + 1)
    return None


_METHOD_CALL = re.compile(r"([^\W\d]\w*)\(([^()]*)\)")
_RECEIVER_BEFORE = re.compile(r"(?<![\w.])((?:[^\W\d]\w*\.){2,})\Z")


def _stands_ahead(sub: Substitution, text: str, cursor: int) -> bool:
    """Whether the edit's old text stands verbatim after the cursor: then the literal rules had their chance there,
    and a special case must not propose something else in its place."""
    return any(start >= cursor for start, _ in _matches(sub, text))


def _appended_argument(sub: Substitution) -> tuple[re.Match[str], str] | None:
    """For an argument appended to a call of one function (`f(a)` → `f(a, b)`, arguments without brackets): the old
    call's match and the text appended (`, b`); else None."""
    old, new = _METHOD_CALL.fullmatch(sub.old), _METHOD_CALL.fullmatch(sub.new)
    if old is None or new is None or old.group(1) != new.group(1) or not old.group(2).strip():
        return None
    added = new.group(2)[len(old.group(2)):]
    if not new.group(2).startswith(old.group(2)) or not added.lstrip().startswith(","):
        return None
    return old, added


def _sibling(sub: Substitution, text: str, cursor: int) -> TextEdit | None:
    """An argument appended to a method call (`self.log.error(msg)` → `self.log.error(msg, *msg_args)`) whose call
    stands nowhere ahead: the same argument appended at the next call of another method of the same object with the
    same arguments (`self.log.info(msg)`: a logger's levels), or None. The object is a chain of two names at least
    (`self.log.`, `this.logger.`): after a bare `self.` any method of the class would do."""
    appended = _appended_argument(sub)
    receiver = _RECEIVER_BEFORE.search(sub.context[0])
    if appended is None or receiver is None or _stands_ahead(sub, text, cursor):
        return None
    old, added = appended
    call = re.compile(r"(?<![\w.])" + re.escape(receiver.group(1)) + r"([^\W\d]\w*)\(" + re.escape(old.group(2))
                      + r"\)")
    found = call.search(text, cursor)
    if found is None:
        return None
    return TextEdit(found.end() - 1, found.end() - 1, added)


_KEYWORD_ARGUMENT = re.compile(r"\s*,\s*([^\W\d]\w*)\s*=(?!=)")
_CALLEE_BEFORE = re.compile(r"(?<![\w.])((?:[^\W\d]\w*\.)*)\Z")


def _in_python_call(sub: Substitution, language: str) -> bool:
    """Whether `sub` changed a Python call's arguments: not a `def`'s or a `class`'s, where `depth=0` is a
    parameter's default, no argument of a call."""
    return language == "python" and re.search(r"(?<![\w.])(?:def|class)\s+\Z", sub.context[0]) is None


def _calls_reached_alike(sub: Substitution, name: str) -> re.Pattern[str]:
    """Calls of `name` reached the way the edited one was (`saferepr(`, `self.app.send(`, `dd.read_parquet(`), their
    arguments (without brackets) captured."""
    reach = _CALLEE_BEFORE.search(sub.context[0])
    prefix = reach.group(1) if reach is not None else ""
    return re.compile(r"(?<![\w.])" + re.escape(prefix + name) + r"\(([^()]*)\)")


def _keyword_added(sub: Substitution, text: str, cursor: int, language: str) -> TextEdit | None:
    """A keyword argument appended to a Python call (`saferepr(args, self.argsrepr_maxsize)` → `saferepr(args,
    self.argsrepr_maxsize, maxlevels=...)`) whose call stands nowhere ahead: the same keyword argument appended to
    the next call of the same function, reached the same way (`saferepr(`, `self.app.send(`), with as many arguments
    and without it yet (`saferepr(kwargs, self.kwargsrepr_maxsize)`), or None. A keyword argument names what it
    sets, so it says the same thing at every call of that function; a positional one is that place's value."""
    if not _in_python_call(sub, language):
        return None
    appended = _appended_argument(sub)
    if appended is None:
        return None
    old, added = appended
    keyword = _KEYWORD_ARGUMENT.match(added)
    if keyword is None or "," in added[keyword.end():] or _stands_ahead(sub, text, cursor):
        return None
    arity = old.group(2).count(",")
    lexed: _Lexed | None = None
    for found in _calls_reached_alike(sub, old.group(1)).finditer(text, cursor):
        args = found.group(1)
        if not args.strip() or args.count(",") != arity or re.search(r"\b" + keyword.group(1) + r"\s*=", args):
            continue
        lexed = lexed or _Lexed(text, language)
        if lexed.kind_at(found.start()) == CODE:
            return TextEdit(found.end() - 1, found.end() - 1, added)
    return None


def _arguments(listed: str) -> list[str]:
    """An argument list's text cut at its top-level commas, each part as written (spaces kept): commas inside
    brackets or quotes do not cut."""
    parts, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(listed):
        if quote:
            quote = "" if c == quote and listed[i - 1] != "\\" else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(listed[start:i])
            start = i + 1
    return parts + [listed[start:]]


def _keyword_removed(sub: Substitution, text: str, cursor: int, language: str) -> TextEdit | None:
    """A keyword argument taken out of a Python call (`read_parquet(tmpdir, engine="pyarrow", dtype_backend=x)` →
    `read_parquet(tmpdir, dtype_backend=x)`) whose call stands nowhere ahead: the same keyword argument, name and
    value, taken out of the next call of the same function, reached the same way (`dd.read_parquet(`), or None.
    The mirror of `_keyword_added`: the other arguments are that place's own."""
    if not _in_python_call(sub, language):
        return None
    old, new = _METHOD_CALL.fullmatch(sub.old), _METHOD_CALL.fullmatch(sub.new)
    if old is None or new is None or old.group(1) != new.group(1):
        return None
    before, after = _arguments(old.group(2)), _arguments(new.group(2))
    kept = [a.strip() for a in after]
    gone = [i for i in range(len(before)) if [a.strip() for a in before[:i] + before[i + 1:]] == kept]
    if len(before) != len(after) + 1 or not gone or _stands_ahead(sub, text, cursor):
        return None
    removed = before[gone[0]].strip()
    if _KEYWORD_ARGUMENT.match(", " + removed) is None:
        return None
    lexed: _Lexed | None = None
    for found in _calls_reached_alike(sub, old.group(1)).finditer(text, cursor):
        args = _arguments(found.group(1))
        at = [i for i, a in enumerate(args) if a.strip() == removed]
        if len(args) < 2 or not at:
            continue
        lexed = lexed or _Lexed(text, language)
        if lexed.kind_at(found.start()) != CODE:
            continue
        i = at[0]
        start = found.start(1) + sum(len(a) + 1 for a in args[:i])
        if i + 1 < len(args):  # `engine="pyarrow", ` with the space before the next argument
            end = start + len(args[i]) + 1 + (len(args[i + 1]) - len(args[i + 1].lstrip(" ")))
            start += len(args[i]) - len(args[i].lstrip(" "))
        else:  # the last argument: with the comma before it
            start, end = start - 1, start + len(args[i])
        return TextEdit(start, end, "")
    return None


_ARGUMENT_LIST = re.compile(r"([^\W\d][\w$]*)\s*\(([^()]*)\)")
#: Before a definition's name: `def `, `function `, `async function `.
_DEFINES = re.compile(r"(?<![\w.$])(?:def|function\s*\*?)\s+\Z")


def _passed_on(sub: Substitution, text: str, cursor: int, language: str) -> TextEdit | None:
    """A parameter appended to a definition (`function isBigInt(node, context)` → `isBigInt(node, context,
    overrides)`) whose list stands nowhere ahead as such: passed on where the old parameters, two names or more, are
    next the whole argument list of a call in code (`isBigIntTarget(node, context)`, the call the function wraps),
    or None. Only a definition's list: the same list in calls of other functions (`parsePropertyValue(property, v)`)
    is those calls' own business."""
    old, new = _ARGUMENT_LIST.fullmatch(sub.old), _ARGUMENT_LIST.fullmatch(sub.new)
    if old is None or new is None or old.group(1) != new.group(1) or _DEFINES.search(sub.context[0]) is None:
        return None
    before, after = [a.strip() for a in old.group(2).split(",")], [a.strip() for a in new.group(2).split(",")]
    if len(after) != len(before) + 1 or after[:-1] != before or not all(_is_name(a) for a in after) \
            or len(set(before)) < 2:
        return None
    if _stands_ahead(sub, text, cursor):
        return None
    lexed: _Lexed | None = None
    for found in re.finditer(r"([^\W\d][\w$]*)\s*\(" + re.escape(old.group(2)) + r"\)", text[cursor:]):
        start = cursor + found.start()
        if _DEFINES.search(text[text.rfind("\n", 0, start) + 1:start]):
            continue  # another definition with the same parameters, not a call
        lexed = lexed or _Lexed(text, language)
        if lexed.kind_at(start) == CODE:
            close = cursor + found.end() - 1
            return TextEdit(close, close, new.group(2)[len(old.group(2)):])
    return None


#: The fewest distinct names (keywords and `self` / `this` aside) of a single line rewritten where it recurs at another
#: indentation: a short line recurs in other blocks by chance.
MIN_DEEPER_NAMES = 4
#: The fewest names the old lines of a rewrite must hold for their verbatim copies to be rewritten the same way (a
#: `body,` or a `}` stands everywhere).
MIN_LINE_NAMES = 2


def _appended_clause(old: str, new: str) -> bool:
    """Whether `new` is the line `old` with a clause put at the end of its condition, before the block's `:` or `{`
    (`if x == "`":` → `if x == "`" and not y:`, `if (a) {` → `if (a && b) {`): a condition widened, which a
    substitution could not anchor."""
    head, tail = old.rstrip(), new.rstrip()
    for end in (") {", "){", "):", ":", "{"):
        if head.endswith(end) and tail.endswith(end) and tail.startswith(head[:-len(end)]):
            return tail[len(head) - len(end):-len(end)].startswith((" and ", " or ", " && ", " || "))
    return False


def same_lines(event: EditEvent, text: str, cursor: int) -> TextEdit | None:
    """The event's lines rewritten the same way where its old lines stand again, verbatim and at the same indentation
    (the same statement at the same depth), first after the cursor's line (`[CALL]: { deprecated: ["22.9.0"] },`
    spread over four lines, a call given one more argument on a line of its own): for a rewrite of several spans
    that is no substitution of tokens but whose lines recur whole. None when they recur nowhere ahead, hold fewer
    than MIN_LINE_NAMES names of two letters or more (`code += `}\\n`` holds one), change one span only (a
    substitution's rules repeat it or refuse it on purpose), or look still being typed."""
    old, new = event.old.splitlines(), event.new.splitlines()
    if not old or not new or len(old) > MAX_RUN_LINES or len(new) > MAX_RUN_LINES:
        return None
    bare = [line.strip() for line in old]
    if not bare[0] or not bare[-1] or bare == [line.strip() for line in new] \
            or sum(_is_name(t) and len(t) > 1 for t in _tokens(" ".join(bare))) < MIN_LINE_NAMES:
        return None
    a, b = _tokens(event.old), _tokens(event.new)
    if sum(op[0] != "equal" for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()) < 2 \
            and len(old) == len(new) and not (len(old) == 1 and _appended_clause(event.old, event.new)):
        return None  # one changed span is a substitution's to repeat or to refuse (`= LC_NUMERIC` → `= None`)
    last = event.new.rstrip()[-1:]
    sentence = last == "." and _LAST_WORDS.search(event.new.rstrip()) is not None  # `... counts as a preload.`
    # an argument added on a line of its own after the last one, both ending in `,` (`"...",` then `stacklevel=2,`):
    # a list with a trailing comma, complete
    trailing = last == "," and len(new) > len(old) and new[-2].rstrip().endswith(",") \
        and not any(_balanced(new[-1])) and bool(new[-1].strip(" \t,"))
    if (last in _UNFINISHED and not event.old.rstrip().endswith(last) and not sentence and not trailing) \
            or (_balanced(event.old) != _balanced(event.new) and any(_balanced(event.new))):
        return None  # still being typed
    indent = old[0][:len(old[0]) - len(old[0].lstrip())]
    newline = "\r\n" if "\r\n" in text else "\n"
    begin = text.find("\n", cursor)
    # the same lines at the same indentation (the same statement at the same depth); a single line also at another
    # depth, where it stands nowhere at the same (`/** @type {import("eslint").Rule.Node} */` one block deeper), when
    # it holds enough names of its own not to recur there by chance (`await self.on_connect()` does)
    own = {t for t in _tokens(bare[0]) if _is_name(t) and t not in KEYWORDS and t not in _RECEIVERS}
    for anywhere in (False, True) if len(old) == 1 and len(own) >= MIN_DEEPER_NAMES else (False,):
        at = text.find(bare[0], begin + 1) if begin >= 0 else -1
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            lines = text[start:].split("\n", len(old))[:len(old)]
            here = text[start:at]
            if (here == indent or (anywhere and not here.strip())) and [line.strip() for line in lines] == bare:
                body = newline.join(here + line[len(indent):] if line.startswith(indent) else line for line in new)
                end = start + sum(map(len, lines)) + len(lines) - 1
                if lines[-1].endswith("\r"):
                    end -= 1
                return TextEdit(start, end, body)
            at = text.find(bare[0], at + 1)
    return None
