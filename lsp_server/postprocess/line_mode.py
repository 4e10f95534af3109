"""Where a suggestion may end: the one place that decides single- or multi-line.

Three inputs decide it, and they are kept explicit:

1. **The cursor's situation** (`decide`), known before the model is asked:
   - ``line``: the suggestion finishes the current line (code after the cursor on it, a string or comment, a
     statement that opens no block);
   - ``statement``: an empty line inside a run of code (the line below is code at least as deep), where a line or a
     few are being added: one statement, with the block it opens (and the comments that introduce it);
   - ``block``: everything else (after a block opener, in an empty block, before a blank line, at the end of a block
     or of the file), where the model may fill the block; the scope filter limits it.
2. **Whether the model saw the code after the cursor** (a FIM template, or the backend's native infill): such a
   model knows where the hole ends and says so with its end token.
3. **Why the generation stopped** (`engine.types.StopReason`): the model's own end (end of stream or an end sentinel),
   a stop word, or a token/time limit.

A model that saw the suffix and ended by itself wrote the hole: its text is kept whole, multi-line or not (only the
scope and junk filters apply). Any model whose text reaches a line equal to the next line of code below the cursor
has rejoined the existing code: what comes before is kept whole too (`rejoin_stop_word` makes the engine stop
there; `rejoined_as_body` finds a model that wrote the opener of the code below and then that code, and
`skipped_ahead` one that wrote the rest of a chain of `elif`/`case` clauses and then code from a few lines further
down). Otherwise the model was still writing when it was stopped, and the situation's rule cuts (`cut`).

For prefix-only models a ``line`` situation also asks the engine to stop at the first line break, which saves the
tokens the cut would throw away (`request_stop_words`)."""

from __future__ import annotations

import re
from typing import Literal

from engine.languages import default_table, opens_multiline_string
from engine.types import StopReason

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import ONLY_CLOSING, indent_width, is_blank, open_brackets, unpaired_tokens
from lsp_server.syntax import multiline_from_indentation, multiline_from_syntax

LineMode = Literal["line", "statement", "block"]
MultilinePolicy = Literal["auto", "always", "never"]

_WORD = re.compile(r"\w")
_WORDS = re.compile(r"[A-Za-z_]\w*")
# A line at the statement's own indentation that carries the statement on (`else:`, `} else {`, `except E:`).
_CONTINUES = re.compile(r"(?:else|elif|except|finally|catch)\b|}\s*(?:else|catch|finally)\b")
_CASE = re.compile(r"(?:case\b|default\s*:)")
# A line that continues the expression of the line before (`.iter()`, `?.x`, `&& b`, `+ 1`, `)`).
_CONTINUES_EXPRESSION = re.compile(r"(?:\?\.|\.[^.]|&&|\|\||[-+]\s|and\b|or\b|[)\]}])")
# A line ending like this is not a finished statement: the next line continues it.
_OPEN_END = re.compile(r"(?:\\|(?<![-+])[-+]|[&|=,.:]|\band|\bor|\bnot)\s*$")


def _width(line: str) -> int:
    """Columns of the line's indentation, a tab taking 4 (tabs after the indentation do not count)."""
    return len(line[:len(line) - len(line.lstrip(" \t"))].expandtabs(4))


#: Blank lines between the cursor and the code below that still leave the cursor inside a run of code.
MAX_BLANK_LINES_BELOW = 2


