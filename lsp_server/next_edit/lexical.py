"""Where a window of code has strings and comments, by one regular-expression pass per language family.

Propagation must not rename `count` inside the message "count must be positive" because the variable `count` was
renamed, nor touch a commented-out line: an occurrence counts only in the same kind of region (code, string or
comment) as the edit. A tree-sitter parse would be exact but costs a grammar per language and O(file); this pass is
O(window), needs no grammar and is wrong only where a window starts inside a multi-line string or comment (the
window's first lines are then read as code), which costs at worst one suggestion the user can ignore. A JavaScript
template literal's `${...}` substitutions are code (one level of braces inside), so a renamed variable is renamed
there too, and so are a Python f-string's replacement fields (`f"expecting {FastMCP}"`). A regular-expression literal
is a string, so that a quote inside it (`/['"]/`) opens none."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

CODE = "code"
STRING = "string"
COMMENT = "comment"

_SINGLE = r"'(?:\\.|[^'\\\n])*'"
_DOUBLE = r'"(?:\\.|[^"\\\n])*"'
#: What a template literal's substitution `${...}` holds: one level of braces (`${f({a})}` ends at its own
#: brace) and template literals of its own (`` `[${f(`a ${b}`)}]` ``).
_HOLE_BODY = r"(?:[^{}`]|\{[^{}`]*\}|`(?:\\.|[^`\\])*`)*"
#: A template literal, its substitutions whole; else (a substitution that does not close so) up to its next backtick.
_BACKTICK = r"`(?:\\.|[^`\\$]|\$(?!\{)|\$\{" + _HOLE_BODY + r"\})*`|`(?:\\.|[^`\\])*`"
_TRIPLE = r"'''[\s\S]*?(?:'''|\Z)|\"\"\"[\s\S]*?(?:\"\"\"|\Z)"
_BLOCK = r"/\*[\s\S]*?(?:\*/|\Z)"
#: A substitution in a template literal, `${...}`.
_HOLE = re.compile(r"\$\{" + _HOLE_BODY + r"\}")
#: A Python f-string's replacement field (`{name!r:>{width}}`: one level of braces inside), or an escaped brace. A
#: field holding a quote is left to the string: the lexer does not follow strings nested in it.
_FIELD = re.compile(r"\{\{|\}\}|\{(?:[^{}'\"\n]|\{[^{}'\"\n]*\})*\}")
#: The prefix letters of a Python f-string, just before its quote (`f`, `rf`, `Fr`, ...).
_F_PREFIX = re.compile(r"(?<![\w])(?:[fF][rR]?|[rR][fF])\Z")
#: A JavaScript regular-expression literal, where an operand starts (after `=`, `(`, `,`, `:`, `return` ...: never a
#: division): its quotes (`/[\w!#$%&'*+.^`|~-]+/`) open no string. The blanks before it belong to it.
_REGEX = r"(?:(?<=[=(,:\[!&|?{};\n])|(?<=\breturn))[ \t]*/(?![/*])(?:\\.|\[(?:\\.|[^\]\\\n])*\]|[^/\\\n\[])+/[a-z]*"
_RUST_CHAR = r"'(?:\\.[^'\n]{0,8}|[^'\\\n])'"  # a lifetime ('a) is not a string

#: Language family → (comment patterns, string patterns). Unknown languages (plaintext, markdown) are all code.
_FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "python": ((r"#[^\n]*",), (_TRIPLE, _SINGLE, _DOUBLE)),
    "hash": ((r"#[^\n]*",), (_SINGLE, _DOUBLE)),
    "c": ((r"//[^\n]*", _BLOCK), (_DOUBLE, _SINGLE)),
    "js": ((r"//[^\n]*", _BLOCK), (_BACKTICK, _DOUBLE, _SINGLE, _REGEX)),
    "rust": ((r"//[^\n]*", _BLOCK), (_DOUBLE, _RUST_CHAR)),
    "dash": ((r"--[^\n]*",), (_DOUBLE, _SINGLE)),
    "html": ((r"<!--[\s\S]*?(?:-->|\Z)",), (_DOUBLE, _SINGLE)),
}
_LANGUAGES = {
    "python": "python",
    **dict.fromkeys(("shellscript", "sh", "bash", "zsh", "ruby", "perl", "r", "yaml", "toml", "makefile",
                     "dockerfile", "cmake", "elixir", "nim", "julia", "powershell"), "hash"),
    **dict.fromkeys(("c", "cpp", "objective-c", "objective-cpp", "java", "csharp", "kotlin", "scala", "swift", "dart",
                     "php", "groovy", "cuda", "zig", "json", "jsonc", "css", "scss", "less"), "c"),
    **dict.fromkeys(("javascript", "javascriptreact", "typescript", "typescriptreact", "go", "vue", "svelte"), "js"),
    "rust": "rust",
    **dict.fromkeys(("lua", "sql", "haskell", "ada", "elm"), "dash"),
    **dict.fromkeys(("html", "xml", "svg"), "html"),
}


@lru_cache(maxsize=None)
def _pattern(family: str) -> re.Pattern[str]:
    comments, strings = _FAMILIES[family]
    return re.compile("|".join([f"(?P<c{i}>{p})" for i, p in enumerate(comments)]
                               + [f"(?P<s{i}>{p})" for i, p in enumerate(strings)]))


@dataclass(frozen=True)
class Regions:
    """The string and comment spans of one text, sorted; everything else is code."""

    starts: tuple[int, ...] = ()
    ends: tuple[int, ...] = ()
    kinds: tuple[str, ...] = ()

    def kind_at(self, offset: int) -> str:
        """CODE, STRING or COMMENT for the character at `offset` (a quote or comment marker belongs to its span)."""
        i = bisect.bisect_right(self.starts, offset) - 1
        if i >= 0 and offset < self.ends[i]:
            return self.kinds[i]
        return CODE


def regions(text: str, language: str) -> Regions:
    family = _LANGUAGES.get(language.lower())
    if family is None:
        return Regions()
    starts, ends, kinds = [], [], []
    for match in _pattern(family).finditer(text):
        start, end = match.span()
        kind = COMMENT if (match.lastgroup or "").startswith("c") else STRING
        holes: Iterable[tuple[int, int]] = ()
        if kind == STRING and family == "js" and text[start] == "`":
            # a template literal's `${...}` is code: the string is the text between them
            holes = (hole.span() for hole in _HOLE.finditer(text, start, end))
        elif kind == STRING and family == "python" and _F_PREFIX.search(text, max(0, start - 2), start):
            # ... and so is the inside of an f-string's replacement field; its braces stay text, so that a field put
            # where text stood (`f'rq:jobs'` → `f'{PREFIX}:jobs'`) is an edit of the string (`{{` is a brace of it)
            holes = ((f.start() + 1, f.end() - 1) for f in _FIELD.finditer(text, start, end)
                     if f.group() not in ("{{", "}}"))
        for hole_start, hole_end in holes:
            starts.append(start)
            ends.append(hole_start)
            kinds.append(STRING)
            start = hole_end
        starts.append(start)
        ends.append(end)
        kinds.append(kind)
    return Regions(tuple(starts), tuple(ends), tuple(kinds))
