"""Prefix/suffix/rest-of-line at the cursor and the single- vs multi-line decision."""

import pytest

from lsp_server.context import build_context, detect_indent_unit, detect_line_ending
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
    assert c.line_rest == "" and c.line_ending == "\r\n"


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


def test_unknown_language_uses_indentation():
    assert multiline_from_syntax("cobol", "x", "") is None
    assert multiline_from_indentation("    ") is True


def test_indent_unit_and_line_endings():
    assert detect_indent_unit("def f():\n  x = 1\n  if x:\n    y\n") == "  "
    assert detect_indent_unit("a {\n\tb\n}\n") == "\t"
    assert detect_indent_unit("x", tab_size=8, insert_spaces=True) == " " * 8
    assert detect_indent_unit("x", insert_spaces=False) == "\t"
    assert detect_line_ending("a\r\nb\r\n") == "\r\n"
    assert detect_line_ending("a\nb") == "\n"
