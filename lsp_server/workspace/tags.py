"""Definitions by name: a tree-sitter tags index of workspace and open files.

The queries are the grammar wheels' own `TAGS_QUERY` (tags.scm, the files GitHub's code navigation uses), so each
language's idea of a definition (function, class, method, type, constant, interface…) comes from its grammar's
maintainers rather than from node names written here. Only line ranges are kept; the text is read back when a
definition is chosen."""

from __future__ import annotations

import importlib
import logging
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

log = logging.getLogger(__name__)

#: languageId → grammar module, grammar function, tags query modules (the TypeScript wheel's tags.scm only holds
#: what TypeScript adds, so JavaScript's query runs on TypeScript files too).
_GRAMMARS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "python": ("tree_sitter_python", "language", ("tree_sitter_python",)),
    "javascript": ("tree_sitter_javascript", "language", ("tree_sitter_javascript",)),
    "typescript": ("tree_sitter_typescript", "language_typescript",
                   ("tree_sitter_javascript", "tree_sitter_typescript")),
    "typescriptreact": ("tree_sitter_typescript", "language_tsx", ("tree_sitter_javascript", "tree_sitter_typescript")),
    "rust": ("tree_sitter_rust", "language", ("tree_sitter_rust",)),
    "go": ("tree_sitter_go", "language", ("tree_sitter_go",)),
    "java": ("tree_sitter_java", "language", ("tree_sitter_java",)),
    "c": ("tree_sitter_c", "language", ("tree_sitter_c",)),
    "cpp": ("tree_sitter_cpp", "language", ("tree_sitter_cpp",)),
}
_ALIASES = {"javascriptreact": "javascript"}

#: A definition longer than this is shown by its first HEAD_LINES lines (its signature and doc comment).
MAX_LINES = 30
HEAD_LINES = 8


@dataclass(slots=True)
class Definition:
    key: str
    label: str
    name: str
    kind: str
    start: int
    end: int   # line after the last


def _tags_query_text(module_name: str) -> str:
    module = importlib.import_module(module_name)
    text = getattr(module, "TAGS_QUERY", None)
    if text:
        return text
    try:
        return resources.files(module_name).joinpath("queries", "tags.scm").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return ""


@lru_cache(maxsize=None)
def _tagger(language_id: str) -> tuple[Any, list[Any]] | None:
    """(parser, queries) for the language, or None when its grammar is not installed."""
    spec = _GRAMMARS.get(_ALIASES.get(language_id, language_id))
    if spec is None:
        return None
    try:
        import tree_sitter

        language = tree_sitter.Language(getattr(importlib.import_module(spec[0]), spec[1])())
        queries = []
        for name in spec[2]:
            text = _tags_query_text(name)
            if not text:
                continue
            try:
                queries.append(tree_sitter.Query(language, text))
            except Exception as exc:  # a query written for a sibling grammar may name nodes this one lacks
                log.debug("tags query of %s does not apply to %s: %s", name, language_id, exc)
        return (tree_sitter.Parser(language), queries) if queries else None
    except Exception as exc:
        log.info("no tree-sitter tags for %s (%s)", language_id, exc)
        return None


def supports(language_id: str) -> bool:
    return _tagger(language_id) is not None


def definitions(text: str, language_id: str, key: str = "", label: str = "") -> list[Definition]:
    """The definitions in `text` (deduplicated by name and place)."""
    tagger = _tagger(language_id)
    if tagger is None:
        return []
    import tree_sitter

    parser, queries = tagger
    tree = parser.parse(text.encode("utf-8", "surrogatepass"))
    out: dict[tuple[str, int], Definition] = {}
    for query in queries:
        for _, captures in tree_sitter.QueryCursor(query).matches(tree.root_node):
            names = captures.get("name")
            if not names:
                continue
            for capture, nodes in captures.items():
                if not capture.startswith("definition."):
                    continue
                node = nodes[0]
                name = names[0].text.decode("utf-8", "replace") if names[0].text else ""
                if not name or len(name) < 2:
                    continue
                start, end = node.start_point[0], node.end_point[0] + 1
                # Interned: the window index holds the same identifiers, and a workspace has only a few kinds.
                out.setdefault((name, start), Definition(key, label, sys.intern(name),
                                                         sys.intern(capture[len("definition."):]), start, end))
    return list(out.values())


def definition_text(lines: list[str], definition: Definition) -> str:
    """The whole definition when short, else its first lines (signature, doc comment)."""
    start = max(0, definition.start)
    end = min(len(lines), definition.end)
    if end - start > MAX_LINES:
        end = start + HEAD_LINES
    return "\n".join(lines[start:end])


class TagIndex:
    """name → definitions, per file replaceable."""

    def __init__(self) -> None:
        #: Most names have one definition: it is kept as is, a list only for several (a list per name was 3.7 MB of
        #: a 2,000-file workspace's 50).
        self._by_name: dict[str, Definition | list[Definition]] = {}
        self._by_key: dict[str, list[Definition]] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, key: str, label: str, language_id: str, text: str) -> None:
        self.remove(key)
        found = definitions(text, language_id, key, label)
        if not found:
            return
        self._by_key[key] = found
        self._count += len(found)
        for definition in found:
            same = self._by_name.get(definition.name)
            if same is None:
                self._by_name[definition.name] = definition
            elif isinstance(same, Definition):
                self._by_name[definition.name] = [same, definition]
            else:
                same.append(definition)

    def remove(self, key: str) -> None:
        found = self._by_key.pop(key, None)
        if not found:
            return
        self._count -= len(found)
        for definition in found:
            same = self._by_name.get(definition.name)
            if same is None:
                continue
            left = [d for d in ([same] if isinstance(same, Definition) else same) if d.key != key]
            if not left:
                del self._by_name[definition.name]
            else:
                self._by_name[definition.name] = left[0] if len(left) == 1 else left

    def lookup(self, name: str) -> list[Definition]:
        same = self._by_name.get(name)
        if same is None:
            return []
        return [same] if isinstance(same, Definition) else list(same)

    def memory_estimate(self) -> int:
        return sum(150 + len(d.name) for defs in self._by_key.values() for d in defs) + 100 * len(self._by_name)
