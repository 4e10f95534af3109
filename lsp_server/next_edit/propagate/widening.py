"""The largest set of rules, kept apart so that `substitution()` reads as its steps: a change that is not a whole
name on both sides (a literal, an inserted argument, a built-in type, a keyword) says nothing of where it stands again
until it is widened by its unchanged neighbouring tokens to hold a name that anchors it; each rule here is one kind of
anchor (docs/next-edit.md, "Propagation rules", lists them; what each fixed on the benchmark is in that file's git
history)."""

from __future__ import annotations

import re

from .tokens import (
    COMMON_NAMES, KEYWORDS, LITERALS, _PAIRS, _QUOTES, _RECEIVERS, _VERSION, _WORDY, Op, _balanced, _is_name, _quoted,
    _skip_blanks_back,
)

#: How many neighbouring tokens a change may be widened by to find a name to anchor it.
_WIDEN = 6


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


def _arrows(tokens: list[str]) -> int:
    """How many `->` (two tokens each) `tokens` hold."""
    return sum(1 for x, y in zip(tokens, tokens[1:]) if x == "-" and y == ">")


def _has_anchor(tokens: list[str], distinct: bool = False) -> bool:
    """Whether `tokens` hold a name (`distinct`: one that is not a built-in type or literal)."""
    return any(_is_name(t) and not (distinct and t in COMMON_NAMES) for t in tokens)


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
        if not core_new and _QUALIFIER.match("".join(core_old)) and i1 >= 2 and a[i1 - 1] == "." \
                and _is_name(a[i1 - 2]) and (i1 == 2 or a[i1 - 3] != ".") and j2 < len(b) and _is_name(b[j2]):
            # ... or off the middle of a path (`mod.pandas.Series` → `mod.Series`): anchored by the name it
            # followed, wherever that path goes on to a name
            return 2, 0, False
        removed = "".join(core_old)
        if not core_new and _BLOCK_COMMENT.fullmatch(removed.strip()) and _has_anchor(core_old):
            # an annotation comment taken out (`/* @__PURE__ */ `, `/* istanbul ignore next */ `): the comment
            # anchors itself, wherever it stands, not by the name after it
            return 0, 0, False
        if not core_new and removed.startswith(".") and i1 > 0 and _is_name(a[i1 - 1]) and "\n" not in removed \
                and not any(_balanced(removed)) and removed.rstrip().endswith(")") and _has_anchor(core_old):
            # a call taken off a name (`this.update.bind(this)` → `this.update`): anchored by that name, wherever
            # the name stands with it, not by the call around it (`on(...)`, then `off(...)`)
            return 1, 0, False
        if not core_new and len(core_old) == 2 and core_old[0] == "." and _is_name(core_old[1]) and i1 > 0 \
                and _is_name(a[i1 - 1]) and a[i2:i2 + 1] != ["("]:
            # an attribute taken off the end of a path (`response.usage.tokens` → `response.usage`): anchored by the
            # name it followed, wherever that path ends so (`value.delta.usage.tokens;`), not by the call around it
            return 1, 0, False
        if not core_new and "\n" not in removed and _group_ends_at_end(removed) \
                and i1 > 0 and _is_name(a[i1 - 1]) and a[i1 - 1] not in keywords \
                and _has_anchor(core_old):
            # a generic's type arguments taken off (`ProjectMetadata[PluginManagerBound]` → `ProjectMetadata`):
            # anchored by the generic, wherever it stands with those arguments, not by the punctuation after it
            return 1, 0, False
        last = i2 < len(a) and (a[i2] in (")", ",", "=") or (a[i2].isspace() and a[i2 + 1:i2 + 2] == ["="]))
        member = _annotated(a, i1) if not core_old and last and "".join(core_new).lstrip().startswith("|") else None
        typed = i2 + 1 if i2 < len(a) and a[i2] in (" ", "\t") else i2  # the type's first name
        prepended = _parameter_before(a, i1) if not core_old and "".join(core_new).rstrip().endswith("|") \
            and typed < len(a) and _is_name(a[typed]) else None
        if prepended is not None:
            # a union member put first in a parameter's type (`code: int` → `code: CloseCode | int`): anchored by the
            # parameter and the type's first name, wherever else it is declared so (`code: int,`, `code: int | None`)
            return prepended, typed - i2 + 1, False
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
    compared = _compared_to_literal(a, b, op, keywords)
    if compared is not None:
        # `== True` → `is True`, `!= None` → `is not None`: a comparison with a singleton rewritten is anchored by
        # the operator and the literal, wherever it compares something with it (a style fixed throughout)
        return 0, compared, False
    left = 0
    while not _has_anchor(a[i1 - left:i2], distinct):  # anchored by the name before it
        # (a return type's arrow is one step: `Signature]) -> bool` is as near as `x) -> y`)
        if left - _arrows(a[i1 - left:i1]) >= _WIDEN or i1 - left <= 0 or "\n" in a[i1 - left - 1]:
            # ... or, for a built-in type that begins a declaration (`int size;` → `unsigned long long size;`),
            # by the name it declares
            declared = _declared(a, i2) if distinct and len(core_old) == 1 and core_old[0] not in LITERALS \
                and not _has_anchor(a[i1 - left:i1]) else None
            if declared:
                return 0, declared, False
            # ... or, for a built-in type argument of a generic whose other arguments name nothing of the place's own
            # (`Generator[None, None, bytes]`), by the whole generic
            enclosing = _enclosure(a, i1, i2) if distinct and len(core_old) == 1 else None
            if enclosing is not None and _is_name(a[i1 - enclosing[0]]) and a[i1 - enclosing[0] + 1] in _CLOSERS:
                return (*enclosing, False)
            return None
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


