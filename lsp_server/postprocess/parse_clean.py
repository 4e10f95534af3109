"""Parse-clean cut: an item that makes the code around the cursor parse worse than it does without the item is cut
back to its longest line-boundary prefix that does not.

"Worse" is counted by tree-sitter (the `syntax` extra) on a bounded window: more error and missing nodes in
prefix + item + suffix than in prefix + suffix, or a clause that cannot follow where it stands — `else:` above the
`elif` below, `except` after `finally`, a second `default:` in one switch (a grammar accepts that one, so it is
counted apart). The real-code quality benchmark found these written by the default model, which does not see the
code below: `if … return text` / `else: …` above the file's `elif isinstance(text, Text):`; an `elif`/`else` chain
completed above the `else:` that follows.

The first line of an item always stays: it is what the user is writing on the cursor's line, and a line being typed
is unfinished by nature. Without a grammar for the language, or past the time budget, the item is kept as it is (the
other filters still apply): a cut is only made when the parser has shown that it helps. So an item that no shorter
prefix makes parse better, and that parses once what it leaves open is closed (a docstring or a call the token limit
cut off), is unfinished, not wrong: it stays whole rather than shrink to its first line, which is as unfinished and
shorter (real-code benchmark: a docstring shown as its first line, an `if (…) {` shown without the body the model
wrote).

A prefix that leaves a block open which the item went on to close is not clean either: its block takes the closer of
the code around it, and tree-sitter reports the closer missing at the window's end, far from the item, where it was
not counted (real-code benchmark: a Go `if … {` and one body line shown, the `}` and a wrong `} else if …:` cut
away). Problems at the window's end count too, and a cut before a line that starts with closers (`} else if …`)
keeps those closers when that parses clean: `if … {`, its body and `}`."""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Callable

from engine.languages import default_table, opens_multiline_string

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.replace_range import replace_range_end
from lsp_server.postprocess.textutil import LEADING_CLOSERS, indent_width
from lsp_server.syntax import extra_defaults, parser_for

log = logging.getLogger(__name__)

#: The window parsed: lines before the cursor and after it. Enough for the statement the cursor is in and the clauses
#: around it; small enough that one parse costs about a millisecond.
LINES_BEFORE, LINES_AFTER = 40, 15
#: ... and at most this many characters of each (a minified or generated file has few, very long lines).
CHARS_BEFORE, CHARS_AFTER = 3000, 1200
#: Problems count from the line above the cursor's to this many lines after the item: where an item's text goes
#: wrong or clashes with the code that follows it.
LINES_LOOKED_AT = 6
#: Parsing stops after this much time per item; the item is then kept whole. One item needs two parses when it is
#: clean, one per line more when it is cut.
BUDGET_MS = 15.0
#: Code around the cursor that already parses with problems is a line being typed, a file the grammar does not know
#: (mislabelled, a template language, newer syntax), or already broken: its counts say nothing about the item.
MAX_BASELINE_PROBLEMS = 0


def _problems(tree: Any, language: str, low: int, high: int) -> int:
    """Error and missing nodes that reach into the byte range `low`-`high` (only subtrees that report an error are
    walked), plus the `default` labels there of a switch that already has one. Problems elsewhere are the window's
    edges cutting constructs in two, the same with and without the item."""
    count = _error_nodes(tree, lambda node: node.start_byte <= high and node.end_byte >= low)
    return count + extra_defaults(language, tree.root_node, low, high)


def _error_nodes(tree: Any, where: Callable[[Any], bool]) -> int:
    """Error and missing nodes for which `where` holds (only subtrees that report an error are walked)."""
    count = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if (node.type == "ERROR" or node.is_missing) and where(node):
            count += 1
        if node.has_error:
            stack.extend(node.children)
    return count


def _problems_from(tree: Any, low: int) -> int:
    """Error and missing nodes that start at byte `low` or after it: at the window's end, where a block the item
    leaves open takes the closer that belonged to the code around it (tree-sitter reports the closer missing there)."""
    return _error_nodes(tree, lambda node: node.start_byte >= low)


#: What a line that closes a construct starts with: it starts no code of its own.
_CLOSERS = (")", "]", "}", "end")
#: A line that starts inside a comment or a string rather than at code (`* text`, `// text`, a docstring's prose).
_NOT_CODE_START = re.compile(r"\s*(?:[*#]|//|/\*|--|\"\"\"|\'\'\'|$)")


def _starts_code(line: str) -> bool:
    return not _NOT_CODE_START.match(line) and not line.lstrip().startswith(_CLOSERS)


def _head_lines(lines: list[str]) -> list[str]:
    """The window's lines before the cursor: from the shallowest line there that starts code (a statement or a
    declaration, not a closer or a comment), after the header lines of the constructs it stands in (found further
    up, each shallower than the last: a constructor parses only inside its class)."""
    window = len(lines) - min(len(lines), LINES_BEFORE)
    best, width = window, None
    for index in range(window, len(lines) - 1):
        if not _starts_code(lines[index]):
            continue
        indent = indent_width(lines[index])
        if width is None or indent < width:
            best, width = index, indent
            if indent == 0:
                break
    headers: list[str] = []
    level = width if width is not None else 0
    for index in range(best - 1, -1, -1):
        if level == 0:
            break
        line = lines[index]
        if _starts_code(line) and indent_width(line) < level:
            headers.append(line)
            level = indent_width(line)
    return headers[::-1] + lines[best:]


def _tail_lines(lines: list[str]) -> list[str]:
    """The window's lines from the cursor on: the lines looked at, then up to the last line that starts code at the
    shallowest indentation (so the parse ends between statements rather than half-way through one)."""
    lines = lines[:LINES_AFTER + 1]
    end, width = len(lines), None
    for index in range(LINES_LOOKED_AT + 1, len(lines)):
        if _starts_code(lines[index]) and (width is None or indent_width(lines[index]) <= width):
            end, width = index, indent_width(lines[index])
    return lines[:end]


