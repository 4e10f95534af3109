"""Fill-in-the-middle prompts: templates by model family, per-side clipping, line endings.

The prefix and the suffix are clipped separately and before templating, so the template's markers are never cut off
(clipping the finished prompt to a budget can cut the FIM marker that opens it). Clip points sit on line starts taken
from a fixed grid of positions, so while the user types at the end of the prefix the beginning of the prompt stays the
same for many keystrokes and the model server can reuse its prompt cache."""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import unicodedata
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable

from .tomlfiles import read_packaged
from .types import CompletionRequest, ContextSnippet, Prompt
from .validation import check_stop_words, check_token_budget

log = logging.getLogger(__name__)

CountTokens = Callable[[str], Awaitable[int]]
"""Counts the tokens of a text (llama-server's /tokenize backs it)."""

#: Without a tokenizer a token budget becomes a character budget at this rate.
CHARS_PER_TOKEN = 4
#: A clip point moves in steps of budget / CLIP_STEPS, so it changes about once per that many typed characters.
CLIP_STEPS = 8
#: With a tokenizer, only cut points keeping at most this many characters per budget token are tried (fewer calls).
MAX_CHARS_PER_TOKEN = 16

PLACEHOLDERS = ("prefix", "suffix", "filepath", "language")
_PLACEHOLDER = re.compile(r"\{(prefix|suffix|filepath|language)\}")
_ANY_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
PREFIX_ONLY_NAMES = ("prefix-only", "none")
#: The template of a backend that applies the model's FIM tokens itself (llama.cpp /infill, OpenAI-style `suffix`,
#: Codestral FIM, Ollama `suffix`): it takes the clipped prefix and suffix as they are.
NATIVE_FIM = "native-fim"
SETTING = "prompt_template"


# ---------------------------------------------------------------------------------------------------------------------
# Templates


@functools.lru_cache(maxsize=1)
def families() -> dict[str, dict[str, Any]]:
    """The packaged templates by family name (engine/templates.toml)."""
    return read_packaged("engine", "templates.toml")


def _family_index() -> dict[str, str]:
    index = {}
    for name, entry in families().items():
        for alias in (name, *entry.get("aliases", ())):
            index[alias.lower()] = name
    return index


@dataclass(frozen=True)
class RepoForm:
    """A family's repository-level prompt form (templates.toml `[family.repo]`): `header` once (with `{repo}`), then
    `file` per snippet (`{filename}`, `{text}`), then `current` (`{filepath}`) right before the FIM template."""

    header: str
    file: str
    current: str


@dataclass(frozen=True)
class PromptTemplate:
    """A FIM template. `template` None means prefix-only: the model just continues the prefix.

    `repo`: the family's repository-level form for snippets from other files; None → labelled comment blocks."""

    name: str
    template: str | None = None
    stop_words: tuple[str, ...] = ()
    repo: RepoForm | None = None

    def __post_init__(self) -> None:
        if self.template is not None:
            _check_template(self.template)
        words = check_stop_words(self.stop_words, f"{SETTING} {self.name!r}: stop_words")
        object.__setattr__(self, "stop_words", words)

    @classmethod
    def from_setting(cls, value: str | None) -> "PromptTemplate":
        """None or "prefix-only" → prefix-only; a family name (see templates.toml); or a template with `{prefix}`."""
        if value is None:
            return cls(name="prefix-only")
        if not isinstance(value, str):
            raise ValueError(f"{SETTING}: expected a family name or a template string, got {value!r}")
        if "{" in value:
            return cls(name="custom", template=value)
        key = value.strip().lower()
        if key in PREFIX_ONLY_NAMES:
            return cls(name="prefix-only")
        family = _family_index().get(key)
        if family is None:
            known = ", ".join(sorted(families()) + list(PREFIX_ONLY_NAMES))
            raise ValueError(f"{SETTING}: unknown template family {value!r} (known: {known}; or give a template "
                             "string containing {prefix} and {suffix})")
        entry = families()[family]
        repo = entry.get("repo")
        return cls(name=family, template=entry["template"], stop_words=tuple(entry.get("stop_words", ())),
                   repo=RepoForm(repo["header"], repo["file"], repo["current"]) if repo else None)

    @classmethod
    def native_fim(cls) -> "PromptTemplate":
        """For a backend that takes `prefix` and `suffix` apart; `render` only matters for logs."""
        return cls(name=NATIVE_FIM, template="{prefix}{suffix}")

    @property
    def prefix_only(self) -> bool:
        return self.template is None or "{suffix}" not in self.template

    def render(self, prefix: str, suffix: str, filepath: str | None = None, language: str | None = None) -> str:
        """The prompt text. Placeholders are replaced in one pass, so a prefix containing "{suffix}" stays as is."""
        if self.template is None:
            return prefix
        values = {"prefix": prefix, "suffix": suffix, "filepath": filepath or "", "language": language or ""}
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.template)