def inside_code_run(prefix: str, suffix: str, line_prefix: str) -> bool:
    """The cursor sits in the indentation of an empty line and the next line of code below (after a blank line or
    two) is at least as deep: a line (or a few) is being added to existing code, not a block being written where one
    is missing (at the end of a block the code below is shallower; in an empty block too; at the end of the file there
    is none).

    Found by the quality benchmark: a multi-line suggestion here brought the right line followed by more code in 88
    of 618 HumanEval single-line tasks; and the real-code benchmark found the same before a blank line (the last
    assignment of a paragraph shown with three more of the model's), where code follows at the cursor's indentation
    too. A model that writes the blank line has ended there (`ended_at_blank_line`). So after a header whose body
    goes on below a blank line at the cursor's indentation: the body is there, its beginning is missing (real-code
    benchmark: a docstring shown with a statement of the model's after it, above the method's code)."""
    lines = suffix.split("\n", MAX_BLANK_LINES_BELOW + 2)
    if line_prefix.strip() or lines[0].strip() or len(lines) < 2:
        return False
    width = _width(line_prefix)
    if lines[1].strip():
        return _width(lines[1].rstrip("\r")) >= width
    # After a blank line: the code below at the cursor's indentation, and above it a statement at that indentation
    # (a paragraph of statements ends here) or the header of that body; not the end of a block, and not a cursor
    # left at column 0 inside a deeper body.
    below = next((line for line in lines[2:MAX_BLANK_LINES_BELOW + 2] if line.strip()), None)
    above = _last_code_line(prefix)
    return below is not None and above is not None and _width(below.rstrip("\r")) == width \
        and (_width(above) < width if _opens_block(above) else _width(above) == width)


def _last_code_line(prefix: str) -> str | None:
    """The last non-blank line before the cursor's line, read from the end only as far as needed."""
    end = prefix.rfind("\n")
    while end > 0:
        start = prefix.rfind("\n", 0, end) + 1
        line = prefix[start:end].rstrip("\r")
        if line.strip():
            return line
        end = start - 1
    return None


def ended_at_blank_line(stop_word: str | None, suffix: str) -> bool:
    """The model stopped at a blank line (the language's stop word) where the code below the cursor has one: it has
    written the hole up to the document's own blank line, as a rejoin does."""
    if stop_word is None or stop_word.count("\n") < 2 or stop_word.strip():
        return False
    lines = suffix.split("\n", 2)
    return len(lines) > 1 and not lines[1].strip()


def decide(policy: MultilinePolicy, language: str, prefix: str, suffix: str, line_prefix: str,
           line_rest: str) -> LineMode:
    """The cursor's situation. `always`/`never` win; `auto`: word characters after the cursor → line; an empty line
    inside a run of code → statement; then the syntax at the cursor (tree-sitter), else the indentation."""
    if policy == "always":
        return "block"
    if policy == "never":
        return "line"
    if _WORD.search(line_rest):
        return "line"
    if inside_code_run(prefix, suffix, line_prefix):
        return "statement"
    by_syntax = multiline_from_syntax(language, prefix, suffix)
    if by_syntax is None:
        by_syntax = multiline_from_indentation(line_prefix)
    return "block" if by_syntax else "line"


#: A longer line below (minified code, a long literal) makes no rejoin stop word: a model rarely writes it again
#: exactly, and stop words are bounded (engine.validation.MAX_STOP_WORD_CHARS).
MAX_REJOIN_CHARS = 200


def rejoin_stop_word(suffix: str) -> str | None:
    """"\\n" + the next line of code below the cursor (indentation included) + "\\n": a model that writes that line
    has finished the hole and goes on with code the user already has. The closing "\\n" keeps `return x` from
    matching `return x + 1`. A line that code repeats often (`}`, `@Override`, `/**`, `assert_eq!(`: fewer than two
    words) could also end a line of the hole, so the line after it is part of the word then (the cut simulation
    found holes cut at such lines). LF line endings, as the engine streams them."""
    lines = [line.rstrip().rstrip("\r").rstrip() for line in suffix.split("\n")[1:]]
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        return None
    if len(lines[start]) + 2 > MAX_REJOIN_CHARS:
        return None
    end = start + 1
    words = len(_WORDS.findall(lines[start]))
    if words < 2:  # a line code repeats often: take the next lines of code too, up to three words or three lines
        taken = 1
        size = len(lines[start]) + 2
        for i in range(start + 1, len(lines)):
            if taken >= 3 or words >= 3 or size + len(lines[i]) + 1 > MAX_REJOIN_CHARS:
                break
            size += len(lines[i]) + 1
            if lines[i].strip():
                words += len(_WORDS.findall(lines[i]))
                taken += 1
                end = i + 1
    return "\n" + "\n".join(lines[start:end]) + "\n"


