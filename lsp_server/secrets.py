"""Files that must never reach a model backend (keys, certificates, dotenv files).

A remote backend would receive the file's text in the prompt, so these are refused before any context is built.
Globs match the file name and, when they contain a "/", the whole path."""

from __future__ import annotations

import fnmatch
import posixpath
from urllib.parse import unquote, urlparse

DEFAULT_EXCLUDES: tuple[str, ...] = (".env*", "*.pem", "*.key", "id_rsa*", "*secret*")


def uri_to_path(uri: str) -> str:
    try:
        parsed = urlparse(uri)
    except ValueError:  # e.g. an unbalanced "[" in the authority: the URI as written still names the file
        return unquote(uri)
    if parsed.scheme in ("file", ""):
        return unquote(parsed.path)
    return unquote(parsed.path or uri)


def excluded_by(uri_or_path: str, extra: tuple[str, ...] = ()) -> str | None:
    """The first glob that matches the file, or None. Matching ignores case (`.ENV`, `Secret.txt`)."""
    path = uri_to_path(uri_or_path) if "://" in uri_or_path else uri_or_path
    path = path.replace("\\", "/")
    name = posixpath.basename(path).lower()
    for glob in DEFAULT_EXCLUDES + tuple(extra):
        pattern = glob.lower()
        if "/" in pattern:
            lower = path.lower()
            if fnmatch.fnmatchcase(lower, pattern) or fnmatch.fnmatchcase(lower, "*/" + pattern.lstrip("/")):
                return glob
        elif fnmatch.fnmatchcase(name, pattern):
            return glob
    return None