def _check_template(template: str) -> None:
    if "{prefix}" not in template:
        raise ValueError(f"{SETTING}: the template must contain {{prefix}}, got {template!r}")
    for match in _ANY_PLACEHOLDER.finditer(template):
        if match.group(1) not in PLACEHOLDERS:
            raise ValueError(f"{SETTING}: unknown placeholder {match.group(0)} in {template!r} "
                             f"(known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)})")


# ---------------------------------------------------------------------------------------------------------------------
# Clipping


async def _count_chars(text: str) -> int:
    return len(text)


def _step(budget: int, count_tokens: CountTokens | None, stable: bool) -> int:
    """How far apart clip points are; unstable clipping cuts anywhere (a step of one character: the exact budget)."""
    if not stable:
        return 1
    chars = budget if count_tokens is None else budget * CHARS_PER_TOKEN
    return max(1, chars // CLIP_STEPS)


def _start_cut(text: str, k: int, step: int) -> int:
    """The k-th place where a kept prefix may start: the first line start in [k*step, (k+1)*step), else k*step.

    It depends only on the text near k*step, so typing at the end of the text does not move it."""
    low = k * step
    if low <= 0:
        return 0
    if low >= len(text):
        return len(text)
    newline = text.find("\n", low - 1, min((k + 1) * step, len(text)) - 1)
    cut = newline + 1 if newline != -1 else low
    if text[cut - 1] == "\r" and cut < len(text) and text[cut] == "\n":
        cut += 1
    while cut < len(text) and unicodedata.combining(text[cut]):  # never orphan combining marks
        cut += 1
    return cut


def _end_cut(text: str, k: int, step: int) -> int:
    """The k-th place where a kept suffix may end: just after the last line end in ((k-1)*step, k*step]."""
    high = k * step
    if high >= len(text):
        return len(text)
    if high <= 0:
        return 0
    newline = text.rfind("\n", max(0, (k - 1) * step), high)
    cut = newline + 1 if newline != -1 and newline + 1 > (k - 1) * step else high
    if cut < len(text) and text[cut - 1] == "\r" and text[cut] == "\n":
        cut -= 1
    while 0 < cut < len(text) and unicodedata.combining(text[cut]):
        cut -= 1
    return cut


async def _fits_whole(text: str, budget: int, count_tokens: CountTokens | None) -> bool:
    if count_tokens is None:
        return len(text) <= budget
    # Every token covers at least one byte, so a text of at most `budget` bytes fits without asking the tokenizer
    # (an HTTP round trip to llama-server on every keystroke otherwise).
    if len(text) <= budget and len(text.encode("utf-8", "surrogatepass")) <= budget:
        return True
    # A text of more than MAX_CHARS_PER_TOKEN characters per budget token is taken not to fit: no tokenizer call.
    return len(text) <= budget * MAX_CHARS_PER_TOKEN and await count_tokens(text) <= budget


async def _smallest_fitting(lo: int, hi: int, fits: Callable[[int], Awaitable[bool]]) -> int:
    """The smallest k in [lo, hi] with fits(k), assuming fits is monotone and fits(hi) is true."""
    while lo < hi:
        mid = (lo + hi) // 2
        if await fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


async def clip_prefix(text: str, budget: int, count_tokens: CountTokens | None = None, *,
                      setting: str = "max_prefix_tokens", stable: bool = True) -> str:
    """Keep the end of `text` within `budget` (tokens with `count_tokens`, else characters), cut at a line start
    (`stable=False`: wherever the exact budget ends)."""
    check_token_budget(budget, setting)
    if budget == 0 or not text:
        return ""
    if await _fits_whole(text, budget, count_tokens):
        return text
    count = count_tokens or _count_chars
    step = _step(budget, count_tokens, stable)
    last = -(-len(text) // step)  # _start_cut(last) == len(text): the empty text always fits

    async def fits(k: int) -> bool:
        return await count(text[_start_cut(text, k, step):]) <= budget

    first = 0
    if count_tokens is not None:  # skip cut points that keep implausibly many characters per token
        first = max(0, (len(text) - budget * MAX_CHARS_PER_TOKEN) // step)
    elif len(text) > budget:
        first = max(0, (len(text) - budget) // step)
    return text[_start_cut(text, await _smallest_fitting(first, last, fits), step):]


async def clip_suffix(text: str, budget: int, count_tokens: CountTokens | None = None, *,
                      setting: str = "max_suffix_tokens", stable: bool = True) -> str:
    """Keep the start of `text` within `budget` (tokens with `count_tokens`, else characters), cut after a line end
    (`stable=False`: wherever the exact budget ends)."""
    check_token_budget(budget, setting)
    if budget == 0 or not text:
        return ""
    if await _fits_whole(text, budget, count_tokens):
        return text
    count = count_tokens or _count_chars
    step = _step(budget, count_tokens, stable)
    last = -(-len(text) // step)  # _end_cut(last) == len(text): j = 0 keeps everything
    # Search over j = last - k so that "fits" grows with j, like in clip_prefix.
    chars_cap = budget if count_tokens is None else budget * MAX_CHARS_PER_TOKEN

    async def fits(j: int) -> bool:
        return await count(text[:_end_cut(text, last - j, step)]) <= budget

    first = max(0, last - (chars_cap // step + 1))
    return text[:_end_cut(text, last - await _smallest_fitting(first, last, fits), step)]


@dataclass(frozen=True)
class ClipWindow:
    """How much text around the cursor the clipping can keep, so that a caller can hand over a window instead of the
    whole document (a keystroke then costs the same in a 2 MB file as in a 5 KB one)."""

    #: Characters before the cursor: with a tokenizer at most MAX_CHARS_PER_TOKEN per budget token are kept, plus
    #: two grid steps so the search never reaches the window's first grid point.
    before: int
    #: Characters after the cursor, likewise (+1: a cut looks one character past its grid point).
    after: int
    #: The prefix's grid step. A window starting on a multiple of it has its clip points where the whole text has
    #: them (for text without CRLF, which `to_lf` shortens), so the prompt is the same, and typing moves the start
    #: only once per `align` characters.
    align: int


def clip_window(max_prefix_tokens: int, max_suffix_tokens: int) -> ClipWindow:
    """The window `build_prompt` needs for these budgets (see ClipWindow)."""
    prefix_step = _step(max_prefix_tokens * CHARS_PER_TOKEN, None, True)
    suffix_step = _step(max_suffix_tokens * CHARS_PER_TOKEN, None, True)
    return ClipWindow(before=max_prefix_tokens * MAX_CHARS_PER_TOKEN + 2 * prefix_step,
                      after=max_suffix_tokens * MAX_CHARS_PER_TOKEN + 2 * suffix_step + 1, align=prefix_step)


# ---------------------------------------------------------------------------------------------------------------------
# Context from other files


def comment_blocks(snippets: tuple[ContextSnippet, ...], line_comment: str | None, current: str | None) -> str:
    """Snippets as path-labelled blocks in the language's comment syntax, for the top of the prefix:

        # Path: pkg/util.py
        <code>
        # Path: pkg/main.py          (the current file, so the model knows where the prefix starts)

    The code stays verbatim (commenting every line would make the model copy it less faithfully). Languages without
    a line comment get no blocks: text that is not valid there would be worse than none."""
    if not snippets or not line_comment:
        return ""
    parts = [f"{line_comment} Path: {s.filename}\n{with_newline(s.text)}" for s in snippets]
    if current:
        parts.append(f"{line_comment} Path: {current}\n")
    return "".join(parts)


def repo_blocks(snippets: tuple[ContextSnippet, ...], form: RepoForm, repo: str, current: str | None) -> str:
    """The family's repository-level form (Qwen2.5-Coder `<|repo_name|>`/`<|file_sep|>`, StarCoder2 …)."""
    if not snippets:
        return ""
    head = _fill(form.header, {"repo": repo or "workspace"})
    files = "".join(_fill(form.file, {"filename": s.filename, "text": with_newline(s.text)}) for s in snippets)
    return head + files + _fill(form.current, {"filepath": current or ""})


def _fill(form: str, values: dict[str, str]) -> str:
    """One pass, so a value that looks like a placeholder stays as it is."""
    return _ANY_PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), form)


def with_newline(text: str) -> str:
    """`text` ending in "\n" ("\n" added when it does not): a block of a prompt (a snippet, a next-edit excerpt)
    then never runs into the line after it."""
    return text if text.endswith("\n") else text + "\n"


# ---------------------------------------------------------------------------------------------------------------------
# Line endings


def detect_crlf(text: str) -> bool:
    """True when the first line ending of `text` is CRLF."""
    newline = text.find("\n")
    return newline > 0 and text[newline - 1] == "\r"


def to_lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def restore_line_endings(completion: str, crlf: bool) -> str:
    """Back to the document's line endings: every "\\n" becomes "\\r\\n" (leading and consecutive ones included)."""
    if not crlf:
        return completion
    return completion.replace("\r\n", "\n").replace("\n", "\r\n")


# ---------------------------------------------------------------------------------------------------------------------
# Token healing


def healing_split(prefix: str) -> tuple[str, str]:
    """(kept, removed): a prefix that ends in blanks after code on its line (`return `, `x = `) ends mid-token for
    the model's tokenizer, where a space belongs to the word after it (SentencePiece's `▁x`, BPE's `Ġx`). A prompt
    ending in a lone space is text the model has hardly ever seen, so it writes a line break or junk (measured: 20-50 %
    empty answers after `return `, `= `, `new `). The prompt ends at the last whole token instead (the blanks
    removed) and the generation has to begin with them again (`engine.code.Healer`). A blank-only line (the
    indentation an editor inserts) is left alone: there the blanks are whole tokens before a word, as in every
    indented file."""
    kept = prefix.rstrip(" \t")
    removed = prefix[len(kept):]
    if not removed or not kept[kept.rfind("\n") + 1:].strip():
        return prefix, ""
    return kept, removed


def healed_prompt(prompt: Prompt) -> tuple[Prompt, str]:
    """The prompt to send and the text its generation must begin with ("" when nothing is healed).

    Prefix-only prompts only: a FIM model sees the prefix end before its suffix marker, and FIM training splits
    documents at any character, so a prefix ending in a blank is nothing new to it."""
    if prompt.suffix is not None:
        return prompt, ""
    kept, removed = healing_split(prompt.prefix)
    if not removed or not prompt.text.endswith(removed):
        return prompt, ""
    return replace(prompt, text=prompt.text[:-len(removed)], prefix=kept), removed


# ---------------------------------------------------------------------------------------------------------------------


async def build_prompt(request: CompletionRequest, template: PromptTemplate, *, max_prefix_tokens: int,
                       max_suffix_tokens: int, count_tokens: CountTokens | None = None,
                       stable_clip: bool = True, line_comment: str | None = None,
                       native_context: bool = False) -> Prompt:
    """Clip both sides (LF line endings), then template. Budgets are tokens; without a tokenizer, CHARS_PER_TOKEN
    characters per token. `stable_clip=False` clips to the exact budget (see ModelConfig.stable_clip).

    The request's context snippets (already budgeted by the caller) go first, so that they form a stable prompt
    beginning: the family's repository form when the template has one, else path-labelled blocks in
    `line_comment`'s syntax. `native_context`: the backend sends them itself (llama-server `/infill` input_extra)."""
    check_token_budget(max_prefix_tokens, "max_prefix_tokens")
    check_token_budget(max_suffix_tokens, "max_suffix_tokens")
    if count_tokens is not None:
        try:
            return await _build(request, template, max_prefix_tokens, max_suffix_tokens, count_tokens, stable_clip,
                                line_comment, native_context)
        except Exception as exc:  # a completion clipped by characters beats no completion
            log.warning("counting tokens failed (%s); clipping the prompt by characters instead", exc)
    return await _build(request, template, max_prefix_tokens, max_suffix_tokens, None, stable_clip, line_comment,
                        native_context)


def render_context(request: CompletionRequest, template: PromptTemplate, line_comment: str | None) -> str:
    """The text put before the templated prompt for the request's snippets ("" without any)."""
    current = request.relative_path or request.filepath
    if template.repo is not None:
        return repo_blocks(request.context, template.repo, request.repo, current)
    return comment_blocks(request.context, line_comment, current)


async def _build(request: CompletionRequest, template: PromptTemplate, max_prefix_tokens: int,
                 max_suffix_tokens: int, count_tokens: CountTokens | None, stable_clip: bool,
                 line_comment: str | None = None, native_context: bool = False) -> Prompt:
    scale = 1 if count_tokens is not None else CHARS_PER_TOKEN
    prefix_task = clip_prefix(to_lf(request.prefix), max_prefix_tokens * scale, count_tokens, stable=stable_clip)
    if template.prefix_only:
        prefix, suffix = await prefix_task, None
    else:
        suffix_task = clip_suffix(to_lf(request.suffix), max_suffix_tokens * scale, count_tokens, stable=stable_clip)
        prefix, suffix = await asyncio.gather(prefix_task, suffix_task)
    render = functools.partial(template.render, filepath=request.filepath, language=request.language)
    if not request.context:
        text = render(prefix, suffix or "")
        return Prompt(text=text, prefix=prefix, suffix=suffix, language=request.language, filepath=request.filepath)
    block = comment_blocks(request.context, line_comment, request.relative_path or request.filepath)
    if native_context:  # the backend sends the snippets in its own field
        text = render(prefix, suffix or "")
    elif template.repo is not None:
        text = render_context(request, template, line_comment) + render(prefix, suffix or "")
    else:  # at the top of the prefix, inside the FIM markers
        text = render(block + prefix, suffix or "")
    return Prompt(text=text, prefix=prefix, suffix=suffix, language=request.language, filepath=request.filepath,
                  context=request.context, context_block=block)
