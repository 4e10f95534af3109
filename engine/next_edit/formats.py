"""Prompt formats of next-edit models (the data is engine/next_edit/formats.toml): render a NextEditRequest as a
model's prompt, parse the model's output back into the rewritten window, and choose the format for a model.

Rendering follows the reference implementations string for string (see the sources named in formats.toml); the
tests compare whole prompts with the notes' and Zed's examples. Parsing is strict: an answer that does not have the
form's shape is junk and gives no edit, never a guess."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Literal, Mapping

from ..prompt import with_newline
from ..tomlfiles import read_packaged
from ..types import ChatMessage
from .diff import common_ends
from .types import EditEvent, NextEditOptions, NextEditRequest
from .window import Window, cursor_window, hunk_lines, original_window

FormatKind = Literal["completion", "chat"]
NAMES: tuple[str, ...] = ("sweep", "zeta2", "instruction")


class PromptRefused(ValueError):
    """A request field contains one of the format's reserved tokens: the prompt would be ambiguous."""


@dataclass(frozen=True)
class Format:
    name: str
    kind: FormatKind
    stop: tuple[str, ...]
    #: A complete answer ends with it ("" = no marker: the model's end or a stop word ends it).
    end_marker: str
    #: The answer "no change" ("" = the form has none).
    no_edits: str
    cursor_marker: str
    reserved: tuple[str, ...]
    reserved_lines: tuple[str, ...]
    table: Mapping[str, Any]

    def get(self, key: str) -> Any:
        return self.table[key]


@dataclass(frozen=True)
class RenderedPrompt:
    format: Format
    window: Window
    #: The raw prompt (completion formats); "" for chat formats.
    text: str = ""
    #: The messages (chat formats).
    messages: tuple[ChatMessage, ...] = ()

    @property
    def shown(self) -> str:
        """The prompt as one string (for the Prediction, the benchmark and debugging)."""
        if self.text:
            return self.text
        return "".join(f"<{m.role}>\n{m.content}\n" for m in self.messages)


@dataclass(frozen=True)
class Parsed:
    #: The rewritten window (same line-ending convention as the window), or None.
    window: str | None
    #: "rewrite" when `window` is set, else why not: "no change", "truncated", "malformed".
    reason: str


@functools.lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return read_packaged("engine.next_edit", "formats.toml")


@functools.lru_cache(maxsize=None)
def get_format(name: str) -> Format:
    tables = _data()["formats"]
    if name not in tables:
        raise ValueError(f"unknown next-edit format {name!r} (known: {', '.join(NAMES)})")
    t = tables[name]
    return Format(name=name, kind=t["kind"], stop=tuple(t["stop"]), end_marker=t.get("end_marker", ""),
                  no_edits=t.get("no_edits", ""), cursor_marker=t.get("cursor_marker", ""),
                  reserved=tuple(t.get("reserved", ())), reserved_lines=tuple(t.get("reserved_lines", ())), table=t)


def sentinel_tokens() -> tuple[str, ...]:
    return tuple(_data()["sentinels"]["tokens"])


# --- small pieces -----------------------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{(path|text|old|new|diff|language|history|excerpts|window|before|region)\}")