def _code_below(suffix: str, count: int) -> list[str]:
    """The first `count` non-blank lines after the cursor's line (right-stripped), read only as far as needed."""
    out: list[str] = []
    start = suffix.find("\n") + 1
    while start and len(out) < count:
        end = suffix.find("\n", start)
        line = suffix[start:] if end < 0 else suffix[start:end]
        if line.strip():
            out.append(line.rstrip())
        start = end + 1
    return out


def rejoined_as_body(text: str, line_prefix: str, suffix: str) -> str | None:
    """The text before a line equal to the next line of code below the cursor, when the line above it opens a block
    that line is deeper than: the model wrote the opener whose body the user already has, then that body (HumanEval/55:
    `return 0`, `elif n == 1:`, then the `return 1` below). The rejoin stop word misses this when the line below is
    too common to stop at by itself (`return 1`, `}`) and the model went on differently from the code after it."""
    code_below = _code_below(suffix, 1)
    if not code_below:
        return None
    below = code_below[0]
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if lines[index].rstrip() != below:
            continue
        above = next((i for i in range(index - 1, -1, -1) if lines[i].strip()), None)
        if above is None:
            return None
        opener = (line_prefix + lines[0]) if above == 0 else lines[above]
        code = opener.rstrip()
        if (code.endswith(":") or code.endswith("{")) and indent_width(below) > indent_width(opener):
            return "\n".join(lines[:index]).rstrip()
        return None
    return None


#: How many lines of code after the next one a model may skip to (see `skipped_ahead`).
SKIP_AHEAD_LINES = 8


def skipped_ahead(text: str, suffix: str) -> str | None:
    """The text before a line of code that stands a few lines further below the cursor, shallower than the item's
    first line, when the model reached it by writing the rest of the chain the cursor is in: the missing branches
    of an `if`/`elif`, `switch` or `try` (HumanEval/81: `elif` branches, then the function's `return` from five lines
    below). Like a rejoin, that text is the hole. Only lines of at least two words count (`}`, `break` recur in any
    code), and only text that is one chain: the item's first statement, then clauses that reopen the block (`elif`,
    `} else {`, `case`), each followed by lines deeper than itself. A plain statement at a clause's level means the
    model wrote code of its own before it got back (HumanEval single-line tasks did that). Not when the code below
    the cursor is deeper than the item's first line: then that line's body is already there."""
    below = _code_below(suffix, SKIP_AHEAD_LINES + 1)
    candidates = {line for line in below[1:SKIP_AHEAD_LINES + 1]
                  if len(line) <= MAX_REJOIN_CHARS and len(_WORDS.findall(line)) >= 2}
    lines = text.split("\n")
    start = next((line for line in lines if line.strip()), None)
    if not candidates or start is None or indent_width(below[0]) > indent_width(start):
        return None
    base = indent_width(start)
    level = base  # the indentation of the chain's last clause: deeper lines are its body
    for index in range(1, len(lines)):
        line = lines[index]
        width = indent_width(line)
        if not line.strip() or width > level:
            continue
        if line.rstrip() in candidates and width < base:
            return "\n".join(lines[:index]).rstrip()
        if not _CONTINUES.match(line.strip()) and not _CASE.match(line.strip()):
            return None
        level = width
    return None


def rejoined_at_limit(text: str, suffix: str) -> str | None:
    """The text before its last line, when a token or time limit cut the model off inside a line that begins the
    next line of code below the cursor (indentation included, at least two words): the model had finished the hole
    and was re-typing the code the user has, and the limit came before the rejoin stop word could match (real-code
    benchmark, cobra: `rootCmd := …` and `child := &Command{…}`, then `\trootCmd.AddCommand` of the line below
    `rootCmd.AddCommand(child)`; shown as the first statement only)."""
    lines = text.split("\n")
    below = _code_below(suffix, 1)
    if len(lines) < 2 or not below or len(_WORDS.findall(lines[-1])) < 2 or not below[0].startswith(lines[-1]):
        return None
    kept = "\n".join(lines[:-1]).rstrip()
    return kept if kept.strip() else None


