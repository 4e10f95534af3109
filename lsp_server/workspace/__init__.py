"""Workspace context: snippets from other files (open documents, recent edits, viewed ranges, yanks, files of the
workspace, definitions), ranked against the code around the cursor and fitted into a token budget.

Modules, one concern each: `settings` (the `context` settings), `text` (identifiers, windows, similarity), `index`
(BM25/Jaccard window index), `ring` (recent chunks), `scan` (workspace files, .gitignore), `tags` (tree-sitter
definitions), `ranking` (what to drop, what first, prompt order), `budget` (token budget), `provider` (the whole,
as the server uses it). Design and settings: docs/context.md.

The package module imports only the settings (the configuration is parsed before the server runs); import the
provider and the indexes from their modules: `from lsp_server.workspace.provider import WorkspaceContext`."""

from __future__ import annotations

from .settings import ContextSettings

__all__ = ["ContextSettings"]
