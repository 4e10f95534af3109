"""A generic type rewritten around its arguments (`Optional[int]` → `int | None`, `Union[str, bytes]` → `str |
bytes`, `Array<Item>` → `Item[]`): the same rewrite at the next use of that generic, whatever its arguments.

The literal rule repeats the edited text only where it stands again verbatim: after `Optional[asyncio.
AbstractEventLoop]` → `asyncio.AbstractEventLoop | None` it went to the next `Optional[asyncio.AbstractEventLoop]`,
past the `Optional[int]` the user rewrites next (a typing modernisation goes top-down through every generic of the
kind). The edit is read as a template: the generic's arguments are its holes, each of which the new text must hold
once, whole, and the rest of the new text (`| None`, `[]`) may hold no name but a literal or a keyword, so that the
template says how to rewrite any use of the generic, never one place's own code. Only square and angle brackets: a
call's arguments (`str(x)` → `x`) are values of that place, not a type's parts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.next_edit.types import TextEdit

from ..lexical import CODE
from .last_edit import Substitution
from .next_occurrence import ADJACENT_LINES, MAX_RUN_LINES, _line_breaks
from .same_role import _Lexed
from .tokens import KEYWORDS, LITERALS, _is_name, _tokens

_CLOSER = {"[": "]", "<": ">"}
_GENERIC = re.compile(r"([^\W\d][\w.]*)([\[<])")
#: The most arguments a template holds (`Union[a, b, c, d]`); more are data, not a type.
MAX_HOLES = 6


@dataclass(frozen=True)
class Template:
    """`head` + opener + arity arguments + closer is rewritten as `pieces[0] + arg[order[0]] + pieces[1] + ...`."""

    head: str
    opener: str
    arity: int
    pieces: tuple[str, ...]
    order: tuple[int, ...]
    #: The arguments joined by one separator, in order (`Union[a, b]` → `a | b`): any number of them, 2 or more.
    joined: bool = False

    def fits(self, args: list[str]) -> bool:
        return len(args) >= 2 if self.joined else len(args) == self.arity

    def apply(self, args: list[str]) -> str:
        if self.joined:
            return self.pieces[1].join(args)
        out = [self.pieces[0]]
        for index, piece in zip(self.order, self.pieces[1:]):
            arg = args[index]
            if piece.startswith("[") and _compound(arg):
                arg = f"({arg})"  # `Array<A | B>` is `(A | B)[]`: `A | B[]` would be another type
            out += [arg, piece]
        return "".join(out)


def _compound(arg: str) -> bool:
    """Whether `arg` is more than one operand outside its brackets (`A | B`, `() => void`)."""
    depth = 0
    for c in arg:
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif depth == 0 and c in " |&=":
            return True
    return False


def _arguments(text: str, start: int, opener: str) -> tuple[list[str], int] | None:
    """The top-level arguments of the bracket opened at `text[start]` (stripped) and the offset after its closer;
    None when it does not close on its line or holds a string (a subscript of data, not a type)."""
    closer = _CLOSER[opener]
    depth, args, at = 0, [], start + 1
    for i in range(start + 1, min(len(text), start + 1000)):
        c = text[i]
        if c in "\n\r'\"`":
            return None
        if c in "([{" or c == opener:
            depth += 1
        elif c in ")]}" or (c == closer and text[i - 1] != "="):  # `() => void` holds no closer
            if depth == 0:
                if c != closer:
                    return None
                args.append(text[at:i].strip())
                return (args, i + 1) if all(args) else None
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[at:i].strip())
            at = i + 1
    return None


def _whole(text: str, part: str) -> list[int]:
    """Where `part` stands in `text` with token boundaries on both sides."""
    spots, i = [], text.find(part)
    while i >= 0:
        end = i + len(part)
        if not (i > 0 and re.match(r"[\w$]", text[i - 1]) and re.match(r"[\w$]", part[0])) \
                and not (end < len(text) and re.match(r"[\w$]", text[end]) and re.match(r"[\w$]", part[-1])):
            spots.append(i)
        i = text.find(part, i + 1)
    return spots


def template(sub: Substitution) -> Template | None:
    """The template `sub` is an instance of, or None (see the module docstring)."""
    if sub.name or sub.region != CODE:
        return None
    found = _GENERIC.match(sub.old)
    if found is None:
        return None
    head, opener = found.groups()
    parsed = _arguments(sub.old, found.end() - 1, opener)
    if parsed is None or parsed[1] != len(sub.old):
        return None
    args = parsed[0]
    if len(args) > MAX_HOLES or len(set(args)) != len(args):
        return None
    places = []
    for index, arg in enumerate(args):
        spots = _whole(sub.new, arg)
        if len(spots) != 1:
            return None
        places.append((spots[0], index, arg))
    places.sort()
    pieces, order, at = [], [], 0
    for spot, index, arg in places:
        if spot < at:
            return None  # arguments that overlap in the new text
        pieces.append(sub.new[at:spot])
        order.append(index)
        at = spot + len(arg)
    pieces.append(sub.new[at:])
    frame = "".join(pieces)
    if not frame.strip():
        return None  # only the arguments kept (`items[i]` → `i`): a subscript of data unwrapped, no type rewritten
    if any(_is_name(t) and t not in LITERALS and t not in KEYWORDS for t in _tokens(frame)):
        return None  # the new text names something of its own: that place's code, not the generic's rewrite
    joined = len(args) >= 2 and order == sorted(order) and pieces[0] == pieces[-1] == "" \
        and len(set(pieces[1:-1])) == 1
    return Template(head, opener, len(args), tuple(pieces), tuple(order), joined)


def rewritten(shape: Template, text: str, cursor: int, lexed: _Lexed) -> TextEdit | None:
    """The next use of the generic of `shape` after `cursor` in code, with arguments it fits, rewritten by it (with
    the uses on the lines just below it, as one hunk); None when none follows."""
    pattern = re.compile(r"(?<![\w$.])" + re.escape(shape.head) + re.escape(shape.opener))
    chosen: list[tuple[int, int, str]] = []
    for found in pattern.finditer(text, cursor):
        start = found.start()
        if chosen and start < chosen[-1][1]:
            continue  # a use inside the arguments of one already rewritten
        parsed = _arguments(text, found.end() - 1, shape.opener)
        if parsed is None or not shape.fits(parsed[0]) or lexed.kind_at(start) != CODE:
            continue
        if chosen and (_line_breaks(text, chosen[-1][1], start) > ADJACENT_LINES
                       or _line_breaks(text, chosen[0][0], start) >= MAX_RUN_LINES):
            break
        chosen.append((start, parsed[1], shape.apply(parsed[0])))
    if not chosen:
        return None
    begin, pieces, at = chosen[0][0], [], chosen[0][0]
    for start, end, new in chosen:
        pieces += [text[at:start], new]
        at = end
    return TextEdit(begin, at, "".join(pieces))
