"""Re-indent an item to the document's (or the editor's) indentation, and fix odd indents."""

from __future__ import annotations

from lsp_server.postprocess.context import PostprocessContext
from lsp_server.postprocess.textutil import detect_indent_unit, indent_width, is_blank, leading_ws


def _convert_line(line: str, source: str, target: str) -> str:
    """Replace whole `source` units of leading indentation by `target` units; a remainder (alignment) is kept."""
    ws = leading_ws(line)
    if source == "\t":
        levels = len(ws) - len(ws.lstrip("\t"))
        remainder = ws[levels:]
    else:
        spaces = len(ws) - len(ws.lstrip(" "))
        levels, extra = divmod(spaces, len(source))
        remainder = " " * extra + ws[spaces:]
    return target * levels + remainder + line[len(ws):]


def reindent(text: str, ctx: PostprocessContext) -> str | None:
    """A model indents with whatever its training data used; the user's file decides. Convert when the item's unit
    differs from the target unit (the document's, else the editor's) and the mismatch is certain: tabs against
    spaces, or, when the document shows no indentation of its own (a new file, so the editor's setting is all there
    is), space steps that are not whole numbers of the target unit (2-space steps under a 4-space setting; 4-space
    steps under a 2-space setting could be double nesting and are left alone, which also keeps this idempotent).
    Space-to-space changes inside an indented document are left alone: the model saw the document and a wrong guess
    would shift whole blocks. The first line is only touched when the cursor is in the indentation (otherwise it
    continues text already on the line)."""
    lines = text.split("\n")
    target = ctx.target_indent_unit
    prefix_blank = is_blank(ctx.line_prefix)
    detect = [ctx.line_prefix + lines[0], *lines[1:]]
    # The cursor line's indentation is the document's, not the model's: it only anchors the first step, and only
    # when it is spaces on the target grid (an odd cursor line would invent a unit; tabs do not compare with spaces).
    if ctx.line_prefix:
        base = leading_ws(detect[0])
        on_grid = not base or (target != "\t" and set(base) == {" "} and len(base) % len(target) == 0)
        source = detect_indent_unit(lines[1:], base_width=len(base) if on_grid else None, prefer=target)
    else:
        source = detect_indent_unit(lines, prefer=target)
    if source is None or source == target:
        return text
    kinds_differ = (source == "\t") != (target == "\t")
    if not kinds_differ and ctx.document_indent_unit is not None:
        return text
    converted = [_convert_line(line, source, target) if not is_blank(line) else line for line in lines[1:]]
    first = lines[0]
    if prefix_blank and not is_blank(first) and ctx.line_prefix == ctx.line_prefix.replace(source, target):
        # The cursor's own indentation is already in the target unit (the editor put it there): convert the whole
        # visual line, then give back what is already typed.
        whole = _convert_line(ctx.line_prefix + first, source, target)
        if whole.startswith(ctx.line_prefix):
            first = whole[len(ctx.line_prefix):]
    return "\n".join([first, *converted])


def fix_odd_indent(text: str, ctx: PostprocessContext) -> str | None:
    """Tokenizers make models emit a stray space after the indentation the cursor already sits in, so the item
    lands one or two columns off. When the cursor is in a line's indentation, at a whole number of space units, and
    the item's first line ends up off the unit grid by r columns: if every non-blank line of the item is off by the
    same r, the whole item was shifted and each line loses r spaces; otherwise only the first line does. Lines on the
    grid are never moved, so deliberate alignment is kept."""
    unit = ctx.target_indent_unit
    if unit == "\t" or not is_blank(ctx.line_prefix) or "\t" in ctx.line_prefix:
        return text
    size = len(unit)
    if len(ctx.line_prefix) % size:
        return text
    lines = text.split("\n")
    first_extra = indent_width(lines[0])
    if lines[0][:first_extra].strip(" ") or is_blank(lines[0]):
        return text
    shift = (len(ctx.line_prefix) + first_extra) % size
    if shift == 0:
        return text
    others = [line for line in lines[1:] if not is_blank(line)]
    whole_block = all(
        not line[: indent_width(line)].strip(" ") and indent_width(line) >= shift and indent_width(line) % size == shift
        for line in others
    )
    fixed = [lines[0][shift:]]
    for line in lines[1:]:
        fixed.append(line[shift:] if whole_block and not is_blank(line) else line)
    return "\n".join(fixed)
