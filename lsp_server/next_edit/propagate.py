"""Model-free next edits: repeat the user's last substitution at the next place where the old text still stands.

The commonest next edit is the same change again: a renamed identifier's other uses, a changed literal or argument
at the next call, a parameter added to the next call. When the last history event is such a substitution, the next
occurrence of its old text in the same role is the prediction: found in O(window), no model call, and right far more
often than a small model (docs/next-edit.md has the benchmark). Anything else (new code, several different changes,
a half-typed argument) is not a substitution, and this module proposes nothing, but for lines rewritten in several
spans that stand again verbatim at the same indentation: those are rewritten there the same way (`_same_lines`).

The event's lines are diffed token by token (identifiers, numbers, single punctuation, whitespace runs); every changed
span must be the same change. A change that is not a whole identifier on both sides (a literal, an inserted
argument, a deletion) is widened with its neighbouring tokens until its old side holds a name, so that `timeout=30`
→ `timeout=60` is looked for as `timeout=30`, never as any `30`. Occurrences must start and end at token boundaries,
lie in the same kind of region (code, string, comment: lexical.py) and, for names, be an attribute (after ".") exactly
when the edited one was.

Which occurrence: the next one after the cursor; only a rename in code goes back above it (not a one-letter name, nor
to a comment). In code, uses in code come before mentions in comments; in comments and strings, where the user picks
each mention, the one in the edited one's shape and with its neighbouring words comes first (docs/next-edit.md has
what each rule fixed on the benchmark, and what was tried and dropped)."""

from __future__ import annotations

import dataclasses
import difflib
import keyword
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

from engine.next_edit.types import EditEvent, TextEdit

from .lexical import CODE, COMMENT, STRING, Regions, regions

#: A difflib opcode: (tag, i1, i2, j1, j2).
Op = tuple[str, int, int, int, int]
_TOKEN = re.compile(r"[^\W\d]\w*|\d[\w.]*|\s+|[^\w\s]")
_NAME = re.compile(r"[^\W\d]\w*\Z")
_NAME_START = re.compile(r"[^\W\d]")
_WORDY = re.compile(r"\w")
_VERSION = re.compile(r"\d+\.\d+\.\d+\Z")
#: How many neighbouring tokens a change may be widened by to find a name to anchor it.
_WIDEN = 6
_QUOTES = frozenset("'\"`")
#: A change whose new side ends in one of these is still being typed (`f(a, ` → `f(a, b)`): not worth repeating.
_UNFINISHED = frozenset(",([{=.\\")
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"))
_OPENERS = frozenset(o for o, _ in _PAIRS)
#: An appended parameter as it is passed on: `, name`.
_PASSED = re.compile(r",\s*[^\W\d]\w*\Z")
#: The longest old or new text of a substitution (characters): longer changes are rewrites, not substitutions.
MAX_CHARS = 400
#: Occurrences this many lines after the first one (0: on its line) are part of the same edit.
ADJACENT_LINES = 1
#: A run of occurrences on consecutive lines is one edit up to this many lines (the most a hunk holds).
MAX_RUN_LINES = 8
#: Changed spans on at most this many line breaks may be taken together as one change (a call or signature rewritten
#: over five lines: found only where it recurs verbatim).
MAX_UNION_LINES = 4


@dataclass(frozen=True)
class Substitution:
    """`old` → `new`, to be repeated where `old` stands in the same role."""

    old: str
    new: str
    #: The old text is one identifier (a rename): occurrences must be whole words.
    name: bool
    #: A name used as an attribute (`x.old`): occurrences must be attributes too, and bare names must be bare.
    attribute: bool
    #: The kind of region the edit was in (lexical.CODE / STRING / COMMENT).
    region: str
    #: Text added at (or removed from) the end of a line: occurrences must end their line too.
    at_line_end: bool = False
    #: A name in a type position (after ":" or "->"): occurrences must be in one too.
    lead: str = ""
    #: Where `old` began in the hunk's new text (the caller may look up the region there in the whole document).
    offset: int = 0
    #: The characters just before and after the edited text (its shape in prose: `{Options}`, `` `x` ``).
    around: tuple[str, str] = ("", "")
    #: The rest of the edited one's line before and after it, as it was: what its role looks like.
    context: tuple[str, str] = ("", "")
    #: Line breaks between the hunk's first and last change (0: all on one line).
    spread: int = 0
    #: A narrower anchor of the same change, tried where `old` stands nowhere ahead of the cursor.
    fallback: "Substitution | None" = None
    #: A name wrapped in a generic (`T` → `Exclude<T, null>`): repeated only where the name is a type argument.
    wrapped: bool = False
    #: The object whose attribute was renamed when it is the code's own (`self`, `this`): other objects' attributes of
    #: that name are other classes'.
    receiver: str = ""
    #: The edited text stood, as far as the hunk shows, in a call's arguments (`f(a, b);`), not in a definition's
    #: parameters (`(a, b) => ...`).
    call: bool = False
    #: Found only in a type position (after `:`, `->`, `[`, `<`, `|`): a built-in type the user replaced twice.
    typed_only: bool = False
    #: Found only on the lines just below the cursor (a prefix put before an argument: the run of similar calls).
    near: bool = False
    #: The hunk renamed the name both bare and as an attribute (`Crypto.Crypto` → `Digest.Digest`): either role.
    both_roles: bool = False
    #: Found only in the brackets of a call of this function (or after this word): a call's argument removed or
    #: appended, anchored by the function and the argument rather than by the whole call.
    callee: str = ""


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _is_name(token: str) -> bool:
    return bool(_NAME.match(token))


#: Keywords of the common languages: replacing one is a change of code, never a rename to repeat (literals such as
#: `null` → `undefined` are substitutions like any other).
KEYWORDS = frozenset("""
    and as assert async await break case catch class const continue def default del delete do elif else enum
    except export extends final finally fn for from func function global go if impl import in instanceof
    interface is lambda let loop match mod mut new nonlocal not or package pass pub raise return static struct
    super switch throw try type typeof use var void where while with yield
""".split())

#: Python's own keywords (its literals aside): `type`, `match`, `case` are names there (soft keywords), so `Type` →
#: `type` (typing's alias replaced by the built-in) is a rename, though TypeScript reserves `type`.
PYTHON_KEYWORDS = frozenset(keyword.kwlist) - {"True", "False", "None"}


def _keywords(language: str) -> frozenset[str]:
    """The words a rename must not touch in `language`: Python's own list for Python, else the common languages'."""
    return PYTHON_KEYWORDS if language == "python" else KEYWORDS


#: Built-in types and literals of the common languages: used everywhere, so changing one at one place (`x: int` →
#: `x: float`, `return None` → `return self`) is a change of that place, not a rename of every `int` in the file. Such
#: a change is anchored by the name before it, like a changed number.
COMMON_NAMES = frozenset("""
    None True False NaN Infinity null undefined nil true false
    any unknown never void object string number boolean bigint symbol Object String Number Boolean Function Array
    Promise Error Map Set Date RegExp Symbol BigInt Record
    str int float bool bytes bytearray complex list dict tuple set frozenset type Any Optional Union Callable
    char short long double signed unsigned size_t ssize_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t
    uint64_t uintptr_t intptr_t Py_ssize_t PyObject
""".split())


#: The literals among them: a value, never a variable's name.
LITERALS = frozenset("None True False NaN Infinity null undefined nil true false".split())


