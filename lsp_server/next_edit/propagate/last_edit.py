"""What the last edit changed, decided once per hunk (cached) and without the document: the `Substitution` carries
everything `occurrences()` must know of the edited text's role, and the narrower anchors to try where the whole old
text stands nowhere ahead, so that the search in the document never has to look at the hunk again."""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass
from functools import lru_cache

from ..lexical import CODE, STRING, regions
from .roles import _METHOD_LANGUAGES, _applied, _bracket_kind, _callee, _ends_in_dot, _method_at, _receiver
from .tokens import (
    COMMON_NAMES, KEYWORDS, LITERALS, _OPENERS, _QUOTES, _RECEIVERS, _VERSION, Op, _balanced, _is_name, _keywords,
    _quoted, _skip_blanks_back, _tokens,
)
from .widening import _WIDEN, _has_anchor, _lead, _widening

#: A change whose new side ends in one of these is still being typed (`f(a, ` → `f(a, b)`): not worth repeating.
_UNFINISHED = frozenset(",([{=.\\")
#: An appended parameter as it is passed on: `, name`.
_PASSED = re.compile(r",\s*[^\W\d]\w*\Z")
#: The longest old or new text of a substitution (characters): longer changes are rewrites, not substitutions.
MAX_CHARS = 400
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


_CALLEE = re.compile(r"[^\W\d][\w$]*(?:\.[^\W\d][\w$]*)*\(\Z")


#: `input.hasAttribute(`: a method called on an object named by one name.
_METHOD_HEAD = re.compile(r"([^\W\d][\w$]*)\s*\.\s*[^\W\d][\w$]*\s*\(")
#: `has_attribute(input, `: a function called with one name first.
_HELPER_HEAD = re.compile(r"([^\W\d][\w$.]*)\s*\(\s*([^\W\d][\w$]*)\s*,\s*")


def _call_head(a: list[str], b: list[str], op: Op, keywords: frozenset[str]) -> Op | None:
    """`op` (the span over all of a hunk's changes) when it rewrites a call's head and keeps the rest of its
    arguments: `flatMap(topLevels, ` → `topLevels.flatMap(`, `has(tokType` → `Object.hasOwn(tokType ?? {}` (a
    helper made a method of its first argument). The old side is a function, `(` and a first argument that is one
    name, which the new side keeps; both sides, on one line, leave the call's bracket open and close nothing. None
    otherwise."""
    _, i1, i2, j1, j2 = op
    old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
    if "\n" in old or "\n" in new or _balanced(old) != (1, 0, 0) or _balanced(new) != (1, 0, 0):
        return None
    opener = old.find("(")
    method = _METHOD_HEAD.fullmatch(old)
    if method is not None and method.group(1) not in keywords and method.group(1) not in _RECEIVERS:
        # ... and the other way round: a method made a helper that takes its object first (`input.hasAttribute(`
        # → `has_attribute(input, `, then `input.hasAttribute('checked')`), the arguments after it kept
        # (a call without other arguments is found whole, brackets closed)
        helper = _HELPER_HEAD.fullmatch(new)
        if helper is not None and helper.group(2) == method.group(1) and helper.group(1) not in keywords:
            return op
        return None
    if not _CALLEE.match(old[:opener + 1]) or old.split(".")[0].split("(")[0] in keywords:
        return None
    k = i1 + len(_tokens(old[:opener + 1]))
    if k >= i2 or not _is_name(a[k]) or a[k] in keywords or a[k] not in b[j1:j2]:
        return None
    rest = a[k + 1:i2] + a[i2:i2 + 1]
    return op if rest[:1] == [","] else None


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


#: The fewest characters (blanks aside) of a changed span in a string with fewer than two names that is looked for
#: where it recurs: a regular expression's `(?:.|\n)` is no accident, a `, ` is.
MIN_PATTERN_CHARS = 6