def fill(template: str, **values: str) -> str:
    """`template` with its placeholders replaced in one pass (text put in is never substituted again, and braces in
    code are left alone)."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def limit_lines(lines: list[str], limit: int) -> list[str]:
    """At most `limit` lines: the first half, "...", and the last ones (Zed's limit_change_lines)."""
    if len(lines) <= limit:
        return lines
    head = limit // 2
    tail = max(0, limit - head - 1)
    return lines[:head] + ["..."] + (lines[len(lines) - tail:] if tail else [])


def unified_hunk(event: EditEvent, limit: int) -> str:
    """The event as a unified diff hunk: its common first and last lines as context, the rest as - and + lines."""
    old, new = hunk_lines(event.old), hunk_lines(event.new)
    prefix, suffix = common_ends(old, new)
    removed = limit_lines(old[prefix:len(old) - suffix], limit)
    added = limit_lines(new[prefix:len(new) - suffix], limit)
    start = event.start_line + 1
    body = [" " + line for line in old[:prefix]] + ["-" + line for line in removed] \
        + ["+" + line for line in added] + [" " + line for line in old[len(old) - suffix:]]
    header = f"@@ -{start},{len(old)} +{start},{len(new)} @@\n"
    return header + "".join(line + "\n" for line in body)


def _recent(history: tuple[EditEvent, ...], count: int) -> tuple[EditEvent, ...]:
    """The newest `count` events, oldest first."""
    return history[-count:] if count > 0 else ()


def _check_reserved(fmt: Format, fields: Mapping[str, str]) -> None:
    for name, value in fields.items():
        for token in fmt.reserved:
            if token in value:
                raise PromptRefused(f"the {name} contains {token!r}, a reserved token of the {fmt.name} prompt")
        if fmt.reserved_lines:
            lines = set(value.split("\n"))
            for token in fmt.reserved_lines:
                if token in lines:
                    raise PromptRefused(f"the {name} has a line {token!r}, a marker of the {fmt.name} prompt")


def _request_fields(request: NextEditRequest, events: tuple[EditEvent, ...]) -> dict[str, str]:
    fields = {"file path": request.path}
    for i, event in enumerate(events):
        fields[f"edit history path {i}"] = event.path
        fields[f"edit history (before) {i}"] = event.old
        fields[f"edit history (after) {i}"] = event.new
    for i, snippet in enumerate(request.excerpts):
        fields[f"excerpt path {i}"] = snippet.filename
        fields[f"excerpt {i}"] = snippet.text
    return fields


def _with_cursor(window: Window, marker: str) -> str:
    """The window with the cursor marked (unmarked when the cursor lies outside it)."""
    if window.cursor is None:
        return with_newline(window.text)
    return with_newline(window.text[:window.cursor] + marker + window.text[window.cursor:])


# --- rendering --------------------------------------------------------------------------------------------------------


def _render_sweep(fmt: Format, request: NextEditRequest, window: Window) -> RenderedPrompt:
    events = _recent(request.history, fmt.get("history_events"))
    original = original_window(request, window)
    _check_reserved(fmt, {**_request_fields(request, events), "original window": original,
                          "current window": window.text})
    limit = fmt.get("history_lines")
    parts = [fill(fmt.get("excerpt_block"), path=s.filename, text=with_newline(s.text)) for s in request.excerpts]
    for event in events:
        old = with_newline("\n".join(limit_lines(hunk_lines(event.old), limit)))
        new = with_newline("\n".join(limit_lines(hunk_lines(event.new), limit)))
        parts.append(fill(fmt.get("history_block"), path=event.path, old=old, new=new))
    parts.append(fill(fmt.get("original_block"), path=request.path, text=with_newline(original)))
    parts.append(fill(fmt.get("current_block"), path=request.path, text=with_newline(window.text)))
    parts.append(fill(fmt.get("prompt_end"), path=request.path))
    return RenderedPrompt(fmt, window, text="".join(parts))


def _history_section(fmt: Format, events: tuple[EditEvent, ...]) -> str:
    if not events:
        return ""
    limit = fmt.get("history_lines")
    blocks = [fill(fmt.get("history_block"), path=e.path, diff=unified_hunk(e, limit)) for e in events]
    return fmt.get("history_header") + "".join(blocks) + fmt.get("section_end")


def _render_zeta2(fmt: Format, request: NextEditRequest, window: Window) -> RenderedPrompt:
    events = _recent(request.history, fmt.get("history_events"))
    rows = request.text.split("\n")
    context_start = sum(len(r) + 1 for r in rows[:max(0, window.first_row - fmt.get("context_above"))])
    last_context = min(len(rows) - 1, window.last_row + fmt.get("context_below"))
    context_end = min(len(request.text), sum(len(r) + 1 for r in rows[:last_context + 1]))
    before = request.text[context_start:window.start]
    after = request.text[window.end:max(window.end, context_end)]
    _check_reserved(fmt, {**_request_fields(request, events), "code before the window": before,
                          "window": window.text, "code after the window": after})
    excerpts = "".join(fill(fmt.get("excerpt_block"), path=s.filename, text=with_newline(s.text))
                       for s in request.excerpts)
    parts = [fill(fmt.get("suffix_block"), text=with_newline(after)), fmt.get("prefix_start")]
    if excerpts:
        parts.append(excerpts + fmt.get("section_end"))
    parts.append(_history_section(fmt, events))
    parts.append(fill(fmt.get("cursor_block"), path=request.path, before=before,
                      region=_with_cursor(window, fmt.cursor_marker)))
    parts.append(fmt.get("prompt_end"))
    return RenderedPrompt(fmt, window, text="".join(parts))


def _render_instruction(fmt: Format, request: NextEditRequest, window: Window) -> RenderedPrompt:
    events = _recent(request.history, fmt.get("history_events"))
    _check_reserved(fmt, {**_request_fields(request, events), "window": window.text})
    excerpts = ""
    if request.excerpts:
        excerpts = fmt.get("excerpts_header") + "".join(
            fill(fmt.get("excerpt_block"), path=s.filename, text=with_newline(s.text)) for s in request.excerpts
        ) + fmt.get("section_end")
    user = fill(fmt.get("user"), excerpts=excerpts, history=_history_section(fmt, events), path=request.path,
                language=request.language, window=_with_cursor(window, fmt.cursor_marker))
    messages = (ChatMessage("system", fmt.get("system")), ChatMessage("user", user))
    return RenderedPrompt(fmt, window, messages=messages)


_RENDERERS = {"sweep": _render_sweep, "zeta2": _render_zeta2, "instruction": _render_instruction}


def render(request: NextEditRequest, options: NextEditOptions, name: str) -> RenderedPrompt:
    """The prompt of `request` in format `name`; PromptRefused when a field holds a reserved token."""
    fmt = get_format(name)
    window = cursor_window(request.text, request.cursor, options.lines_above, options.lines_below, request.focus)
    return _RENDERERS[name](fmt, request, window)


# --- parsing ----------------------------------------------------------------------------------------------------------


def _same_ending(region: str, window: str) -> str:
    """The rewritten region with the window's convention for its last line break (see engine.next_edit.window)."""
    if window.endswith("\n"):
        return with_newline(region)
    return region[:-1] if region.endswith("\n") else region


def parse(rendered: RenderedPrompt, output: str, ended_by: str | None, hit_limit: bool) -> Parsed:
    """The rewritten window from the model's `output` (already cut before the stop word `ended_by`, None when the
    stream ended without one; `hit_limit`: it ran into max_tokens)."""
    fmt, window = rendered.format, rendered.window.text
    region = output
    if fmt.kind == "chat":  # the answer must open with its marker line, nothing but blanks before it
        start = fmt.get("answer_start")
        stripped = region.lstrip()
        if not stripped.startswith(start):
            return Parsed(None, "truncated" if hit_limit and start.startswith(stripped) else "malformed")
        region = stripped[len(start):]
    if fmt.no_edits and region.lstrip().startswith(fmt.no_edits):
        return Parsed(None, "no change")
    if fmt.end_marker and ended_by != fmt.end_marker:
        return Parsed(None, "truncated")  # hit max_tokens, or ended without the end marker
    if not fmt.end_marker and hit_limit and ended_by is None:
        return Parsed(None, "truncated")
    if fmt.cursor_marker:
        region = region.replace(fmt.cursor_marker, "", 1)
    if not region.strip() and window.strip():
        return Parsed(None, "no change")  # an empty answer (Sweep: empty means no edit)
    return Parsed(_same_ending(region, window), "rewrite")


# --- choosing ---------------------------------------------------------------------------------------------------------

_METADATA_KEYS = ("general.name", "general.basename", "general.finetune", "general.tags")


def _normal(text: str) -> str:
    return re.sub(r"[\s_]+", "-", text.lower())


def _matching_rule(model_name: str | None, gguf_metadata: Mapping[str, Any] | None) -> str | None:
    """The format of the first rule of formats.toml matching the model setting (a path, an id or a vendor's model
    name) or the GGUF's name keys; None when none does."""
    haystack = [model_name or ""]
    for key in _METADATA_KEYS:
        value = (gguf_metadata or {}).get(key)
        if isinstance(value, str):
            haystack.append(value)
        elif isinstance(value, (list, tuple)):
            haystack.extend(v for v in value if isinstance(v, str))
    names = [_normal(h) for h in haystack if h]
    for rule in _data()["choose"]["rules"]:
        if any(_normal(pattern) in name for pattern in rule["name"] for name in names):
            return str(rule["format"])
    return None


def is_next_edit_model(model_name: str | None, gguf_metadata: Mapping[str, Any] | None = None) -> bool:
    """Whether the model is one trained for next edits (a rule names it), not a model given the fallback form."""
    return _matching_rule(model_name, gguf_metadata) is not None


def choose_format(model_name: str | None, gguf_metadata: Mapping[str, Any] | None, kind: str) -> str:
    """The format for a model: "instruction" for a chat kind; else the rule naming the model (formats.toml); else
    the fallback ("sweep")."""
    from ..backends import CHAT_KINDS

    if kind in CHAT_KINDS:
        return "instruction"
    return _matching_rule(model_name, gguf_metadata) or str(_data()["choose"]["fallback"])