def _skip_blanks_back(a: list[str], k: int) -> int:
    """The index of the last token at or before `k` that is not a blank on the same line (-1 when there is none, or
    `k` itself when it is a line break or code)."""
    while k >= 0 and a[k].isspace() and "\n" not in a[k]:
        k -= 1
    return k


def _typed(a: list[str], i: int) -> bool:
    """Whether token `i` follows a mark of a type expression on its line: `List[str`, `Map<string`, `{string`,
    `string|number`."""
    k = _skip_blanks_back(a, i - 1)
    return k >= 0 and a[k] in ("<", "[", "{", "|")


def _alone_on_line(a: list[str], i: int) -> bool:
    """Whether token `i` is the only word on its line (`      number,` in a type's parameters continued from the line
    above): nothing there says it is a variable, and a built-in standing so is a type (the line above, which would
    tell, is not in the edit)."""
    k = i - 1
    while k >= 0 and "\n" not in a[k]:
        if _WORDY.match(a[k]):
            return False
        k -= 1
    k = i + 1
    while k < len(a) and "\n" not in a[k]:
        if _WORDY.match(a[k]):
            return False
        k += 1
    return True


def _has_anchor(tokens: list[str], distinct: bool = False) -> bool:
    """Whether `tokens` hold a name (`distinct`: one that is not a built-in type or literal)."""
    return any(_is_name(t) and not (distinct and t in COMMON_NAMES) for t in tokens)


def _balanced(text: str) -> tuple[int, ...]:
    return tuple(text.count(a) - text.count(b) for a, b in _PAIRS)


def _enclosure(a: list[str], i1: int, i2: int) -> tuple[int, int] | None:
    """(left, right) widening that takes in the brackets around tokens [i1, i2) and the name before them, within
    the line: an argument added to `f(a, b)` is looked for as `f(a, b)`. None without enclosing brackets."""
    closers = {b: o for o, b in _PAIRS}
    openers = {o for o, _ in _PAIRS}
    depth, i = 0, i1 - 1
    while i >= 0 and "\n" not in a[i]:
        if a[i] in closers:
            depth += 1
        elif a[i] in openers:
            if depth == 0:
                break
            depth -= 1
        i -= 1
    else:
        return None
    opener = i
    if opener > 0 and _is_name(a[opener - 1]):
        opener -= 1
    depth, j = 0, i2
    while j < len(a) and "\n" not in a[j]:
        if a[j] in openers:
            depth += 1
        elif a[j] in closers:
            if depth == 0:
                return i1 - opener, j - i2 + 1
            depth -= 1
        j += 1
    return None


def _widening(a: list[str], b: list[str], op: Op, keywords: frozenset[str] = KEYWORDS
              ) -> tuple[int, int, bool] | None:
    """How many unchanged tokens left and right of the change make it a findable substitution, and whether it is
    anchored at the end of its line; None: it is not a substitution. `keywords`: the language's reserved words."""
    _, i1, i2, j1, j2 = op
    core_old, core_new = a[i1:i2], b[j1:j2]
    # `number` → `TimerHandle`, `None` → `self.message`: a built-in replaced by something of this place's own is a
    # change of this place, anchored by the name before it; so is a built-in type replaced by another (`number` →
    # `bigint` in one field's `Option<number>`); only one literal for another, `null` → `undefined`, is a change of
    # style, made everywhere like a rename
    distinct = len(core_old) == 1 and core_old[0] in COMMON_NAMES and not (
        len(core_new) == 1 and core_new[0] in LITERALS and core_old[0] in LITERALS)
    if len(core_old) == 1 and len(core_new) == 1 and _is_name(core_old[0]) and _is_name(core_new[0]):
        # ... but a keyword that is also a built-in type (`void`), where it stands as a type (`Fiber<void,`), is a
        # built-in type replaced at its place, anchored below like any other
        typed_keyword = core_old[0] in COMMON_NAMES and (bool(_lead(a, i1)) or _typed(a, i1))
        if core_old[0] in keywords and core_new[0] in keywords and not typed_keyword \
                and (i1 == 0 or not a[i1 - 1].strip() or "\n" in a[i1 - 1]):
            # `elif name ==` → `if name ==`: a statement's keyword replaced by another, anchored by the first name
            # after it on its line (a keyword alone stands everywhere)
            after = _named_after(a, i2, keywords)
            return (0, after, False) if after else None
        if (core_old[0] in keywords and not typed_keyword) or core_new[0] in keywords:
            return None  # `from` → `innerFrom` is no rename of `from`
        # ... but a variable that shadowed a built-in (`def f(type)` → `def f(kind)`) is renamed like any other:
        # only a built-in used as a type is changed at its place
        distinct = distinct and (core_old[0] in LITERALS or bool(_lead(a, i1)) or _typed(a, i1)
                                 or _alone_on_line(a, i1) or core_new[0] in COMMON_NAMES)
        # no built-in is renamed into a literal or another built-in (`= never` → `= false`, `set(x)` → `list(x)`):
        # it is a value or a call changed at this place
        # ... nor into `this` (`return res` → `return this`: the object returned, not every `res` renamed)
        valued = (core_new[0] in LITERALS or core_new[0] == "this") and core_old[0] not in LITERALS
        if valued and core_old[0] not in COMMON_NAMES:
            return _anchor_before(a, i1)  # `= LC_NUMERIC` → `= None`: the name is no variable renamed
        if not (distinct or valued):
            return 0, 0, False  # a rename
    if _quoted("".join(core_old)) and _has_anchor(core_new) and not _quoted("".join(core_new)):
        return 0, 0, False  # `"1"` → `IMAGING_MODE_1`: the literal anchors itself, in its slot (see `occurrences`)
    if len(core_old) == 1 and len(core_new) == 1 and _VERSION.match(core_old[0]) and _VERSION.match(core_new[0]):
        return 0, 0, False  # a version (`2.29.1` → `2.29.2`) stands for itself wherever it is
    if not core_old or not core_new:  # an insertion or a deletion
        if not core_old and "".join(core_new).endswith(".") and i2 < len(a) and _is_name(a[i2]):
            return 0, 1, False  # a qualifier put before a name: `foo` → `self.foo`
        if not core_new and _QUALIFIER.match("".join(core_old)) and (i1 == 0 or a[i1 - 1] != ".") \
                and j2 < len(b) and _is_name(b[j2]) and core_old[0] not in _RECEIVERS:
            # a module's qualifier taken off a name (`typing.cast` → `cast`, `import('./types.js').Plugin` →
            # `Plugin`): the module's names are imported now, so it comes off its other names too
            return 0, 0, False
        removed = "".join(core_old)
        if not core_new and removed.startswith(".") and i1 > 0 and _is_name(a[i1 - 1]) and "\n" not in removed \
                and not any(_balanced(removed)) and removed.rstrip().endswith(")") and _has_anchor(core_old):
            # a call taken off a name (`this.update.bind(this)` → `this.update`): anchored by that name, wherever
            # the name stands with it, not by the call around it (`on(...)`, then `off(...)`)
            return 1, 0, False
        last = i2 < len(a) and (a[i2] in (")", ",", "=") or (a[i2].isspace() and a[i2 + 1:i2 + 2] == ["="]))
        member = _annotated(a, i1) if not core_old and last and "".join(core_new).lstrip().startswith("|") else None
        if member is not None:
            # a union member appended to a parameter's type, last (`entropy: bytes` → `entropy: bytes | bytearray`):
            # anchored by the parameter and its type, wherever else it is declared so, not by the call around it
            # (a member put between others, `str | X | None`, stays anchored by the whole list)
            return member, 0, False
        enclosed = _enclosure(a, i1, i2)
        if enclosed is not None:
            return (*enclosed, False)
    if distinct and len(core_old) == 1:
        generic = _generic_argument(a, i1, i2)
        if generic is not None:  # `Record<string, Layer` → `Record<PropertyKey, Layer`
            return generic
    if core_old and core_new and not any(_WORDY.match(t) for t in core_old + core_new) \
            and i2 < len(a) and _is_name(a[i2]) and a[i2] not in keywords \
            and (i1 == 0 or not _WORDY.match(a[i1 - 1])) and not any(t in _QUOTES for t in core_old + core_new):
        # a sigil before a name replaced, after no name (`($commands.x)` → `(#commands.x)`): anchored by the name it
        # marks, not by the words before it (after a name, `a.b` → `a?.b`, the name before still anchors it)
        return 0, 1, False
    left = 0
    while not _has_anchor(a[i1 - left:i2], distinct):  # anchored by the name before it
        if left >= _WIDEN or i1 - left <= 0 or "\n" in a[i1 - left - 1]:
            # ... or, for a built-in type that begins a declaration (`int size;` → `unsigned long long size;`),
            # by the name it declares
            declared = _declared(a, i2) if distinct and len(core_old) == 1 and core_old[0] not in LITERALS \
                and not _has_anchor(a[i1 - left:i1]) else None
            return (0, declared, False) if declared else None
        left += 1
    right = 0
    if not core_old or not core_new or not any(_WORDY.match(t) for t in core_old + core_new):
        # an insertion, a deletion or an operator: the name after it too, or else the end of the line
        while right < _WIDEN and i2 + right < len(a) and "\n" not in a[i2 + right] \
                and not _has_anchor(a[i2:i2 + right]):
            right += 1
        if not _has_anchor(a[i2:i2 + right]):
            tail = a[i2:]
            at_end = not tail or "\n" in "".join(tail[:right + 1]) or not "".join(tail).strip()
            if not core_old or not core_new:  # anchored by the punctuation left before the end: `self)` → `self):`
                return (left, right, True) if at_end else None
            return left, right, False
        anchors = [t for t in a[i1 - left:i2 + right] if _is_name(t)]
        if (not core_old or not core_new) and any(t in keywords for t in anchors) \
                and all(t in keywords or t in COMMON_NAMES for t in anchors):
            # `const uint8_t` → `const BROTLI_MODEL("small") uint8_t`, `async def` → `def`: a keyword with nothing but
            # a built-in type beside it stands everywhere, so it anchors nothing (`str | None` still anchors itself)
            return None
    return left, right, False