def _in_string(text: str, offset: int, language: str) -> bool:
    return bool(language) and regions(text, language).kind_at(offset) == STRING


def _over_lines(a: list[str], b: list[str], op: Op) -> bool:
    """Whether the changed span `op` holds a line break on either side."""
    _, i1, i2, j1, j2 = op
    return any("\n" in t for t in a[i1:i2] + b[j1:j2])


#: A C parameter's type just before its name in a parameter list: `(CTXT_Object *`, `, const char *`, `(int `.
_DECLARED = re.compile(r"[(,][ \t]*(?:const[ \t]+)?[^\W\d]\w*(?:[ \t]*\*+[ \t]*|[ \t]+)\Z")


def _untailed(a: list[str], b: list[str], union: Op) -> Op:
    """`union` without the tokens both its sides end with (the old side keeps one token at least)."""
    _, i1, i2, j1, j2 = union
    while i2 - i1 > 1 and j2 > j1 and a[i2 - 1] == b[j2 - 1]:
        i2, j2 = i2 - 1, j2 - 1
    return "replace", i1, i2, j1, j2


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
        head = _call_head(a, b, ("replace", ops[0][1], ops[-1][2], ops[0][3], ops[-1][4]), keywords)
        union: Op = _named(a, b, _closed(a, b, ("replace", ops[0][1], ops[-1][2], ops[0][3], ops[-1][4])))
        if sum(map(_is_name, a[union[1]:union[2]])) == 1:
            union = _receiver_call(a, union)  # `.slice(0, 10)` → `.split("T")[0]` after `toISOString()`
        joined, untailed = "".join(a[union[1]:union[2]]), _untailed(a, b, union)
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
        elif _DECLARED.search("".join(a[:union[1]]).rsplit("\n", 1)[-1]) and _called(
                "".join(a[untailed[1]:untailed[2]]), "".join(b[untailed[3]:untailed[4]]), keywords):
            # `*context)` → `*Py_UNUSED(context))`: the diff matched the old closing bracket with the new call's, so
            # the union took in the bracket after the name; without the tail both sides share, it is a declared
            # parameter (a type before it) wrapped
            union = untailed
            found = ("".join(a[union[1]:union[2]]), "".join(b[union[3]:union[4]]), union, 0, False)
        if head is not None:
            # a call's head rewritten, its other arguments kept: the head alone is the change, top-down at every call
            found = ("".join(a[head[1]:head[2]]), "".join(b[head[3]:head[4]]), head, 0, False)
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
                        receiver=receiver if receiver in _RECEIVERS or _container_swap(old_text, new_text) else "",
                        at_line_end=at_end, lead=lead,
                        offset=start,
                        around=(new[start - 1:start], after), context=context,
                        spread="".join(b[ops[0][3]:ops[-1][4]]).count("\n"), call=_bracket_kind(new, start) == "call")


#: Methods of the built-in containers (Python's list, set and dict; JavaScript's Array, Set and Map).
_CONTAINER_METHODS = frozenset(
    "append add extend insert remove discard pop update setdefault push unshift shift has set delete includes".split())


def _container_swap(old: str, new: str) -> bool:
    """Whether a method of a built-in container was replaced by another's (`.append(` → `.add(`): that object's type
    changed (a list made a set), not every list's, so the change stays on that receiver."""
    return old != new and old in _CONTAINER_METHODS and new in _CONTAINER_METHODS


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


def _requoted(old: str, new: str) -> bool:
    """Whether `new` is the quoted literal `old` with other quotes and the same text (`"eslint"` → `'eslint'`), one
    that holds a word (`` `}\n` `` → `"}\n"` is every block's end)."""
    return _quoted(old) and _quoted(new) and old[0] != new[0] and old[1:-1] == new[1:-1] and "\n" not in old \
        and any(_is_name(t) and len(t) > 1 for t in _tokens(old[1:-1]))  # a word, not `\n`
