"""Infill's language server: documents, the inline-completion handler, post-processing, cache, configuration."""

from engine import __version__

__all__ = ["__version__"]