def _generic_argument(a: list[str], i1: int, i2: int) -> tuple[int, int, bool] | None:
    """The widening that anchors a built-in type argument of a built-in generic (`string` in `Record<string,
    Layer<A>>`, where no name of the place's own is near) by the generic's name and the first name after it on the
    line; None when it is no such argument."""
    k = _skip_blanks_back(a, i1 - 1)
    if k < 1 or a[k] not in ("<", "[") or a[k - 1] not in COMMON_NAMES:
        return None
    for right in range(1, _WIDEN + 1):
        j = i2 + right - 1
        if j >= len(a) or "\n" in a[j]:
            return None
        if _is_name(a[j]):
            return i1 - (k - 1), right, False
    return None


def _named_after(a: list[str], i: int, keywords: frozenset[str]) -> int | None:
    """How many tokens from `i` on reach the first name on the line that is no keyword (`name` after `elif `), or
    None."""
    for right in range(1, _WIDEN + 1):
        j = i + right - 1
        if j >= len(a) or "\n" in a[j]:
            return None
        if _is_name(a[j]) and a[j] not in keywords:
            return right
    return None


def _declared(a: list[str], i: int) -> int | None:
    """How many tokens from `i` on reach the name a declaration's type declares (`size` in `int size;`, `*name`),
    when only blanks and `*` come before it on the line; None otherwise."""
    for right in range(1, _WIDEN + 1):
        j = i + right - 1
        if j >= len(a) or "\n" in a[j]:
            return None
        if _is_name(a[j]):
            return right if a[j] not in KEYWORDS and a[j] not in COMMON_NAMES else None
        if not (a[j].isspace() or a[j] == "*"):
            return None
    return None


def _annotated(a: list[str], i: int) -> int | None:
    """How many tokens before `i` reach the name whose annotation ends there (`entropy` in `entropy: bytes`, one
    name as its type), or None."""
    k = i - 1
    if k < 0 or not _is_name(a[k]):
        return None
    k = _skip_blanks_back(a, k - 1)
    if k < 1 or a[k] != ":" or a[k - 1] == ":":
        return None
    k = _skip_blanks_back(a, k - 1)
    return i - k if k >= 0 and _is_name(a[k]) and a[k] not in KEYWORDS else None


def _anchor_before(a: list[str], i: int) -> tuple[int, int, bool] | None:
    """The widening that anchors token `i` by the nearest distinct name before it on its line, or None."""
    for left in range(1, _WIDEN + 1):
        if i - left < 0 or "\n" in a[i - left]:
            return None
        if _has_anchor(a[i - left:i], True):
            return left, 0, False
    return None


def _lead(a: list[str], i: int) -> str:
    """The type-position marker (":" or "->") just before token `i`, or ""."""
    k = _skip_blanks_back(a, i - 1)
    if k >= 0 and a[k] == ":":
        return ":"
    if k >= 1 and a[k] == ">" and a[k - 1] == "-":
        return "->"
    return ""


def _spans(a: list[str], b: list[str], ops: list[Op], left: int, right: int
           ) -> set[tuple[str, str]] | None:
    out = set()
    for _, k1, k2, l1, l2 in ops:
        if k1 - left < 0 or l1 - left < 0 or k2 + right > len(a) or l2 + right > len(b):
            return None
        out.add(("".join(a[k1 - left:k2 + right]), "".join(b[l1 - left:l2 + right])))
    return out


def _closed(a: list[str], b: list[str], op: Op) -> Op:
    """`op` widened to the right, within its line, until both sides close the brackets they open: `type[` →
    `cabc.Callable[[V], ` is the change of `type[T]` into `cabc.Callable[[V], T]`. Unchanged when they never do."""
    tag, i1, i2, j1, j2 = op
    for k in range(_WIDEN + 1):
        if i2 + k > len(a) or "\n" in "".join(a[i2:i2 + k]):
            break
        old, new = "".join(a[i1:i2 + k]), "".join(b[j1:j2 + k])
        if not any(_balanced(old)) and not any(_balanced(new)):
            return tag, i1, i2 + k, j1, j2 + k
    return op


def _receiver_call(a: list[str], op: Op) -> Op:
    """`op` widened to the left over the method call or attribute it is applied to (`toISOString().` before
    `slice(0, 10)`), so that a method call rewritten is anchored by what it is called on; unchanged when the change
    follows no `.`."""
    tag, i1, i2, j1, j2 = op
    k = i1
    if k < 2 or a[k - 1] != ".":
        return op
    k -= 2
    if a[k] == ")" and k >= 2 and a[k - 1] == "(":
        k -= 2
    if not _is_name(a[k]) or a[k] in KEYWORDS or a[k] in _RECEIVERS:
        return op  # `self.` anchors nothing: every method is called on it
    return tag, k, i2, j1 - (i1 - k), j2


