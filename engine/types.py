"""Plain data passed between the stages of a completion: request → prompt → stream → completion.

Everything here is a dataclass so that each stage can be tested alone and the LSP layer never sees wire formats."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from .validation import check_stop_words

Mode = Literal["standard", "next_edit_suggestion"]
MODES: tuple[str, ...] = ("standard", "next_edit_suggestion")


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class CompletionOptions:
    """How to sample one completion. Validated on construction; a bad value raises ValueError naming the field."""

    max_decoding_tokens: int = 64
    sampling_temperature: float = 0.1
    seed: int = field(default_factory=_now_ms)
    presence_penalty: float = 0.0
    stop_words: tuple[str, ...] = ()
    mode: Mode = "standard"
    #: After this many milliseconds of generation the completion ends at the next line break, so a suggestion
    #: arrives within a bound (llama-server's `t_max_predict_ms`, and a client-side cut for every backend).
    time_budget_ms: int | None = None
    #: llama-server slot to run on; None: Infill's own server chooses one (`engine.local.slots`), another
    #: llama-server chooses itself. Other backends ignore it.
    slot: int | None = None
    #: A guess made ahead of the user (the prefetch): on Infill's own server it never evicts the user's prompt cache.
    speculative: bool = False
    #: Ask for each generated token's log-probability where the backend can (llama-server's `n_probs`; it costs
    #: generation speed there, see docs/benchmarks.md). The others ignore it and report none.
    logprobs: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.max_decoding_tokens, int) or isinstance(self.max_decoding_tokens, bool) \
                or self.max_decoding_tokens <= 0:
            raise ValueError(f"max_decoding_tokens must be a positive integer, got {self.max_decoding_tokens!r}")
        if not isinstance(self.sampling_temperature, (int, float)) or isinstance(self.sampling_temperature, bool) \
                or not 0.0 <= float(self.sampling_temperature) <= 2.0:
            raise ValueError(f"sampling_temperature must be a number from 0 to 2, got {self.sampling_temperature!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        if not isinstance(self.presence_penalty, (int, float)) or isinstance(self.presence_penalty, bool) \
                or not -2.0 <= float(self.presence_penalty) <= 2.0:
            raise ValueError(f"presence_penalty must be a number from -2 to 2, got {self.presence_penalty!r}")
        object.__setattr__(self, "stop_words", check_stop_words(self.stop_words))
        for name in ("time_budget_ms", "slot"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(f"{name} must be a non-negative integer or None, got {value!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")


@dataclass(frozen=True)
class ContextSnippet:
    """Code from another file (or another part of this one) shown to the model besides the prefix and suffix.

    `filename` is a label (a workspace-relative path), `text` is the code with LF line endings. The LSP layer
    chooses, ranks and budgets snippets; the engine only renders them in the prompt form of the model."""

    filename: str
    text: str


@dataclass(frozen=True)
class CompletionRequest:
    """The cursor's context as the editor sees it. Text uses "\\n" or "\\r\\n" exactly as the document does.

    `context`: snippets from other files, most relevant LAST (nearest to the cursor in the prompt), in an order that
    stays the same between requests so that the model server's prompt cache keeps working."""

    prefix: str
    suffix: str = ""
    language: str = "plaintext"
    filepath: str | None = None
    context: tuple[ContextSnippet, ...] = ()
    #: The workspace's name and the file's path inside it, for the labels of the context blocks.
    repo: str = ""
    relative_path: str | None = None


@dataclass(frozen=True)
class Prompt:
    """What a completion stream receives.

    `text` is the fully templated prompt for backends that take one string. `prefix`/`suffix` are the same clipped
    context before templating, for FIM-native backends (llama.cpp `/infill`, OpenAI `suffix`, Mistral FIM,
    Ollama `suffix`). `suffix` is None in prefix-only mode."""

    text: str
    prefix: str
    suffix: str | None = None
    language: str = "plaintext"
    filepath: str | None = None
    #: The snippets of the request, for backends that take them apart (llama-server `/infill` `input_extra`).
    context: tuple[ContextSnippet, ...] = ()
    #: The snippets rendered as labelled comment blocks, for FIM-native backends that take a prefix and a suffix
    #: (they are put in front of the prefix); "" without context. `text` already holds the context in its form.
    context_block: str = ""

    @property
    def prefix_with_context(self) -> str:
        """The prefix for FIM-native backends without a field for other files (OpenAI, Mistral, Ollama FIM)."""
        return self.context_block + self.prefix


