"""Positions ⇄ offsets under LSP's rules: three encodings, CRLF/CR/LF, non-BMP characters, clamping."""

import pytest
from hypothesis import given, strategies as st

from lsp_server.documents import UTF8, UTF16, UTF32, Document, DocumentStore, line_starts, normalize_uri


def test_line_starts_counts_crlf_once_and_lone_cr():
    assert line_starts("a\r\nb\nc\rd") == [0, 3, 5, 7]
    assert line_starts("") == [0]
    assert line_starts("x\n") == [0, 2]


def test_other_unicode_breaks_are_not_lines():
    # str.splitlines would split at \x0c and \u2028; LSP does not.
    doc = Document("file:///a.txt", "a\x0cb\u2028c\nd")
    assert doc.line_count == 2
    assert doc.offset_at(1, 0) == 6


@pytest.mark.parametrize("encoding,column", [(UTF16, 3), (UTF8, 5), (UTF32, 2)])
def test_emoji_before_cursor(encoding, column):
    doc = Document("file:///a.py", "x😀y\n")
    assert doc.offset_at(0, column, encoding) == 2  # just after the emoji
    assert doc.position_at(2, encoding) == (0, column)


def test_column_inside_a_surrogate_pair_rounds_down():
    doc = Document("file:///a.py", "😀y")
    assert doc.offset_at(0, 1, UTF16) == 0
    assert doc.offset_at(0, 2, UTF8) == 0


def test_crlf_positions_exclude_the_break():
    doc = Document("file:///a.py", "ab\r\ncd\r\n")
    assert doc.offset_at(0, 99) == 2  # past the end of line 0 clamps before "\r\n"
    assert doc.offset_at(1, 1) == 5
    assert doc.offset_at(2, 0) == 8
    assert doc.offset_at(7, 0) == 8
    assert doc.line(1) == "cd"
    assert doc.position_at(3) == (0, 2)  # inside the "\r\n" pair maps to the end of the line


def test_incremental_changes_in_each_encoding():
    doc = Document("file:///a.py", "a😀b\r\nc")
    doc.apply_change("X", (0, 3, 0, 4), UTF16)  # replace "b"
    assert doc.text == "a😀X\r\nc"
    doc.apply_change("Y", (0, 5, 0, 6), UTF8)  # replace "X"
    assert doc.text == "a😀Y\r\nc"
    doc.apply_change("\n", (1, 1, 1, 1), UTF32)
    assert doc.text == "a😀Y\r\nc\n"
    doc.apply_change("whole", None)
    assert doc.text == "whole"


def test_store_open_get_close():
    store = DocumentStore()
    store.open("file:///a.py", "x", "python", 1)
    assert store.get("file:///a.py").language_id == "python"
    store.close("file:///a.py")
    assert store.get("file:///a.py") is None


text = st.text(alphabet=st.sampled_from(list("ab \t\n\r😀é中")), max_size=40)


@given(text, st.sampled_from([UTF8, UTF16, UTF32]), st.data())
def test_position_offset_round_trip(source, encoding, data):
    doc = Document("file:///t", source)
    offset = data.draw(st.integers(0, len(source)))
    # Offsets inside a "\r\n" pair are not positions; skip them.
    if 0 < offset < len(source) and source[offset - 1] == "\r" and source[offset] == "\n":
        return
    line, column = doc.position_at(offset, encoding)
    assert doc.offset_at(line, column, encoding) == offset


@given(text, text, st.sampled_from([UTF8, UTF16, UTF32]), st.data())
def test_ranged_change_matches_string_splice(source, insert, encoding, data):
    doc = Document("file:///t", source)
    a = data.draw(st.integers(0, len(source)))
    b = data.draw(st.integers(a, len(source)))
    start, end = doc.position_at(a, encoding), doc.position_at(b, encoding)
    sa, sb = doc.offset_at(*start, encoding), doc.offset_at(*end, encoding)
    doc.apply_change(insert, (*start, *end), encoding)
    assert doc.text == source[:sa] + insert + source[sb:]


@pytest.mark.parametrize("a,b", [
    ("file:///w/a.py", "file:///w/a%2Epy"),
    ("file:///w/a.py", "file:///w/a%2epy"),
    ("file:///c%3A/w/a.py", "file:///C:/w/a.py"),  # VS Code and Neovim on Windows
    ("file:///w/my%20file.py", "file:///w/my file.py"),
    ("file:///w/%E4%B8%AD.py", "file:///w/中.py"),
    ("FILE:///w/a.py", "file:///w/a.py"),
    ("untitled:Untitled%2D1", "untitled:Untitled-1"),
])
def test_spellings_of_one_uri_normalise_alike(a, b):
    assert normalize_uri(a) == normalize_uri(b)


@pytest.mark.parametrize("a,b", [
    ("file:///w/a.py", "file:///w/A.py"),
    ("file:///w/a.py", "file:///w/b.py"),
    ("untitled:a%2Fb", "untitled:a/b"),  # "/" is reserved: equivalent only for files
])
def test_different_uris_stay_different(a, b):
    assert normalize_uri(a) != normalize_uri(b)


def test_store_is_keyed_by_the_normalised_uri():
    store = DocumentStore()
    store.open("file:///w/a.py", "x", "python", 1)
    assert store.get("file:///w/a%2Epy") is store.get("file:///w/a.py")
    store.open("file:///w/a%2Epy", "y", "python", 1)
    assert len(store) == 1 and store.get("file:///w/a.py").text == "y"
    store.close("file:///w/a%2epy")
    assert store.get("file:///w/a.py") is None and len(store) == 0