def _named(a: list[str], b: list[str], op: Op) -> Op:
    """`op` widened to the right, within its line, to the first name after it when it begins with a built-in type and
    holds no other name: a type changed in a declaration is anchored by the declared name (`char *mode` → `ModeID
    mode`, not every `char *`). Unchanged when no name follows on the line."""
    tag, i1, i2, j1, j2 = op
    if not (i1 < i2 and a[i1] in COMMON_NAMES and a[i1] not in LITERALS) or sum(map(_is_name, a[i1:i2])) >= 2:
        return op
    for k in range(_WIDEN):
        if i2 + k >= len(a) or "\n" in a[i2 + k]:
            break
        if _is_name(a[i2 + k]):
            return tag, i1, i2 + k + 1, j1, j2 + k + 1
    return op


#: A module's qualifier before a name: `typing.`, `os.path.`, `import('./types.js').`.
_QUALIFIER = re.compile(r"(?:[^\W\d][\w$]*\s*!?\s*\.\s*)+\Z|import\(\s*(['\"])[^'\"\n]+\1\s*\)\s*\.\Z")
#: Receivers, not modules: `self.x` → `x` turns an attribute into a local of this place only.
_RECEIVERS = frozenset("self this cls super".split())
_GENERIC = re.compile(r"[^\W\d][\w.$]*\s*[<\[]")


def _wrapping(a: list[str], b: list[str], op: Op) -> bool:
    """Whether `op` wraps one name in a generic (`T` → `Exclude<T, null>`, `Foo` → `Array<Foo>`), within its line."""
    _, i1, i2, j1, j2 = op
    old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
    return (i2 - i1 == 1 and _is_name(old) and "\n" not in new and _GENERIC.match(new) is not None
            and old in _tokens(new) and new.rstrip()[-1:] in (">", "]") and not any(_balanced(new)))


#: A call around one argument: `parseFloat(`, `PREFIX(`, `Number.parseInt(`.
_CALL_AROUND = re.compile(r"([^\W\d][\w$]*(?:\.[^\W\d][\w$]*)*)\(\s*([^\W\d][\w$]*)\s*\)\Z")


def _called(old: str, new: str, keywords: frozenset[str]) -> bool:
    """Whether `new` is the one name `old` wrapped in a call (`version` → `parseFloat(version)`, `gz_error` →
    `PREFIX(gz_error)`): the name stays, so it anchors itself like a rename, and its next use is where the call goes."""
    found = _CALL_AROUND.match(new)
    return found is not None and found.group(2) == old and _is_name(old) and old not in keywords \
        and found.group(1) not in keywords


#: Keywords that declare the name before a `<`: its type parameters (`type X<T>`) are no type arguments.
_DECLARES = re.compile(r"\b(?:type|interface|class|function|def)\s+[\w$]+\s*\Z")


def _type_argument(text: str, start: int, end: int, sub: Substitution) -> bool:
    """Whether the name at [start, end) is a type argument as the wrapped one was: after the same opening character
    (`IsRecord<T, false>` like `IsValues<T>`), closed or followed by the next argument, and not a declaration's type
    parameter (`type IsRecord<T, U>`)."""
    if text[start - 1:start] != sub.around[0] or text[end:end + 1] not in (">", "]", "}", ",", "|"):
        return False
    opener = start - 1
    return not (sub.around[0] in "<[" and _DECLARES.search(text, max(0, opener - 80), opener))


#: The fewest characters (blanks aside) of a changed span in a string with fewer than two names that is looked for
#: where it recurs: a regular expression's `(?:.|\n)` is no accident, a `, ` is.
MIN_PATTERN_CHARS = 6


def _in_string(text: str, offset: int, language: str) -> bool:
    return bool(language) and regions(text, language).kind_at(offset) == STRING


def _over_lines(a: list[str], b: list[str], op: Op) -> bool:
    """Whether the changed span `op` holds a line break on either side."""
    _, i1, i2, j1, j2 = op
    return any("\n" in t for t in a[i1:i2] + b[j1:j2])


@lru_cache(maxsize=64)
def substitution(old: str, new: str, language: str = "") -> Substitution | None:
    """The substitution that turns the hunk `old` into `new`, or None when the change is not one.

    Either every changed span is the same change (a rename made twice in the hunk), or the spans together are one
    change (`text_input.readline()` → `next(text_input)`, two annotations rewritten on two lines) whose old text
    holds at least two names, so that finding it again is no accident."""
    a, b = _tokens(old), _tokens(new)
    if len(a) > 4000 or len(b) > 4000:  # a rewrite of a whole region: not a substitution
        return None
    ops: list[Op] = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
                     if op[0] != "equal"]
    if not ops:
        return None
    keywords = _keywords(language)
    found = _one_change(a, b, ops, keywords=keywords, language=language)
    if found is None and len(ops) > 1:
        # `inc(r, id)` and `this.inc('pre', id)` both got `, base`
        found = _one_change(a, b, ops, repeated=True, keywords=keywords, language=language)
    if found is None and (len(ops) > 1 or _over_lines(a, b, ops[0])):
        # several spans, or one over lines (`Py_INCREF(Py_None);\n    return Py_None` → `Py_RETURN_NONE`): one change
        union: Op = _named(a, b, _closed(a, b, ("replace", ops[0][1], ops[-1][2], ops[0][3], ops[-1][4])))
        if sum(map(_is_name, a[union[1]:union[2]])) == 1:
            union = _receiver_call(a, union)  # `.slice(0, 10)` → `.split("T")[0]` after `toISOString()`
        joined = "".join(a[union[1]:union[2]])
        if _requoted(joined, "".join(b[union[3]:union[4]])):
            # `"eslint"` → `'eslint'`: a literal's quotes changed, the literal itself is the change, found as it was
            found = (joined, "".join(b[union[3]:union[4]]), union, 0, False)
        elif joined.count("\n") <= MAX_UNION_LINES and (sum(map(_is_name, a[union[1]:union[2]])) >= 2 or (
                len("".join(joined.split())) >= MIN_PATTERN_CHARS
                and _in_string(new, sum(map(len, b[:union[3]])), language)
                and _in_string(old, sum(map(len, a[:union[1]])), language))):
            # ... or, in a string, a pattern long enough to be found by itself (`(?:.|\n)` → `[\s\S]` in a regex)
            found = _one_change(a, b, [union], lines=True, keywords=keywords, language=language)
        elif _wrapping(a, b, union):
            found = (joined, "".join(b[union[3]:union[4]]), union, 0, False)
            return dataclasses.replace(_made(found, a, b, ops, old, new, language), name=False, wrapped=True)
        elif _called(joined, "".join(b[union[3]:union[4]]), keywords):
            # `version` → `parseFloat(version)`, `gz_error` → `PREFIX(gz_error)`: the name's next use gets the call
            found = (joined, "".join(b[union[3]:union[4]]), union, 0, False)
    if found is None:
        return None
    sub = _made(found, a, b, ops, old, new, language)
    if sub.name and len(ops) > 1 and len({_ends_in_dot("".join(a[:op[1]]).rstrip(" \t")) for op in ops}) > 1:
        # `Crypto.Crypto` → `Digest.Digest` (a module and its service of one name): renamed bare and as an attribute
        sub = dataclasses.replace(sub, attribute=False, receiver="", both_roles=True)
    if len(ops) == 1 and not sub.name and _between_name_and_closer(a, ops[0]) is not None \
            and sub.old[:1] in _OPENERS and not _applied(sub.around[0]) \
            and _PASSED.match("".join(b[ops[0][3]:ops[0][4]])):
        # a parameter appended to a parameter list (`inc (release, identifier)` → `..., identifierBase)`) is then
        # passed on where the same last argument is (`this.inc('pre', identifier)`): when the whole list stands
        # nowhere ahead, the last argument and the closing bracket anchor it
        narrow = _one_change(a, b, ops, repeated=True, keywords=keywords, language=language)
        if narrow is not None and narrow[0] != sub.old:
            sub = dataclasses.replace(sub, fallback=_made(narrow, a, b, ops, old, new, language))
    if len(ops) == 1 and sub.fallback is None and not sub.name:
        prefixed = _prefixed_argument(a, b, ops[0])
        if prefixed is not None:
            sub = dataclasses.replace(sub, fallback=dataclasses.replace(
                sub, old=prefixed[0], new=prefixed[1], name=False, attribute=False, lead="", at_line_end=False,
                fallback=None, near=True, call=True, around=(prefixed[2], sub.around[1])))
    if len(ops) == 1 and not sub.name:
        sub = _last_argument(sub, a, b, ops[0], old, new, keywords, language)
    if len(ops) == 1 and sub.fallback is None and language in _METHOD_LANGUAGES:
        compared = _compared(a, b, ops[0])
        if compared is not None:
            sub = dataclasses.replace(sub, fallback=dataclasses.replace(
                sub, old=compared[0], new=compared[1], name=False, attribute=False, lead="", receiver="",
                at_line_end=False, call=False, fallback=None, both_roles=False, around=("", ""),
                context=("", "")))
    return sub