class StopReason(str, enum.Enum):
    """Why a generation ended: the model's own end (its end token: END_OF_STREAM; an end sentinel written as text:
    END_SENTINEL), a stop word of the language or the request, or a token (or time) limit."""

    STOP_WORD = "stop_word"
    TOKEN_LIMIT = "token_limit"
    TIME_BUDGET = "time_budget"
    END_OF_STREAM = "end_of_stream"
    END_SENTINEL = "end_sentinel"


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token as the backend reports it: its text and the natural log of its probability under the
    model (before sampling: with greedy decoding, how sure the model was of the token it wrote)."""

    text: str
    logprob: float


@dataclass
class GenerationStats:
    """Filled in by a backend while it streams, when it knows (llama-server reports these in `timings`).

    Passed by the caller; a backend that knows nothing leaves it alone."""

    prompt_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    generated_tokens: int | None = None
    hit_token_limit: bool = False
    #: The caller's deadline ended the generation (the text is cut like at a token limit).
    hit_deadline: bool = False
    timings: dict[str, Any] = field(default_factory=dict)
    #: Each generated token with its log-probability, in order, when the request asked for them
    #: (`CompletionOptions.logprobs`) and the backend reports them; None otherwise.
    tokens: list[TokenLogprob] | None = None

    def add_token(self, token: TokenLogprob) -> None:
        if self.tokens is None:
            self.tokens = []
        self.tokens.append(token)


@dataclass(frozen=True)
class Completion:
    text: str
    stop_reason: StopReason
    stats: GenerationStats = field(default_factory=GenerationStats)
    prompt: Prompt | None = None
    #: The stop word that ended the text (STOP_WORD and END_SENTINEL), else None.
    stop_word: str | None = None
    #: Characters the token healing took off the start of the model's text (the prompt's removed blanks).
    healed_chars: int = 0

    def token_logprobs(self) -> tuple[tuple[int, float], ...] | None:
        """(offset in `text` where a token starts, its log-probability) for each token of the text, with LF line
        endings as the stop rules see them; None when the backend reported no log-probabilities or the tokens do not
        spell the text (a token split inside a UTF-8 character)."""
        tokens = self.stats.tokens
        if not tokens:
            return None
        text = self.text.replace("\r\n", "\n")
        spelled = "".join(token.text for token in tokens)[self.healed_chars:]
        if not spelled.startswith(text):
            return None
        out: list[tuple[int, float]] = []
        offset = -self.healed_chars
        for token in tokens:
            end = offset + len(token.text)
            if end > 0 and offset < len(text):
                out.append((max(offset, 0), token.logprob))
            offset = end
        return tuple(out)

    @property
    def saw_suffix(self) -> bool:
        """The model was given the code after the cursor (a FIM template or the backend's native infill)."""
        return self.prompt is not None and self.prompt.suffix is not None


# --- status -----------------------------------------------------------------------------------------------------------
# Here, below every engine module, because the engine, the local server, its supervisor and the model resolution all
# report progress: defined in `engine.api` they made an import circle.

StatusKind = Literal["starting", "ready", "busy", "error", "disabled"]


@dataclass(frozen=True)
class StatusEvent:
    kind: StatusKind
    message: str
    detail: str | None = None
    #: 0-100 while starting, when known.
    percent: int | None = None


StatusCallback = Callable[[StatusEvent], None]


# --- chat -----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """An OpenAI-shaped chat request. Vendors' differences are applied by a per-vendor normalisation table."""

    messages: tuple[ChatMessage, ...]
    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    user: str | None = None
    stop: tuple[str, ...] = ()

    def to_openai(self) -> dict[str, Any]:
        body: dict[str, Any] = {"messages": [{"role": m.role, "content": m.content} for m in self.messages]}
        for name in ("model", "max_tokens", "temperature", "presence_penalty", "frequency_penalty", "seed", "user"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        if self.stop:
            body["stop"] = list(self.stop)
        return body


@dataclass(frozen=True)
class ChatChunk:
    """One streamed piece of an assistant message (OpenAI `choices[0].delta.content`)."""

    content: str
    finish_reason: str | None = None
