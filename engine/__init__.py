"""Infill's inference layer: completion/chat/embedding streams, stop rules, FIM prompts, backends and models.

It never imports the LSP layer. The LSP server reaches it through `engine.api` (see there)."""

__version__ = "0.1.0"
