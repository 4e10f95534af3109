"""The one way the propagation reads code, shared by all its modules: the hunk and the document are cut into the same
tokens and judged by the same word lists, so that what `substitution()` takes for a name, a keyword or a built-in is
what `occurrences()` and the special cases take for one."""

from __future__ import annotations

import keyword
import re

#: A difflib opcode: (tag, i1, i2, j1, j2).
Op = tuple[str, int, int, int, int]
_TOKEN = re.compile(r"[^\W\d]\w*|\d[\w.]*|\s+|[^\w\s]")
_NAME = re.compile(r"[^\W\d]\w*\Z")
_WORDY = re.compile(r"\w")
_VERSION = re.compile(r"\d+\.\d+\.\d+\Z")
_QUOTES = frozenset("'\"`")
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"))
_OPENERS = frozenset(o for o, _ in _PAIRS)


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


#: Words of the common list that JavaScript and TypeScript do not reserve: names there (`global`, Node's global object).
_NOT_JS_KEYWORDS = frozenset("""
    def del elif except fn func global go impl lambda loop mod mut nonlocal pass pub raise struct use where
""".split())
JS_KEYWORDS = KEYWORDS - _NOT_JS_KEYWORDS
_JS_LANGUAGES = frozenset("javascript javascriptreact typescript typescriptreact".split())


def _keywords(language: str) -> frozenset[str]:
    """The words a rename must not touch in `language`: Python's own list for Python, JavaScript's for JavaScript and
    TypeScript, else the common languages'."""
    return PYTHON_KEYWORDS if language == "python" else JS_KEYWORDS if language in _JS_LANGUAGES else KEYWORDS


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


def _balanced(text: str) -> tuple[int, ...]:
    return tuple(text.count(a) - text.count(b) for a, b in _PAIRS)


#: Receivers, not modules: `self.x` → `x` turns an attribute into a local of this place only.
_RECEIVERS = frozenset("self this cls super".split())


def _quoted(text: str) -> bool:
    """Whether `text` is one whole quoted literal (`"L"`, `'debug'`)."""
    return len(text) >= 2 and text[0] in _QUOTES and text[-1] == text[0] and text[0] not in text[1:-1]