def _compared(a: list[str], b: list[str], op: Op) -> tuple[str, str] | None:
    """For a property's value replaced in an object literal (`constructor: UNDEFINED` → `constructor: VNODE_MARKER`,
    JavaScript and TypeScript), the property compared with that value (`constructor === UNDEFINED` →
    `constructor === VNODE_MARKER`): where no other value of the same property stands ahead, its check is the next
    edit; else None."""
    _, i1, i2, j1, j2 = op
    if i2 - i1 != 1 or j2 - j1 != 1 or not _is_name(a[i1]) or not _is_name(b[j1]):
        return None
    k = _skip_blanks_back(a, i1 - 1)
    if k < 1 or a[k] != ":" or not _is_name(a[k - 1]):
        return None
    before = _skip_blanks_back(a, k - 2)
    if before >= 0 and a[before] not in ("{", ",") and "\n" not in a[before]:
        return None  # `cond ? x : UNDEFINED` is no property's value
    return f"{a[k - 1]} === {a[i1]}", f"{a[k - 1]} === {b[j1]}"


#: A call's last argument as it is removed: `, timeoutContext` (a comma, then an expression that holds a name).
_LAST_ARGUMENT = re.compile(r",\s*[^\W\d][\w$.]*\s*\Z")


#: A function's name after a type (`PyObject *wrap(`, `static int f(`): a C declaration, not a call.
_TYPED_CALLEE = re.compile(r"([^\W\d]\w*)[ \t*]+[^\W\d]\w*\Z")


def _last_argument(sub: Substitution, a: list[str], b: list[str], op: Op, old: str, new: str,
                   keywords: frozenset[str], language: str) -> Substitution:
    """`sub` anchored by the call's function and the argument, when it removes a call's last argument
    (`executeOperation(this.client, operation, timeoutContext)` → `executeOperation(this.client, operation)`: the
    argument comes off the next call of `executeOperation` that ends in it, whatever its other arguments), or appends
    text after a name just before an object's closing brace and the whole braces stand nowhere ahead (a fallback:
    `return {formatted: null, printMessage}`, then `return {..., printMessage}` gets `: shouldPrintMessage` too);
    else `sub`."""
    tag, i1, i2, j1, j2 = op
    if i2 >= len(a) or a[i2] not in ")]}" or sub.old[-1:] not in ")]}" or sub.fallback is not None:
        return sub
    start = sum(map(len, a[:i1]))
    line = old[max(0, old.rfind("\n", 0, start) + 1):start]
    callee = _callee(line)
    if not callee or callee in keywords and callee != "return":
        return sub
    typed = _TYPED_CALLEE.search(line[:line.rfind(callee + "(") + len(callee)] if callee + "(" in line else "")
    if typed is not None and typed.group(1) not in KEYWORDS:
        return sub  # `PyObject *wrap_diff_delta(const git_diff_delta *delta);`: a C prototype's parameters
    whole = old[old.rfind("\n", 0, start) + 1:].split("\n", 1)[0].strip()
    if language == "c" and whole.startswith(callee + "(") and whole.endswith((")", "{")):
        return sub  # `wrap_diff_delta(const git_diff_delta *delta)` after its type's line: a C definition
    if tag == "delete" and _LAST_ARGUMENT.match("".join(a[i1:i2])) and _has_anchor(a[i1:i2], True):
        removed = "".join(a[i1:i2 + 1])
        line_end = old.find("\n", start)
        return dataclasses.replace(
            sub, old=removed, new=a[i2], callee=callee,
            around=(old[start - 1:start], old[start + len(removed):][:1]),
            context=(old[old.rfind("\n", 0, start) + 1:start],
                     old[start + len(removed):line_end if line_end >= 0 else len(old)]))
    if tag == "insert" and a[i2] == "}" and _between_name_and_closer(a, op) is not None and a[i1 - 1] not in keywords \
            and a[i1 - 1] not in COMMON_NAMES and _bracket_kind(new, sum(map(len, b[:j1]))) != "parameters":
        # (an object literal's or a destructuring's braces: an argument appended to a call, made once, stays
        # anchored by the whole call; a parameter appended to a definition is passed on by its own rule, above, or
        # not at all: `depth=0` is a default, not an argument of the calls)
        narrow = _one_change(a, b, [op], repeated=True, keywords=keywords, language=language)
        if narrow is not None and narrow[0] != sub.old:
            return dataclasses.replace(sub, fallback=dataclasses.replace(
                _made(narrow, a, b, [op], old, new, language), callee=callee))
    return sub


#: A prefix put before an argument: a cast (`(PyUnicodeObject *) `) or an address or dereference (`&`, `*`).
_PREFIX = re.compile(r"\([\w\s*]+\)\s*|[&*]+\Z")


def _prefixed_argument(a: list[str], b: list[str], op: Op) -> tuple[str, str, str] | None:
    """(old, new) of a prefix inserted before a name that opens or follows a call's argument (`f(s)` →
    `f((PyUnicodeObject*) s)`): the argument and the bracket or comma before it (`(s` → `((PyUnicodeObject*) s`), for
    the similar calls just below when the whole call stands nowhere ahead (`escape_unicode_kind2(s)`), and the
    character before it; else None."""
    tag, i1, i2, j1, j2 = op
    if tag != "insert" or i2 >= len(a) or not _is_name(a[i2]) or a[i2] in KEYWORDS:
        return None
    inserted = "".join(b[j1:j2])
    if not _PREFIX.fullmatch(inserted.strip()) and not _PREFIX.fullmatch(inserted):
        return None
    k = _skip_blanks_back(a, i1 - 1)
    if k < 0 or a[k] not in ("(", ","):
        return None
    return "".join(a[k:i2 + 1]), "".join(a[k:i1]) + inserted + a[i2], "".join(a[:k])[-1:]


