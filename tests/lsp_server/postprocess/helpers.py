"""Building contexts from a document with a ║ cursor mark."""

from __future__ import annotations

from lsp_server.postprocess import PostprocessContext

CURSOR = "║"


def ctx(document: str, language: str = "python", **options) -> PostprocessContext:
    prefix, suffix = document.split(CURSOR)
    return PostprocessContext(prefix=prefix, suffix=suffix, language=language, **options)
