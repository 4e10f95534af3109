"""No dangling endings: a suggestion never ends on an indented empty line, nor in a block header whose body it does
not write (the real-code quality benchmark found `else:` then an indented empty line, left where a cut fell after a
header). Accepting such an item leaves code that does not parse and a cursor the user has to move back.

A header stays when its body is already there: the next line of code below the cursor is deeper than it (the hole
is the header above an existing body). A one-line item stays too: a header alone is what the user is writing on
that line, its body comes next. When the last line closes a block and reopens one (`} else {`), its closer is kept."""

from __future__ import annotations

import re

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import LEADING_CLOSERS, indent_width, is_blank

#: A line that opens a body: `:` at its end (Python), `{` (brace languages), `do`/`then` (Ruby, Lua, shell).
_HEADER = re.compile(r"(?::|\{|\bdo|\bthen)\s*$")


def _opens_body(line: str) -> bool:
    code = line.rstrip()
    return bool(_HEADER.search(code)) and not code.lstrip().startswith(("#", "//", "*", "/*"))


def drop_dangling_end(item: str, ctx: PostprocessContext) -> str | None:
    """The item without blank lines at its end and without a last header whose body it does not write."""
    lines = item.split("\n")
    while len(lines) > 1 and is_blank(lines[-1]):
        lines.pop()  # an indented empty line (or a few) at the end
    if len(lines) < 2:
        return "\n".join(lines)
    below = ctx.next_line
    while len(lines) > 1:
        last = lines[-1]
        width = indent_width(last)
        if not _opens_body(last) or (below is not None and indent_width(below) > width):
            break
        closers = LEADING_CLOSERS.match(last)
        if closers:
            lines[-1] = closers.group(0)
            break
        lines.pop()
        while len(lines) > 1 and is_blank(lines[-1]):
            lines.pop()
    return "\n".join(lines)
