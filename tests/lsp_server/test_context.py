"""Prefix/suffix/rest-of-line at the cursor and the single- vs multi-line decision."""

import asyncio
import re

import pytest
from hypothesis import given, settings, strategies as st

from engine.config import ModelConfig
from engine.prompt import MAX_CHARS_PER_TOKEN, PromptTemplate, build_prompt, clip_window
from engine.types import CompletionRequest
from lsp_server.context import Window, build_context, build_context_with_item, indent_unit_near
from lsp_server.documents import UTF8, UTF16, Document
from lsp_server.syntax import has_grammar, multiline_from_indentation, multiline_from_syntax


def ctx_at(text, line, col, language="python", encoding=UTF16, **kw):
    return build_context(Document("file:///a", text, language), line, col, encoding, **kw)


def test_prefix_suffix_split_in_the_middle_of_a_line():
    c = ctx_at("def add(a, b):\n    return a\n", 1, 12)
    assert c.prefix == "def add(a, b):\n    return a"
    assert c.suffix == "\n"
    assert c.line_prefix == "    return a" and c.line_rest == ""


def test_crlf_file_keeps_crlf_in_prefix_and_suffix():
    c = ctx_at("a = 1\r\nb = \r\nc = 3", 1, 4)
    assert c.prefix == "a = 1\r\nb = "
    assert c.suffix == "\r\nc = 3"
    assert c.line_rest == ""


@pytest.mark.parametrize("encoding,col", [(UTF16, 7), (UTF8, 9)])
def test_emoji_before_the_cursor(encoding, col):
    c = ctx_at('s = "😀"\n', 0, col, encoding=encoding)
    assert c.prefix == 's = "😀' and c.suffix == '"\n' and c.line_rest == '"'


def test_empty_file_and_last_line_without_newline():
    c = ctx_at("", 0, 0)
    assert (c.prefix, c.suffix, c.multiline) == ("", "", True)
    c = ctx_at("x = 1\ny = ", 1, 4)
    assert c.prefix == "x = 1\ny = " and c.suffix == ""


def test_start_of_line_with_code_after_is_single_line():
    c = ctx_at("x = 1\nprint(x)\n", 1, 0)
    assert c.line_rest == "print(x)" and c.multiline is False


@pytest.mark.skipif(not has_grammar("python"), reason="tree-sitter-python is not installed")
@pytest.mark.parametrize("prefix,suffix,expected", [
    ('x = "abc', '"\n', False),          # inside a string
    ("# a comment", "\n", False),         # inside a comment
    ("def f(a, ", "\n", True),            # header of a block
    ("if x > ", "\n", True),
    ("def f():\n    ", "\n", True),        # empty line in a block
    ("x = g(1", ")\n", False),            # inside an expression
    ("total = 1 + ", "\n", False),
])
def test_python_syntax(prefix, suffix, expected):
    assert multiline_from_syntax("python", prefix, suffix) is expected


@pytest.mark.parametrize("language,prefix,suffix,expected", [
    ("rust", "fn main() {", "\n}", True),
    ("go", "x := ", "\n", False),
    ("javascript", "const s = `abc", "`;\n", False),
    ("c", "int main() {\n  /* hi", "*/\n}", False),
    ("typescript", "function f(a: number", "\n", True),
    ("java", "class A {\n  int x = ", "\n}", False),
    ("cpp", "int main() {\n  ", "\n}", True),
])
def test_other_grammars(language, prefix, suffix, expected):
    if not has_grammar(language):
        pytest.skip(f"tree-sitter grammar for {language} is not installed")
    assert multiline_from_syntax(language, prefix, suffix) is expected


def test_a_window_that_would_begin_inside_a_docstring_begins_at_code():
    """The parsed window is the last lines of the prefix; cut at a fixed count it began inside a long docstring,
    which parsed the code after it as a string (rich's `StyleStack.current`: an empty method body was no block)."""
    if not has_grammar("python"):
        pytest.skip("tree-sitter grammar for python is not installed")
    docstring = '    def f(self):\n        """Doc.\n\n' + "        More prose.\n" * 160 + '        """\n'
    prefix = "class A:\n" + docstring + '        return 1\n\n    def g(self):\n        """G."""\n        return 2\n\n' \
        "    @property\n    def current(self) -> int:\n        "
    suffix = '\n\n    def push(self):\n        """Push."""\n        pass\n'
    assert multiline_from_syntax("python", prefix, suffix) is True


def test_a_window_from_the_documents_start_is_parsed_as_it_is():
    """A module docstring's prose at column 0 is no code to start the window at (requests/sessions.py)."""
    if not has_grammar("python"):
        pytest.skip("tree-sitter grammar for python is not installed")
    prefix = ('"""\nrequests.sessions\n~~~~~~~~~~~~~~~~~\n\nThis module provides a Session object.\n"""\n'
              "import os\n\n\ndef merge(a, b):\n    merged = dict(a)\n    merged.update(")
    suffix = '\n    return merged\n\n\ndef g():\n    """G."""\n'
    assert multiline_from_syntax("python", prefix, suffix) is True


def test_unknown_language_uses_indentation():
    assert multiline_from_syntax("cobol", "x", "") is None
    assert multiline_from_indentation("    ") is True


def test_indent_unit_from_the_lines_around_the_cursor():
    assert indent_unit_near("def f():\n  x = 1\n  if x:\n    y\n", "") == "  "
    assert indent_unit_near("a {\r\n\tb\r\n", "}\r\n") == "\t"
    assert indent_unit_near("x = 1\n", "") == "    "
    # Far from the cursor does not count: a tab-indented block 300 lines up, two-space code around the cursor.
    far = "if x:\n\ty\n" + "z = 1\n" * 300 + "def f():\n  a\n  if a:\n    b\n"
    assert build_context(Document("file:///a.py", far + "  ", "python"), 305, 2).indent_unit == "  "


