"""A generic type rewritten around its arguments is rewritten so at its next use, whatever its arguments
(lsp_server/next_edit/propagate/template.py)."""

from __future__ import annotations

from engine.next_edit.types import EditEvent
from lsp_server.next_edit.propagate import propagate, substitution
from lsp_server.next_edit.propagate.template import template


def _after(old: str, new: str, text: str, cursor: int = 0, language: str = "python") -> str | None:
    edit = propagate(EditEvent("a.py", 0, old, new), text, cursor, language)
    return None if edit is None else text[:edit.start] + edit.text + text[edit.end:]


def _template(old: str, new: str, language: str = "python"):
    sub = substitution(old, new, language)
    assert sub is not None
    return template(sub)


def test_optional_rewritten_goes_to_the_next_optional_whatever_it_wraps():
    """The literal rule went past `Optional[int]` to the next `Optional[asyncio.AbstractEventLoop]`."""
    text = ("def f(\n    loop: asyncio.AbstractEventLoop | None = None,\n    *,\n    port: Optional[int] = None,\n):\n"
            "    pass\n\n\ndef g(loop: Optional[asyncio.AbstractEventLoop] = None):\n    pass\n")
    after = _after("    loop: Optional[asyncio.AbstractEventLoop] = None,\n",
                   "    loop: asyncio.AbstractEventLoop | None = None,\n", text, text.index("None,"))
    assert after == text.replace("port: Optional[int]", "port: int | None")


def test_uses_on_the_next_lines_are_one_edit_and_nested_generics_keep_their_arguments():
    text = ("x: int | None = None\n\n"
            "a: Optional[Dict[str, Any]] = None\nb: Optional[List[int]] = None\n\nc: Optional[str] = None\n")
    after = _after("x: Optional[int] = None\n", "x: int | None = None\n", text, 1)
    assert after == text.replace("Optional[Dict[str, Any]]", "Dict[str, Any] | None").replace(
        "Optional[List[int]]", "List[int] | None")


def test_a_union_of_two_rewritten_rewrites_a_union_of_any_number():
    text = "def f(a: int | str) -> None: ...\ndef g(value: Union[datetime, str, float, int]) -> int: ...\n"
    after = _after("def f(a: Union[int, str]) -> None: ...\n", "def f(a: int | str) -> None: ...\n", text, 10)
    assert after == text.replace("Union[datetime, str, float, int]", "datetime | str | float | int")


def test_a_typescript_array_type_becomes_the_bracket_form_in_brackets_where_its_type_needs_them():
    text = "let a: Item[] = [];\nfunction f(xs: Array<Map<string, number>>, g: Array<() => void>) {}\n"
    after = _after("let a: Array<Item> = [];\n", "let a: Item[] = [];\n", text, 5, "typescript")
    assert after == text.replace("Array<Map<string, number>>", "Map<string, number>[]").replace(
        "Array<() => void>", "(() => void)[]")


def test_uses_in_strings_and_comments_and_of_other_arity_are_left_alone():
    text = ("x: int | None\n# see Optional[int] below\ns = 'Optional[int]'\nd: Dict[str, int]\n"
            "y: Optional[bytes]\n")
    after = _after("x: Optional[int]\n", "x: int | None\n", text, 1)
    assert after == text.replace("y: Optional[bytes]", "y: bytes | None")
    # a Dict of two arguments is no use of a one-argument template of Dict
    assert _after("d: Dict[str, int]\n", "d: str | int\n", "d: str | int\nm: Dict[str]\n", 1) is None


def test_what_is_not_a_template():
    # a call's arguments are that place's values, not a type's parts
    assert _template("n = str(x)\n", "n = x\n") is None
    # new text that names something of its own: that place's code
    assert _template("x: Optional[int]\n", "x: Maybe[int]\n") is None
    assert _template("x: Optional[int]\n", "x: int | Missing\n") is None
    # only the argument kept: a subscript unwrapped is that place's data
    assert _template("n = items[i]\n", "n = i\n") is None
    # an argument the new text does not hold once, whole
    assert _template("x: Optional[int]\n", "x: integer | None\n") is None
    assert _template("x: Tuple[int, int]\n", "x: int | int\n") is None
    shape = _template("x: Optional[int]\n", "x: int | None\n")
    assert shape is not None and shape.apply(["bytes"]) == "bytes | None" and not shape.joined
