"""What the model is asked: prefix and suffix at the cursor, language, and whether to complete one line or several.

Pure functions over a Document, so every cursor position (start/end of line, CRLF, emoji) is testable without LSP.
Only a bounded window around the cursor is read (the prompt budget's reach, and what the filters look at), so the
cost of a request does not grow with the file."""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.config import ModelConfig
from engine.prompt import clip_window

from .documents import LINE_BREAK, UTF16, UTF32, Document
from .postprocess.line_mode import LineMode, MultilinePolicy, decide
from .postprocess.textutil import detect_indent_unit

#: The filters look up to 200 lines around the cursor (postprocess.context.CONTEXT_LINES): windows are at least
#: this long even under a small prompt budget.
MIN_BEFORE, MIN_AFTER = 16384, 8192
#: Lines around the cursor the indent unit is judged from (when the editor does not say).
INDENT_LINES_BEFORE, INDENT_LINES_AFTER = 200, 100


@dataclass(frozen=True)
class CursorContext:
    uri: str
    #: Text before and after the cursor, cut from a bounded window around it (see `Window`), never the whole file.
    prefix: str
    suffix: str
    language: str
    filepath: str | None
    #: Code-point offset of the cursor in the document.
    offset: int
    line: int
    #: The current line before and after the cursor (no line break; bounded like the window).
    line_prefix: str
    line_rest: str
    #: Where a suggestion may end, from the cursor's situation (`lsp_server.postprocess.line_mode`).
    line_mode: LineMode
    indent_unit: str

    @property
    def multiline(self) -> bool:
        return self.line_mode != "line"


@dataclass(frozen=True)
class Window:
    """How much text around the cursor a request reads: enough for the prompt budget (so the model sees exactly
    what it would with the whole file) and for the filters. `align`: the window's start is a multiple of it, which
    keeps the prompt's clip points where they are for the whole text (engine.prompt.ClipWindow)."""

    before: int = MIN_BEFORE
    after: int = MIN_AFTER
    align: int = 1

    @classmethod
    def for_model(cls, model: ModelConfig) -> "Window":
        clip = clip_window(model.max_prefix_tokens, model.max_suffix_tokens)
        return cls(max(clip.before, MIN_BEFORE), max(clip.after, MIN_AFTER), max(1, clip.align))


def indent_unit_near(prefix: str, suffix: str) -> str:
    """The indentation the lines around the cursor use (postprocess.textutil's detector, the one the filters use),
    else 4 spaces. (An inline completion request carries no FormattingOptions to prefer.)"""
    lines = LINE_BREAK.split(prefix)[-INDENT_LINES_BEFORE:] + LINE_BREAK.split(suffix)[1:INDENT_LINES_AFTER + 1]
    return detect_indent_unit(lines) or "    "


def _indent_unit(doc: Document, line: int, prefix: str, suffix: str) -> str:
    """indent_unit_near, judged again only when the cursor moves to another block of lines or a line is added or
    removed: typing within a line does not change a document's indentation habit (and the filters judge the
    nearest lines themselves)."""
    key = (line // INDENT_LINES_AFTER, doc.line_count)
    known = doc.facts.get("indent_unit")
    if known is not None and known[0] == key:
        return str(known[1])
    unit = indent_unit_near(prefix, suffix)
    doc.facts["indent_unit"] = (key, unit)
    return unit


def build_context(doc: Document, line: int, character: int, encoding: str = UTF16, *,
                  policy: MultilinePolicy = "auto", indent_unit: str | None = None,
                  filepath: str | None = None, window: Window | None = None) -> CursorContext:
    """The context at an LSP position (clamped as LSP says), reading only `window` around it: O(window + line)."""
    window = window or Window.for_model(ModelConfig())  # the default budgets' reach
    offset = doc.offset_at(line, character, encoding)
    line_number = min(max(line, 0), doc.line_count - 1)
    line_start = doc.offset_at(line_number, 0)
    start = max(0, offset - window.before) // window.align * window.align
    prefix = doc.text_range(start, offset)
    suffix = doc.text_range(offset, offset + window.after)
    text_line = doc.line(line_number)
    column = offset - line_start
    line_prefix = text_line[max(0, column - window.before):column]
    line_rest = text_line[column:column + window.after]
    language = doc.language_id or "plaintext"
    line_mode = decide(policy, language, prefix, suffix, line_prefix, line_rest)
    unit = indent_unit or _indent_unit(doc, line_number, prefix, suffix)
    return CursorContext(
        uri=doc.uri, prefix=prefix, suffix=suffix, language=language, filepath=filepath, offset=offset,
        line=line_number, line_prefix=line_prefix, line_rest=line_rest, line_mode=line_mode, indent_unit=unit)


def build_context_with_item(doc: Document, start: int, end: int, text: str, *, lead: str = "", trail: str = "",
                            policy: MultilinePolicy = "auto", indent_unit: str | None = None,
                            filepath: str | None = None, window: Window | None = None) -> CursorContext:
    """The context as it will be once `text` replaces the code points [start, end) and the cursor stands after it,
    with `lead` before the document and `trail` after it. `text`: the item selected in the editor's suggestion widget
    (LSP `selectedCompletionInfo`); the specification asks the ghost text to extend that item, so it is completed as
    if the item were already in (`os.pa` with `path` selected is completed after `os.path`). `lead` and `trail`: the
    code of a notebook's other cells (lsp_server/notebooks.py), read only where the window reaches past the cell.
    Reads only the window around the cursor, like `build_context`; `offset` and `line` are the real document's
    (where workspace context is chosen; a context with a lead is never taken for the document's own text)."""
    window = window or Window.for_model(ModelConfig())
    low = max(0, start - window.before) // window.align * window.align
    head = doc.text_range(low, start)
    if low == 0 and lead and len(head) < window.before:
        head = lead[max(0, len(lead) - (window.before - len(head))):] + head
    prefix = head + text
    suffix = doc.text_range(end, end + window.after)
    if trail and len(suffix) < window.after and end + len(suffix) >= doc.char_count:
        suffix += trail[:window.after - len(suffix)]
    made = Document(doc.uri, prefix + suffix, doc.language_id, doc.version)
    line, column = made.position_at(len(prefix), UTF32)
    ctx = build_context(made, line, column, UTF32, policy=policy, indent_unit=indent_unit, filepath=filepath,
                        window=window)
    real_line = doc.position_at(start, UTF32)[0] + text.count("\n")
    return replace(ctx, offset=start + len(text), line=real_line)
