"""What the model is asked: prefix and suffix at the cursor, language, and whether to complete one line or several.

Pure functions over a Document, so every cursor position (start/end of line, CRLF, emoji) is testable without LSP."""

from __future__ import annotations

from dataclasses import dataclass

from .documents import UTF16, Document
from .postprocess.line_mode import LineMode, MultilinePolicy, decide


@dataclass(frozen=True)
class CursorContext:
    uri: str
    prefix: str
    suffix: str
    language: str
    filepath: str | None
    #: Code-point offset of the cursor in the document.
    offset: int
    line: int
    #: The current line before and after the cursor (no line break).
    line_prefix: str
    line_rest: str
    #: Where a suggestion may end, from the cursor's situation (`lsp_server.postprocess.line_mode`).
    line_mode: LineMode
    indent_unit: str
    line_ending: str

    @property
    def multiline(self) -> bool:
        return self.line_mode != "line"


def detect_line_ending(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def detect_indent_unit(text: str, tab_size: int | None = None, insert_spaces: bool | None = None) -> str:
    """The editor's FormattingOptions when given, else the most common indentation step in the document."""
    if insert_spaces is False:
        return "\t"
    if insert_spaces and tab_size:
        return " " * tab_size
    steps: dict[str, int] = {}
    previous = 0
    for line in text.splitlines()[:2000]:
        if not line.strip():
            continue
        if line.startswith("\t"):
            steps["\t"] = steps.get("\t", 0) + 1
            continue
        width = len(line) - len(line.lstrip(" "))
        if width > previous:
            step = width - previous
            if step in (2, 3, 4, 8):
                steps[" " * step] = steps.get(" " * step, 0) + 1
        previous = width
    if not steps:
        return " " * (tab_size or 4)
    return max(steps.items(), key=lambda kv: kv[1])[0]


def build_context(doc: Document, line: int, character: int, encoding: str = UTF16, *,
                  policy: MultilinePolicy = "auto", indent_unit: str | None = None,
                  tab_size: int | None = None, insert_spaces: bool | None = None,
                  filepath: str | None = None) -> CursorContext:
    offset = doc.offset_at(line, character, encoding)
    prefix = doc.text[:offset]
    suffix = doc.text[offset:]
    line_number, _ = doc.position_at(offset, encoding)
    text_line = doc.line(line_number)
    line_prefix = _line_prefix(prefix)
    line_rest = text_line[len(line_prefix):]
    language = doc.language_id or "plaintext"
    line_mode = decide(policy, language, prefix, suffix, line_prefix, line_rest)
    unit = indent_unit or detect_indent_unit(doc.text, tab_size, insert_spaces)
    return CursorContext(
        uri=doc.uri, prefix=prefix, suffix=suffix, language=language, filepath=filepath, offset=offset,
        line=line_number, line_prefix=line_prefix, line_rest=line_rest, line_mode=line_mode, indent_unit=unit,
        line_ending=detect_line_ending(doc.text))


def _line_prefix(prefix: str) -> str:
    cut = max(prefix.rfind("\n"), prefix.rfind("\r"))
    return prefix[cut + 1:]
