"""Which files of the workspace folders may feed context: a bounded walk that honours .gitignore.

`.gitignore` files are matched with `pathspec`'s GitIgnoreSpec (git's own rules: negation, directory-only patterns,
anchoring, nested files) rather than a hand-written matcher. The walk never follows symlinks, skips VCS and
dependency folders, files above a size cap, binary files and files matching the exclusion globs (secrets), and
stops after `max_files` files."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

log = logging.getLogger(__name__)

#: Folders that are never project code (also when no .gitignore says so).
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", ".idea", ".vscode", ".cache", "dist", "build", "target",
                       ".next", ".gradle", "vendor"})

#: File extension → LSP languageId, for the languages worth indexing.
EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascriptreact", ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "typescriptreact", ".rs": "rust", ".go": "go", ".java": "java", ".c": "c", ".h": "c", ".cc": "cpp",
    ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".cs": "csharp", ".kt": "kotlin", ".rb": "ruby",
    ".php": "php", ".lua": "lua", ".scala": "scala", ".swift": "swift", ".dart": "dart", ".ex": "elixir",
    ".exs": "elixir", ".hs": "haskell", ".jl": "julia", ".sh": "shellscript", ".sql": "sql", ".vue": "vue",
}


def language_of(path: str) -> str | None:
    return EXTENSIONS.get(os.path.splitext(path)[1].lower())


@dataclass(frozen=True)
class ScannedFile:
    path: str        # absolute
    label: str       # relative to its workspace folder, "/"-separated
    language_id: str
    text: str


def _gitignore(directory: str):
    """The directory's .gitignore as a GitIgnoreSpec, or None."""
    path = os.path.join(directory, ".gitignore")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ignored(specs: list[tuple[str, object]], path: str, is_dir: bool) -> bool:
    """Git's rule: the deepest .gitignore that has an opinion wins; a negation can re-include."""
    ignored = False
    for base, spec in specs:
        relative = os.path.relpath(path, base).replace(os.sep, "/") + ("/" if is_dir else "")
        result = spec.check_file(relative)  # type: ignore[attr-defined]
        if result.include is not None:
            ignored = bool(result.include)
    return ignored


def scan(folders: list[str], *, max_files: int, max_bytes: int, excluded: Callable[[str], bool],
         stop: Callable[[], bool] = lambda: False) -> Iterator[ScannedFile]:
    """Yield the workspace's code files (bounded; see the module docstring). Runs in a worker thread."""
    count = 0
    for folder in folders:
        root = os.path.abspath(folder)
        if not os.path.isdir(root):
            continue
        stack: list[tuple[str, list[tuple[str, object]]]] = [(root, [])]
        while stack:
            directory, inherited = stack.pop()
            spec = _gitignore(directory)
            specs = inherited + [(directory, spec)] if spec is not None else inherited
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError:
                continue
            subdirs = []
            for entry in entries:
                if stop() or count >= max_files:
                    return
                try:
                    if entry.is_symlink():
                        continue
                    if entry.is_dir():
                        if entry.name in SKIP_DIRS or entry.name.startswith(".") \
                                or _ignored(specs, entry.path, True):
                            continue
                        subdirs.append(entry.path)
                        continue
                    language_id = language_of(entry.name)
                    if language_id is None or _ignored(specs, entry.path, False) or excluded(entry.path):
                        continue
                    if entry.stat().st_size > max_bytes:
                        continue
                    with open(entry.path, "rb") as fh:
                        raw = fh.read(max_bytes + 1)
                except OSError:
                    continue
                if b"\0" in raw[:4096]:
                    continue
                count += 1
                label = os.path.relpath(entry.path, root).replace(os.sep, "/")
                yield ScannedFile(entry.path, label, language_id, raw.decode("utf-8", "replace"))
            for sub in reversed(subdirs):
                stack.append((sub, specs))


def folder_name(folders: list[str]) -> str:
    return Path(folders[0]).name if folders else ""