def rejoined_later(text: str, line_prefix: str, suffix: str, limited: bool = False) -> str | None:
    """The hole, when the model reached the code below without writing the rejoin stop word: `rejoined_as_body`
    or `skipped_ahead`, and with `limited` (a token or time limit ended the text) `rejoined_at_limit`."""
    body = rejoined_as_body(text, line_prefix, suffix)
    if body is None and limited:
        body = rejoined_at_limit(text, suffix)
    return body if body is not None else skipped_ahead(text, suffix)


def request_stop_words(mode: LineMode, suffix: str, sees_suffix: bool) -> tuple[str, ...]:
    """Stop words the pipeline adds to the request. A prefix-only model in a ``line`` situation stops at the first
    line break (its further lines would be cut anyway); a model that sees the suffix does not, since it may end a
    multi-line answer by itself. Every model stops where it rejoins the code below."""
    words = []
    if mode == "line" and not sees_suffix:
        words.append("\n")
    rejoin = rejoin_stop_word(suffix)
    if rejoin is not None:
        words.append(rejoin)
    return tuple(words)


def rejoined(stop_reason: StopReason, stop_word: str | None, suffix: str) -> bool:
    """The model reached the code below the cursor: it stopped at the rejoin stop word."""
    return stop_reason is StopReason.STOP_WORD and stop_word is not None and stop_word == rejoin_stop_word(suffix)


def model_ended(stop_reason: StopReason, stop_word: str | None, sees_suffix: bool, suffix: str) -> bool:
    """Whether the text is the model's whole answer: a model that saw the suffix and ended by itself, or any model
    that reached the code below (the rejoin stop word, or the blank line the code below starts with). A prefix-only
    model's end token is not trusted: it does not know where the hole ends."""
    if stop_reason is StopReason.STOP_WORD:
        return rejoined(stop_reason, stop_word, suffix) or ended_at_blank_line(stop_word, suffix)
    return sees_suffix and stop_reason in (StopReason.END_OF_STREAM, StopReason.END_SENTINEL)


def _first_line(text: str, line_suffix: str) -> str | None:
    """One line: if the first line ends by re-typing the code after the cursor, that line minus the echo (when it is
    bracket-balanced; closing brackets alone are left to the replace range). If code (not just closing brackets)
    follows the cursor, further lines mean the model misunderstood the gap: the item is dropped. At the end of a
    line the first line is kept."""
    if "\n" not in text:
        return text
    first = text.split("\n", 1)[0].rstrip()
    rest = line_suffix.rstrip()
    closing_only = bool(ONLY_CLOSING.fullmatch(rest))
    if rest and not closing_only and first.endswith(rest) and len(first) > len(rest):
        kept = first[: len(first) - len(rest)]
        if not unpaired_tokens(kept):
            return kept
    if rest and not closing_only:
        return None
    return first or None


def _in_block_comment(text: str) -> bool:
    """The text leaves a `/* … */` comment open (string literals are not understood: a `/*` inside one counts)."""
    return text.rfind("/*") > text.rfind("*/")


def _is_comment(line: str, comment: str | None) -> bool:
    stripped = line.strip()
    return bool(comment and stripped.startswith(comment)) or stripped.startswith(("/*", "*/", "* ")) \
        or stripped == "*"