def _made(found: tuple[str, str, Op, int, bool], a: list[str], b: list[str], ops: list[Op], old: str, new: str,
          language: str) -> Substitution:
    old_text, new_text, op, left, at_end = found
    _, i1, _, j1, _ = op
    start = sum(len(t) for t in b[:j1 - left])
    before = "".join(a[:i1 - left]).rstrip(" \t")
    region = regions(new, language).kind_at(start) if language else CODE
    name = _is_name(old_text)
    after = "".join(b[j1 - left:])[len(new_text):][:1]
    old_start = sum(len(t) for t in a[:i1 - left])
    line_start = old.rfind("\n", 0, old_start) + 1
    line_end = old.find("\n", old_start + len(old_text))
    context = (old[line_start:old_start], old[old_start + len(old_text):line_end if line_end >= 0 else len(old)])
    receiver = _receiver(before) if name and _ends_in_dot(before) else ""
    attribute = _ends_in_dot(before) or (name and _method_at(new, start, start + len(new_text), language))
    # a name that qualifies another (`dist: importlib_metadata.Distribution`) is a module, not the type: its other
    # uses are anywhere (`importlib_metadata.distributions()`); a one-letter alias (`t.Mapping`) belongs to its place
    lead = _lead(a, i1 - left) if name and (after != "." or len(old_text) == 1) else ""
    return Substitution(old_text, new_text, name=name, attribute=attribute, region=region,
                        receiver=receiver if receiver in _RECEIVERS else "", at_line_end=at_end, lead=lead,
                        offset=start,
                        around=(new[start - 1:start], after), context=context,
                        spread="".join(b[ops[0][3]:ops[-1][4]]).count("\n"), call=_bracket_kind(new, start) == "call")


_LAST_WORDS = re.compile(r"([^\W\d]\w*)[ \t]+([^\W\d]\w*)\.\Z")


def _sentence(text: str, b: list[str], j: int, keywords: frozenset[str], language: str) -> bool:
    """Whether `text` (new text ending in ".", token `j` of the hunk's new tokens `b`) ends a sentence: it is in a
    comment or a string, or, where the hunk alone cannot tell (a docstring's inner line), it ends in two words with
    only a blank between them, neither a keyword (`numeric locale.`; code has `return self.`, never `a b.`)."""
    if language and regions("".join(b), language).kind_at(sum(map(len, b[:j]))) != CODE:
        return True
    words = _LAST_WORDS.search(text)
    return words is not None and not {words.group(1), words.group(2)} & keywords


def _between_name_and_closer(a: list[str], op: Op) -> tuple[int, int, bool] | None:
    """(1, 1, False) for text inserted between a name and a closing bracket (`f(a, x)` → `f(a, x, y)`: `x)` →
    `x, y)`), else None."""
    _, i1, i2, _, _ = op
    if i1 == i2 and i1 > 0 and _is_name(a[i1 - 1]) and i2 < len(a) and a[i2] in ")]}":
        return 1, 1, False
    return None


def _one_change(a: list[str], b: list[str], ops: list[Op], lines: bool = False, repeated: bool = False,
                keywords: frozenset[str] = KEYWORDS, language: str = "") -> tuple[str, str, Op, int, bool] | None:
    """`repeated`: the hunk made the change at several places, so an argument appended after the same name is
    anchored by that name and the closing bracket alone, not by each call's whole bracket. `language`: for the kind
    of region the change is in."""
    widening = (_between_name_and_closer(a, ops[0]) if repeated else None) or _widening(a, b, ops[0], keywords)
    if widening is None:
        return None
    left, right, at_end = widening
    _, i1, i2, j1, j2 = ops[0]
    # A changed word inside quotes is the quoted literal: "debug" → "info", not every `debug` in a string.
    # ... but a version stands for itself, quoted or not (`'3.46.0'`, then `blob/v3.46.0/LICENSE`)
    version = i2 - i1 == 1 and left == right == 0 and _VERSION.match(a[i1]) is not None
    if i1 - left > 0 and i2 + right < len(a) and a[i1 - left - 1] in _QUOTES and a[i2 + right] == a[i1 - left - 1] \
            and not version:
        left += 1
        right += 1
    spans = _spans(a, b, ops, left, right)
    if spans is None or len(spans) != 1:
        return None  # several different changes: not one substitution
    old_text, new_text = spans.pop()
    if not old_text.strip() or old_text.strip() == new_text.strip():
        return None  # a whitespace change
    if old_text.strip() in keywords:
        return None  # `raise` → `values = [value]`: a keyword alone says nothing of where it stands for the same
    if not lines and ("\n" in old_text or "\n" in new_text):
        return None
    if len(old_text) > MAX_CHARS or len(new_text) > MAX_CHARS:
        return None
    stripped = new_text.rstrip()
    if stripped and stripped[-1] in _UNFINISHED and not old_text.rstrip().endswith(stripped[-1]) \
            and not (stripped[-1] == "." and _sentence(stripped, b, j1 - left, keywords, language)):
        return None  # ... but a final "." that ends a sentence is no attribute being typed
    if _balanced(old_text) != _balanced(new_text) and any(_balanced(new_text)):
        return None  # an unclosed bracket: still being typed (a block opener removed, `) {` → `)`, is no typing)
    return old_text, new_text, ops[0], left, at_end


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


def _applied(before: str) -> bool:
    """Whether a bracket after the character `before` applies something (a call or an index: `f(`, `x[`, `g()(`)
    rather than opening a group, a literal or a parameter list (`= (`, `: [`)."""
    return bool(before) and (_WORDY.match(before) is not None or before in ")]")


def _line_breaks(text: str, start: int, end: int) -> int:
    between = text[start:end]
    return between.count("\n") + between.count("\r") - between.count("\r\n")


def _lead_at(text: str, start: int) -> str:
    before = text[max(0, start - 40):start].rstrip(" \t")
    return "->" if before.endswith("->") else ":" if before.endswith(":") else ""


_RECEIVER = re.compile(r"(?<![\w$.])([^\W\d][\w$]*)\s*\??\.\s*\Z")


def _receiver(before: str) -> str:
    """The plain name before the dot that ends `before` (`self.` → `self`; `a.b.` → ""), or ""."""
    found = _RECEIVER.search(before)
    return found.group(1) if found else ""


#: Languages whose classes and object literals define methods by name alone: `  process(schema) {`.
_METHOD_LANGUAGES = frozenset("javascript javascriptreact typescript typescriptreact".split())
_MODIFIERS = r"(?:static|async|get|set|public|private|protected|readonly|override)"
_METHOD_HEAD = re.compile(r"(?:^|\n)[ \t]*(?:" + _MODIFIERS + r"[ \t]+|\*[ \t]*)*\Z")
_METHOD_TAIL = re.compile(r"[ \t]*(?:<[^<>\n]*>)?[ \t]*\(")


def _method_at(text: str, start: int, end: int, language: str) -> bool:
    """Whether the name at [start, end) defines a method (`  process(schema: T): U {` in a class or an object
    literal, JavaScript and TypeScript): a property's name, like `x.process`, not a variable's."""
    if language not in _METHOD_LANGUAGES or not _METHOD_HEAD.search(text, max(0, start - 80), start):
        return False
    tail = _METHOD_TAIL.match(text, end)
    return tail is not None and _bracket_kind(text, tail.end()) == "parameters"