_PAIRS = {"(": ")", "[": "]", "{": "}"}
#: Where brackets do not count: string literals on one line, `/* … */` comments.
_ONE_LINE_STRING = re.compile(r"\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)


def unclosed_brackets(text: str, line_comment: str | None, strings: tuple[str, ...] = ()) -> str:
    """The closers of the brackets `text` leaves open, innermost first (`})` for `f(() => {`), or "" when its
    brackets do not pair up (a bracket in a construct this scan does not understand). Strings on one line, the
    language's multi-line strings, line comments and `/* … */` comments do not count."""
    for delimiter in strings:
        quoted = re.escape(delimiter)
        text = re.sub(quoted + r".*?(?:" + quoted + r"|\Z)", " ", text, flags=re.DOTALL)
    text = _BLOCK_COMMENT.sub(" ", text)
    stack: list[str] = []
    for line in text.split("\n"):
        line = _ONE_LINE_STRING.sub(" ", line)
        if line_comment and line_comment in line:
            line = line[:line.index(line_comment)]
        for char in line:
            if char in _PAIRS:
                stack.append(_PAIRS[char])
            elif char in ")]}":
                if not stack or stack.pop() != char:
                    return ""
    return "".join(reversed(stack))


def _closing(item: str, language_id: str) -> str:
    """What would finish an item the token limit cut off: the delimiter of a multi-line string it leaves open, then
    the closers of its open brackets, each on a line of its own ("" when its brackets do not pair up)."""
    language = default_table().lookup(language_id)
    end = ""
    if language.multiline_strings and opens_multiline_string(language.multiline_strings, item):
        delimiter = next(d for d in language.multiline_strings if item.count(d) % 2)
        end = delimiter
        item = item + delimiter
    closers = unclosed_brackets(item, language.line_comment, language.multiline_strings)
    return end + "".join("\n" + closer for closer in closers)


def _window(ctx: PostprocessContext) -> tuple[str, str, str]:
    """The code parsed around the item: the head before it, the tail after it, and the closers of the blocks and
    brackets the window leaves open (each on a line of its own, "" when it leaves none): a window of a brace language
    ends inside the function and class it starts in, and without them the code around the cursor parsed with an error
    over all of it, so that no item could be judged and the cut was off (real-code benchmark: a third of the tune
    split's tasks, most in TypeScript)."""
    head = "\n".join(_head_lines(ctx.prefix_lines))
    tail = "\n".join(_tail_lines(ctx.suffix_lines))
    if len(head) > CHARS_BEFORE:
        start = head.find("\n", len(head) - CHARS_BEFORE)
        head = head[start + 1:] if start >= 0 else head[-CHARS_BEFORE:]
    if len(tail) > CHARS_AFTER:
        end = tail.rfind("\n", 0, CHARS_AFTER)
        tail = tail[:end] if end > 0 else tail[:CHARS_AFTER]
    language = default_table().lookup(ctx.language)
    closers = unclosed_brackets(head + tail, language.line_comment, language.multiline_strings)
    return head, tail, "".join("\n" + closer for closer in closers)


def cut_parse_errors(item: str, ctx: PostprocessContext, clock: Callable[[], float] = time.perf_counter) -> str | None:
    """The item, or its longest line-boundary prefix that parses no worse than the code without it (see the module
    docstring); the first line always stays."""
    if "\n" not in item:
        return item
    parser = parser_for(ctx.language)
    if parser is None:
        return item
    started = clock()
    head, tail, closing = _window(ctx)

    line_start = head.rfind("\n", 0, max(0, head.rfind("\n"))) + 1  # the line above the cursor's
    low = len(head[:line_start].encode("utf-8", "surrogatepass"))

    def problems(middle: str) -> tuple[int, int]:
        """(problems near the item, problems at the window's end: in the closers added to it, else on its last
        line)."""
        # The editor's auto-closed brackets that the item will replace (`replace_range_end`) are not doubled.
        rest = tail[replace_range_end(middle, ctx):] if middle else tail
        ahead = "\n".join(rest.split("\n", LINES_LOOKED_AT + 1)[:LINES_LOOKED_AT + 1])
        high = len((head + middle + ahead).encode("utf-8", "surrogatepass"))
        code = (head + middle + rest).encode("utf-8", "surrogatepass")
        end = len(code) if closing else code.rfind(b"\n") + 1
        tree = parser.parse(code + closing.encode("utf-8"))
        return _problems(tree, ctx.language, low, high), _problems_from(tree, max(high + 1, end))

    try:
        baseline = problems("")

        def clean(middle: str) -> bool:
            near, end = problems(middle)
            return near <= baseline[0] and end <= baseline[1]

        if baseline[0] > MAX_BASELINE_PROBLEMS or clean(item):
            return item
        lines = item.split("\n")
        for keep in range(len(lines) - 1, 0, -1):
            if (clock() - started) * 1000.0 > BUDGET_MS:
                log.debug("parse-clean: over its %.0f ms budget; item kept", BUDGET_MS)
                return item
            candidate = "\n".join(lines[:keep])
            if not candidate.strip():
                continue
            closers = LEADING_CLOSERS.match(lines[keep])
            if closers and lines[keep].strip() != closers.group(0).strip():
                closed = candidate + "\n" + closers.group(0)
                if clean(closed):
                    return closed
            if clean(candidate):
                return candidate
        return item if clean(item + _closing(item, ctx.language)) else lines[0]
    except Exception as exc:  # a parser problem never costs the suggestion
        log.debug("parse-clean: tree-sitter failed (%s); item kept", exc)
        return item