def _structure_end(text: str, line_prefix: str, one_statement: bool, below: str | None = None,
                   strings: tuple[str, ...] = (), comment: str | None = None) -> str:
    """Where the text stops looking like code written at the cursor.

    Lines go deeper only after a line that leaves something open (a block opener `:`/`{`, an open bracket, a line
    ending in an operator or comma) or when they continue an expression (`.iter()`, `&& b`): a deeper line after a
    finished one is text from elsewhere (a model running on). With `one_statement`, the text also ends before the
    first line back at the first line's indentation (or less) that starts something new; a line that closes the
    statement's bracket or carries its block on (`} else {`, `else:`, `except E:`) is kept, and after a line that
    closes the block (`}`) nothing more is. When the next line of code `below` the cursor is deeper than the first
    line, the block the statement opens already has its body there: the statement ends at its opener (found by the
    quality benchmark: HumanEval's `if distance < threshold:` above its existing body came with a body of the
    model's); a statement that is no header goes on to the header within a few lines (`_through_header`). After a
    comma the next line at the statement's indentation is a sibling item. A clause of the
    enclosing statement written one level out (`else:`) is not kept: tried, it fixed one HumanEval multi-line task
    and broke a SantaCoder one, where the model added an `else:` of its own. The lines of a multi-line string the
    text opens (`strings`: the language's delimiters, a docstring's triple quotes) belong to the line that opened
    it (the real-code benchmark found docstrings cut to their first line, an unterminated string in the editor). So do
    the lines of a `/* … */` comment it opens; and a statement that is only comments so far (`comment`: the
    language's line comment) goes on with the code they introduce: a comment alone is not what a user waits for
    (the real-code benchmark: a model's `// emit the previous buffer …` shown without the statement under it). Comments
    with no code after them are cut to the first one: the model was writing prose, not code."""
    lines = text.split("\n")
    widths = [_width(line_prefix + lines[0])] + [_width(line) for line in lines[1:]]
    first = next((i for i, line in enumerate(lines) if not is_blank(line)), None)
    if first is None:
        return text
    base = widths[first]
    allowed = base  # the deepest indentation a line may have without a new opener
    kept = first + 1
    depth = open_brackets(lines[first])
    opened = depth > 0 or bool(_OPEN_END.search(lines[first])) or lines[first].rstrip().endswith("{")
    closed = False  # the statement's block was closed (`}`)
    body_below = one_statement and below is not None and _width(below) > base
    # The last line kept: after a comma, a line at the statement's indentation is the next item of the list or call
    # the statement is in (HumanEval multi-line: `4: "Four",`, then `5: "Five",` … inside a dict).
    previous = lines[first]
    header = _opens_block(lines[first])
    block_comments = comment == "//"  # the C family: `/* … */`
    only_comments = _is_comment(lines[first], comment)  # the statement so far: comment lines only
    first_comment = first + 1  # the end of the first comment (its line, or its `/* … */`)
    for index in range(first + 1, len(lines)):
        line = lines[index]
        so_far = "\n".join(lines[first:index])
        if (strings and opens_multiline_string(strings, so_far)) or (block_comments and _in_block_comment(so_far)):
            kept = index + 1  # inside a string or a comment the text opened: its line, whatever its indentation
            if first_comment == index:
                first_comment = index + 1
            continue
        if is_blank(line):
            continue
        width = widths[index]
        stripped = line.strip()
        if only_comments and width == base:
            only_comments = _is_comment(line, comment)  # the code the comments introduce is the statement
            previous, header, kept = line, _opens_block(line), index + 1
            depth = open_brackets(line)
            opened = depth > 0 or bool(_OPEN_END.search(line)) or line.rstrip().endswith("{")
            continue
        continues = bool(_CONTINUES_EXPRESSION.match(stripped))
        if width > allowed:
            if not (opened or continues) or (body_below and header):
                break
            allowed = width
        elif one_statement:
            if closed or width < base:
                break
            sibling = previous.rstrip().endswith(",")
            if width == base and not (depth > 0 or sibling or _CONTINUES.match(stripped)):
                break
        previous = line
        depth += open_brackets(line)
        opened = depth > 0 or bool(_OPEN_END.search(line)) or line.rstrip().endswith("{")
        header = _opens_block(line)
        if one_statement and width == base and depth <= 0 and ONLY_CLOSING.fullmatch(stripped):
            closed = True  # the block is closed; only a line that reopens it (`} else {`) would go on
        elif width == base and not ONLY_CLOSING.fullmatch(stripped):
            closed = False
        if width < allowed and not opened:
            allowed = max(width, base if one_statement else 0)
        kept = index + 1
    if only_comments:  # comments and no code after them: the first comment, as a line of its own
        kept = min(kept, first_comment)
    if body_below and not _opens_block(lines[kept - 1]):
        kept = _through_header(lines, widths, kept, base)
    return "\n".join(lines[:kept]).rstrip()


#: How many more lines a statement may take to reach the header of the body below it (see `_through_header`).
HEADER_SEARCH_LINES = 3