def _attribute_at(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    return _ends_in_dot(text[max(0, i - 1):i + 1])


def _ends_in_dot(text: str) -> bool:
    """Whether `text` ends in an attribute access's dot: `x.`, `x?.`, not a spread or range (`...`, `..`)."""
    return text.endswith(".") and not text.endswith("..")


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
    # A renamed code name is renamed in the comments that mention it too.
    # `query` → `copy(query)`: a call put around a name goes around its uses in code, never around a parameter
    # being declared, nor into a comment
    called = _called(sub.old, sub.new, KEYWORDS)
    mentioned = sub.name and sub.region == CODE and _code_name(sub.old) and not called
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
    for start, end in _matches(sub, text):
        if sub.old[0] == "." and text[start - 1:start] == ".":
            continue  # `.bindings` (an attribute) is not the end of a spread or range, `...bindings`
        if wraps and text[end:end + 1] in (".", "[", "(") and text[end:end + 1] != sub.around[1]:
            continue  # ... unless the edited one went on the same way (`functable.adler32(` → `CALL(adler32)(`)
        if sub.wrapped and not _type_argument(text, start, end, sub):
            continue
        if not sub.new and sub.old.endswith(".") \
                and (text[start - 1:start] == "." or _NAME_START.match(text, end) is None):
            continue  # a qualifier taken off: where it qualifies a name, not where it is itself qualified (`a.typing.`)
        if any(text[start - at:start - at + len(sub.new)] == sub.new for at in inside if at <= start):
            continue
        if sub.name and not sub.both_roles \
                and (_attribute_at(text, start) or _method_at(text, start, end, language)) != sub.attribute:
            continue  # a method defined by its name alone (`  process(x) {`) is a property, as `this.process` is
        if sub.receiver and _receiver(text[max(0, start - 40):start]) != sub.receiver:
            continue  # `self.data` renamed: `frame.data` is another class's
        if sub.typed_only and not _type_position(text, start):
            continue
        if sub.callee and _callee(text[max(0, start - PARAMETERS_REACH):start]) != sub.callee:
            continue  # `, timeoutContext)` comes off calls of the edited one's function only
        if sub.lead and not _lead_at(text, start) and not _type_position(text, start):
            # `x: List` and `-> List` are both type positions, and so is a union's member (`None | str | Literal`)
            continue
        if sub.old[0] in _OPENERS and _applied(text[start - 1:start]) != _applied(sub.around[0]):
            continue  # `(adapters) =>` (parameters) is not `isArray(adapters)` (a call)
        if (sub.call and not (sub.name and _is_name(sub.new)) or called) \
                and _bracket_kind(text, start) == "parameters":
            continue  # an argument or expression (`this.#controller`) changed in a call is none of a parameter list's
        if not anchored:
            kind = lexed.kind_at(start)
            if literal:  # the literal itself is a string: it must stand in the edit's region, quotes and all
                kind = lexed.kind_at(start - 1) if start > 0 else CODE
                if lexed.kind_at(start) != STRING or not _same_slot(sub, text, start, end):
                    continue  # ... and in the same slot (`f("L",`), not wherever the value is used (`strcmp(m, "L")`)
            if kind != sub.region and not (kind == COMMENT and mentioned) and not (kind == CODE and typed):
                continue
        yield start, end


#: Words before a bracket that opens a condition or a call-like statement, never parameters: `if (a) {`.
_CONTROL = frozenset("if for while switch with return catch elif await yield".split())
#: After a parameter list's closing bracket: a body (`{`, `=>`), maybe after a return type (`): T {`, `) -> T:`).
_BODY = re.compile(r"\)\s*(?:=>|\{|:[^\n;=]*(?:\{|=>)|->)")
_DEF = re.compile(r"(?:\bdef|\bfunction)\s*[\w$]*\s*\Z")
#: How far (characters) a parameter list's brackets are looked for around an occurrence.
PARAMETERS_REACH = 400


def _bracket_kind(text: str, start: int) -> str:
    """What the innermost round bracket around `start` is: "parameters" of a definition (it follows `def f` or
    `function f`, or is closed by `) {`, `) =>`, `): T {` or `) -> T`), "call" (applied: `f(`, `g()(`, `x?.(`,
    and closed with no body after it) or "" (a condition, `if (a) {`; a group; or brackets not both in `text`)."""
    depth, i, low = 0, start - 1, max(0, start - PARAMETERS_REACH)
    while i >= low:
        c = text[i]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth == 0:
                break
            depth -= 1
        i -= 1
    else:
        return ""
    if text[i] != "(":
        return ""
    word = _NAME_BEFORE.search(text, max(0, i - 40), i)
    if word is not None and word.group(1) in _CONTROL:
        return ""
    if _DEF.search(text, max(0, i - 80), i):
        return "parameters"
    depth, j, high = 0, start, min(len(text), start + PARAMETERS_REACH)
    while j < high:
        c = text[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                if c != ")":
                    return ""
                if _BODY.match(text, j):
                    return "parameters"
                before = text[max(0, i - 2):i].rstrip()
                return "call" if _applied(before[-1:]) or before.endswith("?.") else ""
            depth -= 1
        j += 1
    return ""


def _same_slot(sub: Substitution, text: str, start: int, end: int) -> bool:
    """Whether the occurrence at [start, end) stands where the edited one stood: the same characters around it and
    the same call around it (`CHOP2(..., "1")`, not `strcmp(mode, "1")`)."""
    if (text[start - 1:start], text[end:end + 1]) != sub.around:
        return False
    line_start = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    return _callee(text[line_start:start]) == _callee(sub.context[0])


def _callee(before: str) -> str:
    """The name before the innermost bracket still open at the end of `before` (one line), or "" outside any."""
    depth = 0
    for i in range(len(before) - 1, -1, -1):
        if before[i] in ")]}":
            depth += 1
        elif before[i] in "([{":
            if depth == 0:
                words = _NAME_BEFORE.search(before, 0, i)
                return words.group(1) if words else ""
            depth -= 1
    return ""


_NAME_BEFORE = re.compile(r"([^\W\d]\w*)\s*\Z")


def _quoted(text: str) -> bool:
    """Whether `text` is one whole quoted literal (`"L"`, `'debug'`)."""
    return len(text) >= 2 and text[0] in _QUOTES and text[-1] == text[0] and text[0] not in text[1:-1]


def _requoted(old: str, new: str) -> bool:
    """Whether `new` is the quoted literal `old` with other quotes and the same text (`"eslint"` → `'eslint'`), one
    that holds a word (`` `}\n` `` → `"}\n"` is every block's end)."""
    return _quoted(old) and _quoted(new) and old[0] != new[0] and old[1:-1] == new[1:-1] and "\n" not in old \
        and any(_is_name(t) and len(t) > 1 for t in _tokens(old[1:-1]))  # a word, not `\n`


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


def _code_name(word: str) -> bool:
    """A name no prose uses as a word (`PSUTIL_HAVE_X`, `maxRetries`, `item2`): where a comment holds it, the
    comment names the code."""
    return "_" in word.strip("_") or any(c.isdigit() for c in word) or any(
        x.islower() and y.isupper() for x, y in zip(word, word[1:]))


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


def _same_line_first(text: str, ahead: list[tuple[int, int]], sub: Substitution) -> list[tuple[int, int]]:
    """`ahead` (occurrences after the cursor, in order), from the first within a screenful whose whole line is the
    edited line as it was (`match: typing.Optional[str] = None,` again, not the `message: ...` above it): the same
    line elsewhere is the surest repeat of a changed value or argument; unchanged when there is none."""
    line = (sub.context[0] + sub.old + sub.context[1]).strip()
    if "\n" in line:
        return ahead
    lines, at = 0, ahead[0][0]
    for i, (start, end) in enumerate(ahead):
        lines += text.count("\n", at, start)
        if lines > CONTEXT_LINES:
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


def _type_position(text: str, start: int) -> bool:
    """Whether a name at `start` stands where a type does: after `:`, `->`, `[`, `<` or `|` on its line."""
    before = text[max(0, start - 40):start].rstrip(" \t")
    return before.endswith((":", "->", "[", "<", "|")) and not before.endswith("::")


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
        return _same_lines(history_event, text, cursor)  # no substitution: the same lines rewritten again, if any
    if sub is None or (names_only and not sub.name):
        return None
    lexed: _Lexed | None = None
    # the same change made in the edit before: the user's own renaming goes on, so the new name's other places are
    # the user's, not names the file already had (see `_existed`)
    before = substitution(previous.old, previous.new, language) if previous is not None else None
    event = None if before is not None and (before.old, before.new) == (sub.old, sub.new) else history_event
    if event is None and sub.name and sub.lead and before is not None and before.attribute == sub.attribute:
        # ... so a variable, also where it stood after a `:` (`testPassed: testOk,`, an object's value; made once
        # there, the name is that place's value): renamed wherever it stands
        sub = dataclasses.replace(sub, lead="")
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
    return _bumped(sub, text, cursor)


_ANY_VERSION = re.compile(r"(?<![\w.])(\d+\.\d+\.)(\d+)(?![\w.])")


def _bumped(sub: Substitution, text: str, cursor: int) -> TextEdit | None:
    """A version bumped in its last number (`'2.13.0'` → `'2.13.1'`) whose old text stands nowhere ahead: the same
    bump of the next version after the cursor written between the same characters with the same last number
    (`'2.46.0'` → `'2.46.1'`, a pinned dependency released with it), or None."""
    old, new = _ANY_VERSION.fullmatch(sub.old), _ANY_VERSION.fullmatch(sub.new)
    if old is None or new is None or old.group(1) != new.group(1) or old.group(2) == new.group(2):
        return None
    if any(start >= cursor for start, _ in _matches(sub, text)):
        return None  # the version itself stands ahead (in a region or role the edit's rules refused)
    for found in _ANY_VERSION.finditer(text, cursor):
        start, end = found.span()
        if found.group(2) == old.group(2) and (text[start - 1:start], text[end:end + 1]) == sub.around:
            return TextEdit(found.start(2), end, new.group(2))
    return None


#: The fewest distinct names (keywords and `self` / `this` aside) of a single line rewritten where it recurs at another
#: indentation: a short line recurs in other blocks by chance.
MIN_DEEPER_NAMES = 4
#: The fewest names the old lines of a rewrite must hold for their verbatim copies to be rewritten the same way (a
#: `body,` or a `}` stands everywhere).
MIN_LINE_NAMES = 2


def _same_lines(event: EditEvent, text: str, cursor: int) -> TextEdit | None:
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
            and len(old) == len(new):
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


def _typed_mention(sub: Substitution) -> bool:
    """Whether `sub` renames a name in a comment where the comment writes it as code: a JSDoc type (`{Lru<T>}`,
    `{Lru}`) or a code span (`` `Lru` ``, `` `Crypto.Crypto` ``)."""
    return sub.name and sub.region == COMMENT and sub.around[0] in ("{", "`") and (
        sub.around[1] in ("}", "<", "`", "[") or sub.around == ("`", "."))


def _appended(sub: Substitution) -> bool:
    """Whether the change only appends text after its old word (not a longer name: `e` → `err` is a rename)."""
    return sub.new.startswith(sub.old) and _WORDY.match(sub.new[len(sub.old):len(sub.old) + 1] or " ") is None


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


def _repeated(sub: Substitution, text: str, cursor: int, language: str, lexed: _Lexed,
              event: EditEvent | None = None) -> TextEdit | None:
    spans = list(occurrences(sub, text, language, lexed))
    if spans and sub.name and sub.region == CODE and (not _is_name(sub.new) or _imported(text, sub.new)):
        # an import of the old name is no use to rename into a type expression (`PythonVersionInfo` →
        # `Tuple[int, int]`) or into a name an import already brings (`MutableMapping` → `EnvType`): it is the old
        # name's declaration, which goes or stays, not another import of the new one
        spans = [(s, e) for s, e in spans if _IMPORT_LINE.match(text, text.rfind("\n", 0, s) + 1) is None]
    if not spans:
        return None
    candidates = spans
    if _typed_mention(sub):  # the code below goes with the type renamed above it: code, or mentions of the same shape
        candidates = [(s, e) for s, e in spans if lexed.kind_at(s) == CODE
                      or (text[s - 1:s], text[e:e + 1]) == sub.around] or spans
    elif sub.region != CODE:  # in prose, a word in the edited one's shape (`{Options}`) before any other use of it
        candidates = [(s, e) for s, e in spans if (text[s - 1:s], text[e:e + 1]) == sub.around] or spans
    if sub.region == CODE and any(lexed.kind_at(s) == COMMENT for s, _ in candidates):
        # a code name's mentions in comments come after its uses in code: the code must change, a comment may not
        code = [span for span in candidates if lexed.kind_at(span[0]) != COMMENT]
        candidates = [span for span in code if span[0] >= cursor] or code + [
            span for span in candidates if span[0] >= cursor and span not in code]
    ahead = [span for span in candidates if span[0] >= cursor]
    if sub.near:  # the similar calls just below, in calls
        ahead = [(s, e) for s, e in ahead if _line_breaks(text, cursor, s) <= MAX_RUN_LINES
                 and _bracket_kind(text, e) == "call"]
        if not ahead:
            return None
    if ahead and sub.region != CODE:
        code = [span for span in ahead if lexed.kind_at(span[0]) == CODE] if _typed_mention(sub) else []
        prose = [span for span in ahead if span not in code]
        ahead = _best_context(text, prose, sub.context) if prose else []
        if code and (not ahead or code[0][0] < ahead[0][0]):
            ahead = code  # a use in code before the next mention like the edited one: the code goes with the type
    if ahead and sub.region == CODE and not sub.name and not sub.near \
            and sum(map(_is_name, _tokens(sub.old))) < SELF_ANCHORED_NAMES:
        # (an old text of three names or more, `typing.Optional[float]`, a trailing `// eslint-disable-line ...`,
        # is its own anchor: the user goes on top-down, as with any other change)
        ahead = _same_line_first(text, ahead, sub)
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
    reach = ADJACENT_LINES if sub.region == CODE else min(ADJACENT_LINES, sub.spread)
    for start, end in spans[first + 1:]:
        # on the line of the one before or the line after it: a run of lines is one edit, as a diff's hunk is
        if _line_breaks(text, chosen[-1][1], start) > reach or _line_breaks(text, chosen[0][0], start) >= MAX_RUN_LINES:
            break
        chosen.append((start, end))
    begin, finish = chosen[0][0], chosen[-1][1]
    pieces, at = [], begin
    for start, end in chosen:
        pieces += [text[at:start], sub.new]
        at = end
    return TextEdit(begin, finish, "".join(pieces))
