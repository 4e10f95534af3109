"""Workspace context: snippets from other files (open documents, recent edits, viewed ranges, yanks, files of the
workspace, definitions), ranked against the code around the cursor and fitted into a token budget.

Modules, one concern each: `settings` (the `context` settings), `text` (identifiers, windows, similarity), `index`
(BM25/Jaccard window index), `ring` (recent chunks), `scan` (workspace files, .gitignore), `tags` (tree-sitter
definitions), `ranking` (what to drop, what first, prompt order), `budget` (token budget), `provider` (the whole,
as the server uses it). Design and settings: docs/context.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .settings import ContextSettings

if TYPE_CHECKING:
    from .provider import CursorInfo, Selection, WorkspaceContext

__all__ = ["ContextSettings", "CursorInfo", "Selection", "WorkspaceContext"]


def __getattr__(name: str) -> Any:
    """The provider (and the indexes behind it) is imported on first use, not with the package: the settings module
    is needed to parse the configuration, the indexes only once the server runs."""
    if name in ("CursorInfo", "Selection", "WorkspaceContext"):
        from . import provider

        return getattr(provider, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