def _through_header(lines: list[str], widths: list[int], kept: int, base: int) -> int:
    """The code below the cursor is deeper than the statement, so the hole ends with the header of that body
    (`while True:` above `f.append(...)`): when the statement kept is not one, the text is kept through the next line
    at the statement's indentation that is, if it comes within a few lines at that indentation (HumanEval/39/L10:
    `p = 1`, then `while p < 2:` above the existing loop body). Otherwise the one statement stays."""
    for index in range(kept, min(len(lines), kept + HEADER_SEARCH_LINES)):
        if is_blank(lines[index]):
            continue
        if widths[index] != base:
            break
        if _opens_block(lines[index]):
            return index + 1
    return kept


def _opens_block(line: str) -> bool:
    """The line ends with a block opener (`:` or `{`, a trailing comment aside is not understood)."""
    return line.rstrip().endswith((":", "{"))


#: A statement that declares local names: `x := …`, `a, b := …`, `var x =` (Go), `const x =`, `let x: T =` (JS/TS).
_NAMES = r"([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)"
_DECLARES_NAMES = re.compile(r"(?:(?:const|let|var|val|auto)\s+" + _NAMES + r"\s*(?::[^=]*)?=(?!=)|"
                             + _NAMES + r"\s*:=)")
#: Python's `x = …`, `a, b = …`, `x: T = …` (in a function: a local; elsewhere an attribute or a global, used anywhere).
_ASSIGNS_NAMES = re.compile(_NAMES + r"\s*(?::[^=]*)?=(?!=)")
_DEFINES_DESTRUCTURED = re.compile(r"(?:const|let|var)\s+[{\[]([^}\]=]*)[}\]]\s*(?::[^=]*)?=(?!=)")
#: `Type name = …;`, `final List<String> names = …;`, `Type name;` (Java, C#, C, TypeScript-free typed locals).
_DEFINES_TYPED = re.compile(r"(?:final\s+)?[A-Za-z_][\w.]*(?:<[^=;]*>)?(?:\[\])*\s+([A-Za-z_]\w*)\s*(?:=(?!=)|;)")
_NOT_A_TYPE = frozenset({"return", "throw", "new", "else", "case", "yield", "await", "delete", "typeof", "goto",
                         "package", "import", "export", "public", "private", "protected", "static", "var", "let",
                         "const"})
#: How many statements a definition may take to reach its use (see `_defined_unused`).
MAX_DEFINITION_STATEMENTS = 3


def defined_names(line: str, assignments: bool = False) -> set[str]:
    """The local names a statement's first line declares (empty for calls, returns, `self.x = …`, `a[i] = …`, and
    for `x = …` unless `assignments`: a Python function's locals)."""
    stripped = line.strip()
    match = _DEFINES_DESTRUCTURED.match(stripped)
    if match:
        return {name.split(":")[-1].strip() for name in match.group(1).split(",") if name.strip()} - {""}
    match = _DECLARES_NAMES.match(stripped) or (_ASSIGNS_NAMES.match(stripped) if assignments else None)
    if match:
        names = next(group for group in match.groups() if group)
        return {name.strip() for name in names.split(",")} - {"_"}
    match = _DEFINES_TYPED.match(stripped)
    if match and stripped.split(None, 1)[0] not in _NOT_A_TYPE:
        return {match.group(1)}
    return set()


def _declared(text: str, assignments: bool) -> set[str]:
    """The names the lines of `text` declare (not Python's assignments, which may name a local again)."""
    return set().union(*(defined_names(line) for line in text.split("\n"))) if not assignments else set()


def _unused(names: set[str], text: str) -> set[str]:
    return {name for name in names if not re.search(r"(?<![\w.])" + re.escape(name) + r"\b", text)}


