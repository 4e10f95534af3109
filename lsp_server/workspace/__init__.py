"""Workspace context: snippets from other files (open documents, recent edits, viewed ranges, yanks, files of the
workspace, definitions), ranked against the code around the cursor and fitted into a token budget.

Modules, one concern each: `settings` (the `context` settings), `text` (identifiers, windows, similarity), `index`
(BM25/Jaccard window index), `ring` (recent chunks), `scan` (workspace files, .gitignore), `tags` (tree-sitter
definitions), `ranking` (what to drop, what first, prompt order), `budget` (token budget), `provider` (the whole,
as the server uses it). Design and settings: docs/context.md."""

from .provider import CursorInfo, Selection, WorkspaceContext
from .settings import ContextSettings

__all__ = ["ContextSettings", "CursorInfo", "Selection", "WorkspaceContext"]