_CLOSERS = {"[": "]", "<": ">"}
#: A whole block comment on one line: `/* @__PURE__ */`.
_BLOCK_COMMENT = re.compile(r"/\*[^\n]*?\*/")


def _group_ends_at_end(text: str) -> bool:
    """Whether the bracket that opens `text` closes at its very end (`[A, B]`, not `[A][B]` or `[A] + [B]`)."""
    if text[-1:] != _CLOSERS.get(text[:1]):
        return False
    depth = 0
    for i, c in enumerate(text):
        if c in "[<(":
            depth += 1
        elif c in "]>)":
            depth -= 1
            if depth == 0:
                return i == len(text) - 1
    return False


_COMPARISONS = frozenset(("==", "!=", "===", "!==", "is", "is not"))


def _compared_to_literal(a: list[str], b: list[str], op: Op, keywords: frozenset[str]) -> int | None:
    """How many tokens from the end of `op` reach the literal after it when `op` replaces one comparison operator
    by another (`==` → `is`) just before `True`, `None`, `null` and the like; else None."""
    _, i1, i2, j1, j2 = op
    old, new = "".join(a[i1:i2]).strip(), "".join(b[j1:j2]).strip()
    if old not in _COMPARISONS or new not in _COMPARISONS or old == new:
        return None
    k = i2
    while k < len(a) and a[k].isspace() and "\n" not in a[k]:
        k += 1
    return k - i2 + 1 if k < len(a) and a[k] in LITERALS else None


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
    before = _parameter_before(a, i - 1) if i >= 1 and _is_name(a[i - 1]) else None
    return None if before is None else before + 1


def _parameter_before(a: list[str], i: int) -> int | None:
    """How many tokens before `i` reach the name annotated just before it (`code` in `code: ` + `int`), or None."""
    k = _skip_blanks_back(a, i - 1)
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


#: A module's qualifier before a name: `typing.`, `os.path.`, `import('./types.js').`.
_QUALIFIER = re.compile(r"(?:[^\W\d][\w$]*\s*!?\s*\.\s*)+\Z|import\(\s*(['\"])[^'\"\n]+\1\s*\)\s*\.\Z")
