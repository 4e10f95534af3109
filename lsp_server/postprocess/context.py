"""The cursor's surroundings as the filters see them.

A frozen dataclass with lazily computed views (current line, nearby lines, the document's indent unit) so that each
filter reads them in O(lines near the cursor), never O(document), on every keystroke."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import lsp_server.postprocess.textutil as textutil

# How far from the cursor the filters look. Enough for indentation and duplicate checks; bounded so a huge file costs
# no more than a small one.
CONTEXT_LINES = 200
# Indentation is judged from fewer lines: enough to see the unit, cheap on every keystroke.
INDENT_LINES_BEFORE, INDENT_LINES_AFTER = 80, 40


@dataclass(frozen=True)
class PostprocessContext:
    prefix: str  # document text before the cursor (LF line endings)
    suffix: str  # document text after the cursor (LF)
    language: str  # LSP languageId
    indent_unit: str = "    "  # from FormattingOptions (tabSize/insertSpaces) or configuration
    #: The cursor's situation (`line_mode.py`): "line", "statement" or "block".
    line_mode: str = "block"
    # Items with fewer non-blank characters are dropped. Tabby uses 4 (minCompletionChars), but short completions
    # are often exactly right (`0` after `total = `, a closing `}`): measured on SantaCoder Java, 4 dropped the
    # right answer of 4 tasks in 9. So by default only blank items are dropped.
    min_chars: int = 1
    #: The model ended the text itself (it saw the suffix and stopped, or it reached the code below the cursor):
    #: the situation's cut does not apply, only the scope and junk filters.
    model_ended: bool = False
    #: The model went on to write the next line of code below the cursor (the rejoin stop word): the text before it
    #: is exactly the hole, so the scope filter keeps it whole too (HumanEval multi-line holes leave nested blocks).
    rejoined: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.indent_unit, str) or not (
            self.indent_unit == "\t" or (1 <= len(self.indent_unit) <= 16 and set(self.indent_unit) == {" "})
        ):
            raise ValueError(f"indent_unit must be a tab or 1 to 16 spaces, got {self.indent_unit!r}")
        if self.line_mode not in ("line", "statement", "block"):
            raise ValueError(f"line_mode must be line, statement or block, got {self.line_mode!r}")
        if not isinstance(self.min_chars, int) or isinstance(self.min_chars, bool) or self.min_chars < 0:
            raise ValueError(f"min_chars must be a non-negative integer, got {self.min_chars!r}")

    @cached_property
    def line_prefix(self) -> str:
        """Text of the current line before the cursor."""
        return self.prefix[self.prefix.rfind("\n") + 1:]

    @cached_property
    def line_suffix(self) -> str:
        """Text of the current line after the cursor (the "rest of the line")."""
        end = self.suffix.find("\n")
        return self.suffix if end < 0 else self.suffix[:end]

    @cached_property
    def prefix_lines(self) -> list[str]:
        """The last lines before the cursor, oldest first; the last one is `line_prefix`."""
        return textutil.tail_lines(self.prefix, CONTEXT_LINES)

    @cached_property
    def suffix_lines(self) -> list[str]:
        """The first lines after the cursor; the first one is `line_suffix`."""
        return textutil.head_lines(self.suffix, CONTEXT_LINES)

    @cached_property
    def next_line(self) -> str | None:
        """The first non-blank line after the current one, or None at the end of the document."""
        return textutil.first_non_blank(self.suffix_lines[1:])

    @cached_property
    def document_indent_unit(self) -> str | None:
        """The indent unit the document around the cursor uses, when it shows one.

        The cursor line's own indentation decides tabs or spaces; the lines around it only break the tie when the
        cursor line has none, and give the width of a space unit. (Found by the cut simulation: in a tab-indented Go
        file whose nearby lines were an embedded shell script indented with spaces, the window's vote re-indented
        suggestions with spaces.)"""
        before = self.prefix_lines[-INDENT_LINES_BEFORE - 1:-1]
        current = self.line_prefix + self.line_suffix
        window = before + [current] + self.suffix_lines[1:INDENT_LINES_AFTER + 1]
        own = current[:textutil.indent_width(current)]
        if own.startswith("\t"):
            return "\t"
        if own.startswith(" "):
            spaced = [line for line in window if not line.startswith("\t")]
            # With nothing else indented nearby, the cursor line's own indentation is the evidence: the editor's
            # unit when the width is a multiple of it, else the width (2 spaces under a 4-space default).
            return textutil.detect_indent_unit(spaced) or textutil.detect_indent_unit(
                [own + "x"], prefer=self.indent_unit if self.indent_unit != "\t" else None)
        return textutil.detect_indent_unit(window)

    @cached_property
    def target_indent_unit(self) -> str:
        """What completions should be indented with: the document's own unit wins over the editor's setting, because
        the code being completed has to stay consistent with its neighbours."""
        return self.document_indent_unit or self.indent_unit