def _with_uses(text: str, kept: str, line_prefix: str, scope: str, strings: tuple[str, ...],
               comment: str | None, assignments: bool) -> str:
    """`kept` (the first statement of `text`) and the model's next statements at its indentation, while what is
    kept defines a local name that neither the rest of it nor the code below the cursor (`scope`) uses: a variable
    is defined to be used, so where the code below never names it, its use is part of what is missing (real-code
    benchmark: `String action = array.getString(2);` shown alone where the hole went on to its use; a one-line hole
    `x := f()` above `use(x)` stays one line). At most `MAX_DEFINITION_STATEMENTS` statements, and none that
    declares a name the text has declared already (invalid code: a model repeating itself)."""
    base = _width(line_prefix + text.split("\n", 1)[0])
    for _ in range(MAX_DEFINITION_STATEMENTS - 1):
        lines = kept.split("\n")
        defined: set[str] = set()
        for index, line in enumerate(lines):
            if _width(line_prefix + line if index == 0 else line) == base:
                defined |= _unused(defined_names(line, assignments), "\n".join(lines[index + 1:]))
        if not defined or not _unused(defined, scope):
            return kept
        rest = text[len(kept):]
        if not rest.startswith("\n") or not rest.strip():
            return kept
        start = rest.lstrip("\n")
        if is_blank(start.split("\n", 1)[0]) or _width(start) != base:
            return kept
        following = _structure_end(start, "", True, None, strings, comment)
        if not following.strip() or defined_names(following.split("\n", 1)[0]) & _declared(kept, assignments):
            return kept  # nothing, or a second declaration of a name the text has declared: not valid code
        kept = kept + rest[:len(rest) - len(start)] + following
    return kept


def cut(text: str, mode: LineMode, ended: bool, line_prefix: str, line_suffix: str,
        below: str | None = None, strings: tuple[str, ...] = (), comment: str | None = None,
        scope: str | None = None, assignments: bool = False) -> str | None:
    """The situation's rule, for a model that did not end by itself (see the module docstring). `below` is the next
    line of code after the cursor's line; `strings` the language's multi-line string delimiters, `comment` its line
    comment."""
    if ended or mode == "block" or "\n" not in text:
        return text
    if mode == "line":
        return _first_line(text, line_suffix)
    kept = _structure_end(text, line_prefix, one_statement=mode == "statement", below=below, strings=strings,
                          comment=comment)
    if mode == "statement" and scope is not None and kept and not (below is not None and _width(below) > _width(
            line_prefix + text.split("\n", 1)[0])):
        kept = _with_uses(text, kept, line_prefix, scope, strings, comment, assignments)
    return kept or None


#: The code below the cursor that a definition's use is looked for in: up to the next top-level line.
SCOPE_LINES = 200


def scope_below(suffix_lines: list[str]) -> str:
    """The lines after the cursor's up to the first one at column 0 (the end of the top-level item the cursor is
    in; `}` included), at most `SCOPE_LINES`."""
    out = []
    for line in suffix_lines[1:SCOPE_LINES + 1]:
        if line.strip() and not line[0].isspace():
            out.append(line)
            break
        out.append(line)
    return "\n".join(out)


def cut_to_line_mode(text: str, ctx: PostprocessContext) -> str | None:
    """The filter form of `cut`: the first filter before caching."""
    language = default_table().lookup(ctx.language)
    scope = scope_below(ctx.suffix_lines) if ctx.line_mode == "statement" and ctx.line_prefix.strip(" \t") == "" \
        and ctx.line_prefix else None
    assignments = scope is not None and ctx.language == "python" and in_python_function(ctx.prefix_lines)
    return cut(text, ctx.line_mode, ctx.model_ended, ctx.line_prefix, ctx.line_suffix,  # type: ignore[arg-type]
               ctx.next_line, language.multiline_strings, language.line_comment, scope, assignments)


_PY_HEADER = re.compile(r"(?:async\s+)?(def|class)\b")


def in_python_function(prefix_lines: list[str]) -> bool:
    """The cursor's line (the last of `prefix_lines`) is in a function's body: the nearest enclosing `def`/`class`
    header above it (each shallower than the last line seen) is a `def`."""
    level = _width(prefix_lines[-1]) if prefix_lines else 0
    for line in reversed(prefix_lines[:-1]):
        if not line.strip() or _width(line) >= level:
            continue
        level = _width(line)
        match = _PY_HEADER.match(line.strip())
        if match:
            return match.group(1) == "def"
        if level == 0:
            return False
    return False
