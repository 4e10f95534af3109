"""The `context` settings: which sources feed workspace context, how much of the prompt it may take, how it ranks.

Kept apart from lsp_server/config.py (which only holds a `context` field of this type) so the workspace package owns
its knobs and their validation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RANKINGS = ("bm25", "jaccard")


@dataclass(frozen=True)
class ContextSettings:
    """Defaults come from bench/quality/crosscode.py (docs/context.md has the figures)."""

    #: Master switch: off, every prompt is built from the current file alone.
    enabled: bool = True
    #: Tokens of the prompt that snippets from other files may take (counted with the prompt's own token counter).
    budget_tokens: int = 512
    #: At most this many snippets per request.
    max_snippets: int = 6
    #: How candidate windows are scored against the code around the cursor.
    ranking: Literal["bm25", "jaccard"] = "bm25"
    # --- sources -----------------------------------------------------------------------------------------------
    #: Windows of the other documents open in the editor.
    open_documents: bool = True
    #: Code around recent edits and around the places where completions were requested (viewed ranges).
    recent_edits: bool = True
    recent_views: bool = True
    #: Text the editor reports as copied or yanked (`infill/didYank`).
    yanks: bool = True
    #: Files of the workspace folders on disk (scanned in the background, honouring .gitignore).
    workspace_files: bool = True
    #: Definitions of the identifiers near the cursor (tree-sitter tags of workspace and open files).
    definitions: bool = True
    #: Re-rank the best candidates with the configured embedding backend (only when `embedding` is configured).
    embedding_rerank: bool = True
    #: Prefix-only models never see the code after the cursor; >0 shows that many lines of it as a labelled block.
    #: On by default since the real-code benchmark (the cursor where editor users have it) and the accepting-user
    #: replay measured it helping there: the model uses the names the code below already uses (docs/context.md).
    next_lines: int = 15
    # --- bounds ------------------------------------------------------------------------------------------------
    #: A window (the unit of retrieval) is this many lines.
    window_lines: int = 20
    #: The workspace scan stops after this many files and skips files larger than this.
    max_files: int = 5000
    max_file_kb: int = 256
    #: Globs (in addition to the server's `exclude` and the built-in secret patterns) kept out of context only.
    exclude: tuple[str, ...] = ()
    #: Prefill the context into llama-server's cache when it changed and no request is running.
    warm_cache: bool = True

    def __post_init__(self) -> None:
        if self.budget_tokens < 0:
            raise ValueError("budget_tokens must not be negative")
        if not 0 <= self.max_snippets <= 64:
            raise ValueError("max_snippets must be from 0 to 64")
        if self.ranking not in RANKINGS:
            raise ValueError(f"ranking must be one of {', '.join(RANKINGS)}")
        if not 0 <= self.next_lines <= 200:
            raise ValueError("next_lines must be from 0 to 200")
        if not 4 <= self.window_lines <= 200:
            raise ValueError("window_lines must be from 4 to 200")
        if self.max_files < 0 or self.max_file_kb <= 0:
            raise ValueError("max_files must not be negative and max_file_kb must be positive")
