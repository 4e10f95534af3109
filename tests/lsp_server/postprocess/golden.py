"""Parsing of the peer golden cases (Tabby's agent fixtures): TOML with ├ (insert start = cursor), ┤ (insert end)
and ╣ (end of the replaced range; absent = nothing after the cursor is replaced)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from engine.tomlfiles import tomllib
from lsp_server.postprocess import PostprocessContext

# An unchanged copy of the shared peer fixtures (../shared/data/tabby-golden from the repository), kept in the
# repository so the suite runs anywhere; test_golden checks the copy against the shared directory when present.
GOLDEN_DIR = Path(__file__).resolve().parent / "tabby_golden"
SHARED_GOLDEN_DIR = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "tabby-golden"
INSERT_START, INSERT_END, REPLACE_END = "├", "┤", "╣"
# Tabby's "default" mode: the rest of the line is empty or only auto-closed characters.
_LINE_END = re.compile(r"(?:[)\]}>\"'`;,]|/>)*")


@dataclass(frozen=True)
class Marked:
    prefix: str
    completion: str
    replaced: str  # text after the cursor that the item replaces
    suffix: str  # text after the replaced part


def parse_marked(text: str) -> Marked:
    start = text.index(INSERT_START)
    end = text.rindex(INSERT_END)
    replace_end = text.rfind(REPLACE_END)
    if replace_end < 0:
        replace_end = end + 1
    return Marked(
        prefix=text[:start],
        completion=text[start + 1:end],
        replaced=text[end + 1:replace_end],
        suffix=text[replace_end + 1:] if REPLACE_END in text else text[end + 1:],
    )


@dataclass(frozen=True)
class GoldenCase:
    case_id: str  # "limit_scope/to_block_01"
    description: str
    language: str
    indentation: str | None
    min_chars: int
    marked: Marked
    expected: Marked | None  # None when the expected outcome is "unchanged" or "discard"
    unchanged: bool
    discard: bool
    not_equal: bool  # Tabby's own verdict: its output does NOT match the expectation (a FIXME case)

    def context(self) -> PostprocessContext:
        document_after = self.marked.replaced + self.marked.suffix
        rest = document_after.split("\n", 1)[0].rstrip()
        return PostprocessContext(
            prefix=self.marked.prefix,
            suffix=document_after,
            language=self.language,
            indent_unit=self.indentation or "    ",
            line_mode="block" if _LINE_END.fullmatch(rest) else "line",
            min_chars=self.min_chars,
        )

    def expected_text(self) -> str | None:
        if self.discard:
            return None
        if self.unchanged:
            return self.marked.completion
        assert self.expected is not None
        return self.expected.completion

    def expected_replace(self) -> int:
        return len(self.expected.replaced) if self.expected is not None else 0


def load_case(path: Path) -> GoldenCase:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    context = data.get("context", {})
    expected = data.get("expected", {})
    config = data.get("config", {})
    return GoldenCase(
        case_id=f"{path.parent.name}/{path.stem}",
        description=data.get("description", ""),
        language=context.get("language", "plaintext"),
        indentation=context.get("indentation"),
        min_chars=int(config.get("minCompletionChars", 4)),
        marked=parse_marked(context["text"]),
        expected=parse_marked(expected["text"]) if "text" in expected else None,
        unchanged=bool(expected.get("unchanged", False)),
        discard=bool(expected.get("discard", False)),
        not_equal=bool(expected.get("notEqual", False)),
    )


def load_cases() -> list[GoldenCase]:
    return [load_case(path) for path in sorted(GOLDEN_DIR.rglob("*.toml"))]
