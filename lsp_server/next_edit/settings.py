"""The `[next_edit]` settings section (docs/next-edit.md, "Settings").

Model-free propagation is on by default: it costs O(window) and no model call. Model-based prediction is on only
where a model can do it: when `model` names a separate NES model, when `format` is set (the user asks the completion
model to answer in that form), or when the completion model itself is a NES model (sweep, zeta). The default
completion model (Gemma 3 270M, a FIM model) is not asked: on the benchmark it proposes far more wrong edits than
right ones (docs/next-edit.md, "Benchmark")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from engine.config import ModelConfig

Format = Literal["auto", "sweep", "zeta2", "instruction"]


@dataclass(frozen=True)
class NextEditSettings:
    enabled: bool = True
    #: Model-free: repeat the last substitution at its next occurrence (lsp_server/next_edit/propagate/).
    propagation: bool = True
    #: A separate model for next edits (a table like `completion`): its own llama-server or remote kind. None: the
    #: completion model, when it is a NES model or `format` is set.
    model: ModelConfig | None = None
    format: Format = "auto"
    #: The editable window the model rewrites: lines above and below the cursor line.
    lines_above: int = 10
    lines_below: int = 10
    #: The delay Infill's clients wait after an edit before they ask (the server itself never waits: it supersedes
    #: an older request of the same document instead).
    debounce_ms: int = 150
    max_tokens: int = 512
    #: The budget of the edit history in the prompt (about 3 characters a token).
    history_tokens: int = 1000
    #: Per LSP language id: false turns next edits off there (a language not listed follows `enabled`).
    languages: dict[str, bool] = field(default_factory=dict)
    #: Seconds a model prediction may take once the model is ready.
    request_timeout: float = 10.0
    #: When a model's edit is shown, predict the next edit for the text it makes, so that after the accept it is
    #: there at once (lsp_server/next_edit/prefetch.py); a model call the user may never use.
    prefetch: bool = True

    def __post_init__(self) -> None:
        for name in ("lines_above", "lines_below"):
            if not 0 <= getattr(self, name) <= 200:
                raise ValueError(f"{name} must be from 0 to 200")
        if self.debounce_ms < 0:
            raise ValueError("debounce_ms must not be negative")
        if self.max_tokens <= 0:
            raise ValueError("max_tokens must be a positive integer")
        if self.history_tokens < 0:
            raise ValueError("history_tokens must not be negative")
        if self.request_timeout <= 0:
            raise ValueError("request_timeout must be a positive number of seconds")

    def on_for(self, language: str) -> bool:
        return self.enabled and self.languages.get(language, True)

    def model_based(self, completion: ModelConfig) -> bool:
        """Whether next edits ask a model (else propagation only)."""
        if not self.enabled:
            return False
        if self.model is not None or self.format != "auto":
            return True
        # Imported here, as before: the settings are parsed at every start, the format rules are needed only now.
        from engine.next_edit.formats import is_next_edit_model

        return is_next_edit_model(completion.model)
