"""The role of a place read from the raw text around an offset (a call's arguments or a definition's parameters, a
method's name, an attribute after its receiver, a type position): read the same way from the hunk, where
`substitution()` records the role of the edited text, and from the document, where `occurrences()` keeps only the
places in that role, so that both sides agree on what "the same role" is."""

from __future__ import annotations

import re

from .tokens import _WORDY


def _applied(before: str) -> bool:
    """Whether a bracket after the character `before` applies something (a call or an index: `f(`, `x[`, `g()(`)
    rather than opening a group, a literal or a parameter list (`= (`, `: [`)."""
    return bool(before) and (_WORDY.match(before) is not None or before in ")]")


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


#: A Python method: an indented `def` whose first parameter is `self` or `cls` (`    def run(self, x):`).
_PY_METHOD_HEAD = re.compile(r"(?:^|\n)[ \t]+(?:async[ \t]+)?def[ \t]+\Z")
_PY_METHOD_TAIL = re.compile(r"[ \t]*(?:\[[^\]\n]*\][ \t]*)?\(\s*(?:self|cls)\b")


def _method_at(text: str, start: int, end: int, language: str) -> bool:
    """Whether the name at [start, end) defines a method (`  process(schema: T): U {` in a class or an object
    literal, JavaScript and TypeScript; `    def process(self, schema):`, Python): a property's name, like
    `x.process`, not a variable's."""
    if language == "python":
        return _PY_METHOD_HEAD.search(text, max(0, start - 80), start) is not None \
            and _PY_METHOD_TAIL.match(text, end) is not None
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


def _innermost_open(before: str) -> int:
    """Where the innermost bracket still open at the end of `before` stands, or -1 outside any."""
    depth = 0
    for i in range(len(before) - 1, -1, -1):
        if before[i] in ")]}":
            depth += 1
        elif before[i] in "([{":
            if depth == 0:
                return i
            depth -= 1
    return -1


def _callee(before: str) -> str:
    """The name before the innermost bracket still open at the end of `before` (one line), or "" outside any."""
    i = _innermost_open(before)
    words = _NAME_BEFORE.search(before, 0, i) if i >= 0 else None
    return words.group(1) if words else ""


#: Python's built-in generics (`dict[str, X]`); any other generic is a class, named with a capital.
_BUILTIN_GENERICS = frozenset("dict list tuple set frozenset type".split())


def _subscript_argument(text: str, start: int, language: str) -> bool:
    """Whether the name at `start` is an argument of a Python generic after its first, or the first on a line of its
    own (`Union[str, List[str]]`, `Optional[\n    Dict[str, str]]`): its arguments are types as an annotation's
    head is. A generic is a subscripted class (a capital) or a built-in one, not a value (`table[key, List]`)."""
    if language != "python":
        return False
    before = text[max(0, start - PARAMETERS_REACH):start]
    if not before.rstrip().endswith((",", "[")):
        return False
    i = _innermost_open(before)
    generic = _NAME_BEFORE.search(before, 0, i) if i >= 0 and before[i] == "[" else None
    return generic is not None and (generic.group(1)[0].isupper() or generic.group(1) in _BUILTIN_GENERICS)


_NAME_BEFORE = re.compile(r"([^\W\d]\w*)\s*\Z")


#: A TypeScript cast's or check's type: `) as RealtimeFactoryV4;`, `} satisfies Config`.
_CAST = re.compile(r"(?<![\w$.])(?:as|satisfies)[ \t]+\Z")


def _cast_at(text: str, start: int, language: str) -> bool:
    """Whether the name at `start` is the type of a TypeScript `as` or `satisfies` (in Python `as` names a binding)."""
    return language in ("typescript", "typescriptreact") and _CAST.search(text, max(0, start - 20), start) is not None


def _type_position(text: str, start: int) -> bool:
    """Whether a name at `start` stands where a type does: after `:`, `->`, `[`, `<` or `|` on its line."""
    before = text[max(0, start - 40):start].rstrip(" \t")
    return before.endswith((":", "->", "[", "<", "|")) and not before.endswith("::")