# --- the bounded window ------------------------------------------------------------------------------------------

_words = st.sampled_from(["def", " ", "x", "(", ")", ":", "\n", "\n    ", "é", "中", "😀", "e\u0301", "\t", "\rx"])


async def _count_tokens(text: str) -> int:
    return len(re.findall(r"\w+|\S|\s", text))


async def _count_long_tokens(text: str) -> int:
    """A tokenizer at the engine's limit of characters per token: clipping then reaches furthest."""
    return -(-len(text) // MAX_CHARS_PER_TOKEN)


@settings(max_examples=200, deadline=None)
@given(st.lists(_words, min_size=50, max_size=700).map("".join), st.integers(1, 24), st.integers(1, 12),
       st.sampled_from([None, _count_tokens, _count_long_tokens]), st.booleans(), st.data())
def test_the_window_gives_the_model_the_prompt_of_the_whole_file(text, prefix_tokens, suffix_tokens, tokenizer,
                                                                 stable, data):
    """The prompt built from the window equals the prompt built from the whole document: the window reaches as far
    as clipping can, and starts on the clip grid. (A lone "\\r" is a line break here; CRLF, which the engine shortens
    to LF, shifts the grid and is left out.)"""
    doc = Document("file:///a.py", text, "python")
    line = data.draw(st.integers(0, doc.line_count - 1))
    column = data.draw(st.integers(0, len(doc.line(line))))
    clip = clip_window(prefix_tokens, suffix_tokens)
    ctx = build_context(doc, line, column, UTF16, window=Window(clip.before, clip.after, clip.align))
    offset = doc.offset_at(line, column)
    assert text[:offset].endswith(ctx.prefix) and text[offset:].startswith(ctx.suffix)
    assert len(ctx.prefix) < clip.before + clip.align and len(ctx.suffix) <= clip.after
    template = PromptTemplate(name="t", template="<P>{prefix}<S>{suffix}<M>")
    count = tokenizer

    def prompt(prefix: str, suffix: str):
        return asyncio.run(build_prompt(CompletionRequest(prefix, suffix), template, max_prefix_tokens=prefix_tokens,
                                        max_suffix_tokens=suffix_tokens, count_tokens=count, stable_clip=stable))
    assert prompt(ctx.prefix, ctx.suffix) == prompt(text[:offset], text[offset:])


def test_a_request_reads_a_bounded_window_of_a_long_file():
    line = "    value = compute(value, 42)  # a line of code\n"
    doc = Document("file:///big.py", "def f(value):\n" + line * 40000, "python")  # 2 MB
    window = Window.for_model(ModelConfig())
    ctx = build_context(doc, 20000, 10, window=window)
    assert window.before <= len(ctx.prefix) < window.before + window.align and len(ctx.suffix) == window.after
    assert ctx.offset == doc.offset_at(20000, 10) and ctx.line_prefix == "    value " and ctx.line == 20000
    minified = Document("file:///min.js", "var a=1;" * 250000, "javascript")  # one 2 MB line
    ctx = build_context(minified, 0, 1000000, window=window)
    assert len(ctx.line_prefix) == window.before and len(ctx.line_rest) == window.after
    assert ctx.prefix.endswith(ctx.line_prefix)


def test_positions_past_the_end_clamp():
    doc = Document("file:///a.py", "ab\ncd", "python")
    assert (build_context(doc, 0, 99).prefix, build_context(doc, 0, 99).line_rest) == ("ab", "")
    ctx = build_context(doc, 7, 3)
    assert (ctx.prefix, ctx.suffix, ctx.line, ctx.line_prefix) == ("ab\ncd", "", 1, "cd")


def test_the_indent_unit_is_judged_again_when_lines_change():
    doc = Document("file:///a.py", "def f():\n  a\n  if a:\n    b\n", "python")
    assert build_context(doc, 3, 5).indent_unit == "  "
    doc.apply_change("\tc\n\tif c:\n\t\td\n\t", (0, 0, 4, 0))  # the whole body, re-indented with tabs
    assert build_context(doc, 3, 1).indent_unit == "\t"
    doc.apply_change("x", (3, 1, 3, 1))  # typing within a line keeps what was judged
    assert build_context(doc, 3, 2).indent_unit == "\t" and doc.facts["indent_unit"][1] == "\t"


def test_the_context_with_a_selected_item_is_the_text_it_makes_at_the_real_line():
    """Deep in a long file the window starts far from the top: the line (where workspace context is chosen) and the
    offset are still the real document's, and the prefix ends in the item's text."""
    lines = [f"value_{n} = {n}" for n in range(5000)]
    lines[4000] = "x = os.pa"
    doc = Document("file:///long.py", "\n".join(lines) + "\n", "python", 1)
    start = doc.offset_at(4000, 7)
    ctx = build_context_with_item(doc, start, start + 2, "path", window=Window(before=1000, after=500))
    assert ctx.line == 4000 and ctx.offset == start + len("path")
    assert ctx.prefix.endswith("\nx = os.path") and ctx.suffix.startswith("\nvalue_4001 = 4001\n")
    assert ctx.line_prefix == "x = os.path" and ctx.line_rest == ""
    assert len(ctx.prefix) <= 1000 + len("path") and len(ctx.suffix) == 500
