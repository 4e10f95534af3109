"""The data of a next-edit suggestion: the user's edit history and the current file in, one edit (or none) out.

The LSP layer builds a NextEditRequest from its document store and edit history (budgeted, secrets excluded) and
gets back a Prediction; it never sees prompts, model output or wire formats. Offsets are code points of `text`
(Python string indices), as everywhere in the engine: the LSP layer converts them to the negotiated encoding."""

from __future__ import annotations

from dataclasses import dataclass

from ..types import ContextSnippet

FORMATS: tuple[str, ...] = ("auto", "sweep", "zeta2", "instruction")


@dataclass(frozen=True)
class EditEvent:
    """One coalesced hunk of the user's edit history."""

    #: Path relative to the workspace (what prompts show).
    path: str
    #: 0-based line in the file's CURRENT text where `new` begins (valid for the newest event of that file; older
    #: events are shown in prompts as they are).
    start_line: int
    #: The hunk's lines before the edit (whole lines, LF, trailing newline).
    old: str
    #: The same lines after it.
    new: str


@dataclass(frozen=True)
class NextEditRequest:
    #: Relative path of the current file.
    path: str
    #: LSP language id.
    language: str
    #: The current file's whole text, LF line endings.
    text: str
    #: Code-point offset of the cursor in `text`.
    cursor: int
    #: Chronological (oldest first), already budgeted by the caller, secrets excluded.
    history: tuple[EditEvent, ...] = ()
    #: Other files' code (optional), most relevant last.
    excerpts: tuple[ContextSnippet, ...] = ()
    #: Code-point offset in `text` whose line the window is centred on instead of the cursor's (e.g. the next place
    #: where the user's last substitution still applies, to ask the model about an edit away from the cursor);
    #: None: the cursor. The edit nearest to it is kept; the cursor is marked only when it lies in the window.
    focus: int | None = None

    @property
    def center(self) -> int:
        return self.cursor if self.focus is None else self.focus


@dataclass(frozen=True)
class TextEdit:
    """One edit of `text`: replace [start, end) (code points) by `text`."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class NextEditOptions:
    #: "auto" | "sweep" | "zeta2" | "instruction".
    format: str = "auto"
    #: The editable window around the cursor line (sweep: 10 / 10).
    lines_above: int = 10
    lines_below: int = 10
    max_tokens: int = 512
    temperature: float = 0.0

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        for name in ("lines_above", "lines_below"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 200:
                raise ValueError(f"{name} must be an integer from 0 to 200, got {value!r}")
        if not isinstance(self.max_tokens, int) or isinstance(self.max_tokens, bool) or self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive integer, got {self.max_tokens!r}")
        if not isinstance(self.temperature, (int, float)) or isinstance(self.temperature, bool) \
                or not 0.0 <= float(self.temperature) <= 2.0:
            raise ValueError(f"temperature must be a number from 0 to 2, got {self.temperature!r}")


@dataclass(frozen=True)
class Prediction:
    #: None: no edit.
    edit: TextEdit | None
    #: Why (e.g. "edit", "no change", "whitespace only", "truncated", "sentinel", "revert", "large deletion",
    #: "model error: ...") — for logs, stats and the benchmark.
    reason: str
    #: The prompt format used.
    format: str
    #: The model's raw output (debug/benchmark only, never logged unless debug).
    raw: str = ""
    #: The prompt sent (a chat request is rendered as its messages joined), for the benchmark and debugging.
    prompt: str = ""
