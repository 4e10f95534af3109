"""Cut an item after a jump (`return`, `raise`, `throw`, `break`, `continue`) that the item follows with more code
in the same block: that code can never run, so the model is writing past the block's last statement (HumanEval/36:
`return ans` and then the function's doctests again, kept because nothing else marks where the body ends).

Only the next non-blank line after the jump is looked at, and only at the jump's own indentation: a shallower line
closes or reopens the block (`}`, `else:`, `case 2:`, `end`) and runs, a deeper one continues the jump's statement."""

from __future__ import annotations

import re

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import indent_width, is_blank, unpaired_tokens

_JUMP = re.compile(r"(?:return|raise|throw|break|continue)\b")
#: Lines that still run (or are declared) after a jump at their own indentation: JavaScript hoists function
#: declarations (code calls them above their definition), and some styles do not indent switch or goto labels.
_STILL_REACHED = re.compile(r"(?:(?:async\s+)?function\b|case\b|default\b|[A-Za-z_]\w*:(?!:)\s*(?:$|//|#))")
#: Languages where `return x if cond` is a conditional jump (a statement modifier).
_MODIFIER_LANGUAGES = frozenset({"ruby", "perl", "crystal", "coffeescript"})
_MODIFIER = re.compile(r"\b(?:if|unless|while|until)\b")
#: A line ending like this goes on in the next one (an operator, an open argument list, a line continuation).
_CONTINUES = re.compile(r"(?:[\\,+\-*/%&|^=<>(\[{.?:]|\band|\bor|\bnot)\s*$")


def _ends_block(line: str, language: str) -> bool:
    """`line` is a whole jump statement that leaves the block unconditionally."""
    code = line.strip()
    if not _JUMP.match(code) or _CONTINUES.search(code) or unpaired_tokens(code):
        return False
    return not (language in _MODIFIER_LANGUAGES and _MODIFIER.search(code))


def cut_unreachable(item: str, ctx: PostprocessContext) -> str | None:
    """Keep the item up to a jump that the next line of code at the same indentation follows (dead code)."""
    lines = item.split("\n")
    if len(lines) < 2:
        return item
    full = [ctx.line_prefix + lines[0]] + lines[1:]  # the first line as the document will show it
    for index, line in enumerate(full[:-1]):
        if not _ends_block(line, ctx.language):
            continue
        following = next((i for i in range(index + 1, len(full)) if not is_blank(full[i])), None)
        if following is None:
            return item
        after = full[following]
        if indent_width(after) == indent_width(line) and not _STILL_REACHED.match(after.strip()):
            return "\n".join(lines[:index + 1])
    return item
