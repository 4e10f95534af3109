"""Limit an item to the block being completed, by indentation."""

from __future__ import annotations

import re

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import indent_width, is_blank, is_block_closing, is_block_opening


# Only these lines close the block being completed (`}`, `});`, `end`, `</div>`), and only these reopen it after a
# closer (`} else {`, `else:`, `except E:`): any other shallower line is new code from outside the block (found by the
# cut simulation: a model running on with a statement of the enclosing block kept it as a "closing line").
_CLOSER = re.compile(r"[)\]}]|end\b|</")
_REOPENER = re.compile(r"(?:else|elif|except|finally|catch|rescue|ensure)\b")


def _scope(lines: list[str], detect: list[str], ctx: PostprocessContext) -> tuple[int, bool, bool] | None:
    """(indent limit, whether one closing line below the limit may be kept, whether lines that close and reopen the
    block may), or None when there is no reference."""
    reference = next((line for line in reversed(ctx.prefix_lines) if not is_blank(line)), None)
    first_in_item = next((i for i, line in enumerate(lines) if not is_blank(line)), None)
    if reference is None or first_in_item is None:
        return None
    reference_indent = indent_width(reference)
    item_indent = indent_width(detect[first_in_item]) if first_in_item else indent_width(detect[0])
    allow_closing = True
    if not is_blank(lines[0]) and not is_blank(ctx.line_prefix):
        # Continuing the current statement: anything back at its indentation is a new statement, unless the line
        # ends with a comma (an item of a list, struct or call whose siblings follow at the same indentation).
        limit = reference_indent if detect[0].rstrip().endswith(",") else reference_indent + 1
        allow_closing = is_block_opening(detect, 0)
    elif item_indent > reference_indent:
        limit = reference_indent + 1  # the item opens a deeper block
    else:
        # A new statement at the same level, or at a shallower one after a nested block ended above the cursor (the
        # item's own first line sets the level: the cut simulation found blocks written after a deeper line cut to
        # their first lines when the line above set it).
        limit = item_indent
    # A closing or reopening line belongs to the item only when the code after the cursor is outside the block too:
    # when that code goes on inside the block, the hole ends inside it (HumanEval: a prefix-only model finished the
    # `elif` body at the cursor and wrote a second `elif c == ')':` above the rest of the first one's body). A
    # reopener that ends the item, above code deeper than itself, is the exception (`_opens_the_code_below`).
    block_ends_here = ctx.next_line is None or indent_width(ctx.next_line) < limit
    return limit, allow_closing and block_ends_here, block_ends_here


def _opens_the_code_below(lines: list[str], index: int, ctx: PostprocessContext) -> bool:
    """The reopener at `index` is the item's last line and the code below the cursor is deeper: that code is its
    body (HumanEval multi-line: `...append("C")` + `elif gpa > 1.3:` above the `elif`'s existing body)."""
    if ctx.next_line is None or any(not is_blank(line) for line in lines[index + 1:]):
        return False
    stripped = lines[index].strip()
    opens = _REOPENER.match(stripped) is not None or stripped.endswith("{")  # not a bare `}`
    return opens and indent_width(ctx.next_line) > indent_width(lines[index])


_CLOSE_AND_REOPEN = re.compile(r"([)\]}]+)\s*" + _REOPENER.pattern)


def _reopens_what_the_code_below_closes(line: str, ctx: PostprocessContext) -> bool:
    """`}, () => {` or `}).then(() => {` above code that closes the same block at the same indentation (`},`,
    `});`): the model closed the block the cursor is in and opened another callback or argument, which the code below
    would then close; what is missing is inside the cursor's block (real-code benchmark, rxjs: `taking = true;` shown
    with an invented second callback). A clause (`} else {`, `} catch (e) {`) is kept: adding a branch is a hole a
    user writes."""
    below = ctx.next_line
    if below is None or _CLOSE_AND_REOPEN.match(line.strip()) is not None:
        return False
    return indent_width(below) == indent_width(line) and _CLOSER.match(below.strip()) is not None


def _chain_goes_on_below(lines: list[str], ctx: PostprocessContext) -> str | None:
    """Only the closer, when the item's first line closes the block and opens another clause (`} else if (…) {`)
    while the code below the cursor already goes on with the next clause at that indentation (`else if (…) {` on
    its own line): the model is writing branches the chain already has (SantaCoder JavaScript, four tasks whose
    hole was the `}` above an existing `else`). Also when the item's `}` and its `else` are on separate lines."""
    below = ctx.next_line
    first = ctx.line_prefix + lines[0]
    if below is None or indent_width(below) != indent_width(first) or not _REOPENER.match(below.strip()):
        return None
    match = _CLOSE_AND_REOPEN.match(first.strip())
    if match is not None:
        closers = match.group(1)
        return lines[0][:lines[0].index(closers) + len(closers)] if closers in lines[0] else None
    # the same in the style that puts the clause on the next line: `}`, then `else if (…) {`
    after = next((line for line in lines[1:] if line.strip()), None)
    if re.fullmatch(r"[)\]}]+;?", first.strip()) and after is not None \
            and indent_width(after) == indent_width(first) and _REOPENER.match(after.strip()):
        return lines[0]
    return None


def limit_scope(text: str, ctx: PostprocessContext) -> str | None:
    """A model that has finished the block at the cursor keeps writing the next function, the next test, the rest of
    the file. Cut at the first line indented less than the block being completed, keeping that line when it closes
    the block (`}`) and the code after the cursor does not close it already, and continuing through lines that close
    and reopen (`} else {`). In Python a dedented line after a blank line starts something new and is never kept.
    An item whose model went on to write the code below the cursor (`ctx.rejoined`) is the whole hole: not cut. An
    item that closes the block and opens a clause the code below already opens keeps only its closer."""
    lines = text.split("\n")
    only_closer = _chain_goes_on_below(lines, ctx)
    if only_closer is not None:
        return only_closer
    if len(lines) < 2 or ctx.rejoined:
        return text
    detect = [ctx.line_prefix + lines[0], *lines[1:]]
    scope = _scope(lines, detect, ctx)
    if scope is None:
        return text
    limit, allow_closing, allow_reopening = scope
    index = 1
    reopened: set[int] = set()  # lines kept only because they close and reopen (`} else {`)
    while index < len(lines):
        line = lines[index]
        if is_blank(line) or indent_width(line) >= limit:
            index += 1
            continue
        closer = _CLOSER.match(line.strip()) is not None
        reopener = is_block_closing(detect, index) and (closer or _REOPENER.match(line.strip()) is not None)
        if reopener and is_block_opening(detect, index) and _reopens_what_the_code_below_closes(line, ctx):
            break
        if reopener and ((allow_reopening and is_block_opening(detect, index))
                         or _opens_the_code_below(lines, index, ctx)):
            reopened.add(index)
            index += 1
            continue
        if allow_closing and closer and (ctx.language != "python" or not is_blank(lines[index - 1])):
            index += 1
        break
    if index >= len(lines):
        return text
    # A reopening line whose body was just cut would leave `} else {` dangling: it goes too.
    kept = lines[:index]
    while len(kept) > 1 and (is_blank(kept[-1]) or len(kept) - 1 in reopened):
        kept.pop()
    return "\n".join(kept).rstrip()
