"""Which files of the workspace folders may feed context: a bounded walk that honours .gitignore.

`.gitignore` files are matched with `pathspec`'s GitIgnoreSpec (git's own rules: negation, directory-only patterns,
anchoring, nested files) rather than a hand-written matcher. The walk never follows symlinks, skips VCS and
dependency folders, files above a size cap, binary files and files matching the exclusion globs (secrets), and
stops after `max_files` files.

Build output folders (`build/`, `dist/`, `target/`) are what `.gitignore` files usually list, so where one is in
effect it decides, as for any folder. Without any (an unpacked package, a folder that is no git checkout) there is no
such word: they are then walked only when the rest of the workspace folder holds no code, which is the case of an npm
package that ships only `build/lib` (found by the cross-file benchmark: such packages had no context at all)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Callable, Iterator

log = logging.getLogger(__name__)

#: Folders that are never project code (also when no .gitignore says so).
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", ".idea", ".vscode", ".cache", ".next", ".gradle", "vendor"})
#: Build output folders: a .gitignore in effect decides; without one they are walked only as a last resort (see the
#: module docstring).
GENERATED_DIRS = frozenset({"dist", "build", "target"})

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


@dataclass(frozen=True)
class FileEntry:
    """A file the walk would index, before it is read: its (mtime_ns, size) tells the re-check whether it changed."""

    path: str        # absolute
    label: str       # relative to its workspace folder, "/"-separated
    language_id: str
    stat: tuple[int, int]  # (st_mtime_ns, st_size)


def _gitignore(directory: str, cache: dict[str, object] | None = None):
    """The directory's .gitignore as a GitIgnoreSpec, or None (memoised in `cache` when one is given)."""
    if cache is not None and directory in cache:
        return cache[directory]
    path = os.path.join(directory, ".gitignore")
    spec = None
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        pass
    else:
        import pathspec

        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    if cache is not None:
        cache[directory] = spec
    return spec


def _ignored(specs: list[tuple[str, object]], path: str, is_dir: bool) -> bool:
    """Git's rule: the deepest .gitignore that has an opinion wins; a negation can re-include."""
    ignored = False
    for base, spec in specs:
        relative = os.path.relpath(path, base).replace(os.sep, "/") + ("/" if is_dir else "")
        result = spec.check_file(relative)  # type: ignore[attr-defined]
        if result.include is not None:
            ignored = bool(result.include)
    return ignored


def skipped_dir(name: str) -> bool:
    return name in SKIP_DIRS or name.startswith(".")


def _first_time(path: str, seen: set[str]) -> bool:
    """Whether `path` is not in `seen` yet (then it is added): a file walked again, from a folder listed twice or
    one inside another, counts once."""
    if path in seen:
        return False
    seen.add(path)
    return True


def walk(folders: list[str], *, max_files: int, max_bytes: int, excluded: Callable[[str], bool],
         stop: Callable[[], bool] = lambda: False) -> Iterator[FileEntry]:
    """The files the scan reads, without reading them (bounded; see the module docstring): what the full scan and
    the periodic re-check both walk, so they agree on which files belong to the workspace."""
    count = 0
    seen: set[str] = set()  # a folder listed twice, or inside another, is walked once: each file counts once
    for folder in folders:
        root = os.path.abspath(folder)
        if not os.path.isdir(root):
            continue
        deferred: list[tuple[str, list[tuple[str, object]]]] = []
        found = 0
        for entry in _walk_tree(root, [(root, [])], max_bytes, excluded, deferred, stop):
            if stop() or count >= max_files:
                return
            found += 1
            if _first_time(entry.path, seen):
                count += 1
                yield entry
        if found:
            continue
        for entry in _walk_tree(root, deferred, max_bytes, excluded, None, stop):  # the folder's only code, if any
            if stop() or count >= max_files:
                return
            if _first_time(entry.path, seen):
                count += 1
                yield entry


def _walk_tree(root: str, stack: list[tuple[str, list[tuple[str, object]]]], max_bytes: int,
               excluded: Callable[[str], bool], deferred: list[tuple[str, list[tuple[str, object]]]] | None,
               stop: Callable[[], bool] = lambda: False) -> Iterator[FileEntry]:
    """Depth first from the directories on `stack` (each with the .gitignore specs above it). With `deferred`, build
    output folders under no .gitignore are put there instead of being walked."""
    stack = list(reversed(stack))
    while stack and not stop():
        directory, inherited = stack.pop()
        spec = _gitignore(directory)
        specs = inherited + [(directory, spec)] if spec is not None else inherited
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir():
                    if skipped_dir(entry.name) or _ignored(specs, entry.path, True):
                        continue
                    if deferred is not None and entry.name in GENERATED_DIRS and not specs:
                        deferred.append((entry.path, specs))
                    else:
                        subdirs.append(entry.path)
                    continue
                language_id = language_of(entry.name)
                if language_id is None or _ignored(specs, entry.path, False) or excluded(entry.path):
                    continue
                stat = entry.stat()
            except OSError:
                continue
            if stat.st_size > max_bytes:
                continue
            label = os.path.relpath(entry.path, root).replace(os.sep, "/")
            yield FileEntry(entry.path, label, language_id, (stat.st_mtime_ns, stat.st_size))
        for sub in reversed(subdirs):
            stack.append((sub, specs))


def _has_code_outside_generated(root: str, max_bytes: int, excluded: Callable[[str], bool],
                                cache: dict[str, object] | None) -> bool:
    """Whether the walk finds a file of the folder outside its deferred build output folders (memoised in
    `cache`, which lives for one batch of watched-file events)."""
    key = "\0code-outside-generated:" + root
    if cache is not None and key in cache:
        return bool(cache[key])
    found = next(_walk_tree(root, [(root, [])], max_bytes, excluded, []), None) is not None
    if cache is not None:
        cache[key] = found
    return found


def entry_for(path: str, folders: list[str], *, max_bytes: int, excluded: Callable[[str], bool],
              gitignores: dict[str, object] | None = None) -> FileEntry | None:
    """The one file as the walk would see it, or None when the walk would skip it (outside the folders, in a
    skipped or ignored folder, ignored, excluded, too large, a symlink, gone). For watched-file events: the same
    rules as the walk without walking. `gitignores` memoises .gitignore files across a batch of events."""
    path = os.path.abspath(path)
    language_id = language_of(path)
    if language_id is None or excluded(path):
        return None
    for folder in folders:
        root = os.path.abspath(folder)
        if not path.startswith(root.rstrip(os.sep) + os.sep):
            continue
        parts = os.path.relpath(path, root).split(os.sep)
        specs: list[tuple[str, object]] = []
        directory = root
        generated = False  # inside a build output folder that the walk defers
        try:
            for name in parts[:-1]:
                spec = _gitignore(directory, gitignores)
                if spec is not None:
                    specs = specs + [(directory, spec)]
                directory = os.path.join(directory, name)
                if skipped_dir(name) or os.path.islink(directory) or _ignored(specs, directory, True):
                    return None
                generated = generated or (name in GENERATED_DIRS and not specs)
            if generated and _has_code_outside_generated(root, max_bytes, excluded, gitignores):
                return None
            spec = _gitignore(directory, gitignores)
            if spec is not None:
                specs = specs + [(directory, spec)]
            if _ignored(specs, path, False):
                return None
            stat = os.lstat(path)
        except OSError:
            return None
        if not S_ISREG(stat.st_mode) or stat.st_size > max_bytes:
            return None
        return FileEntry(path, "/".join(parts), language_id, (stat.st_mtime_ns, stat.st_size))
    return None


def read_text(path: str, max_bytes: int) -> str | None:
    """The file's text, or None when it cannot be read, grew over the cap or is binary (a NUL in its first 4 KB)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError:
        return None
    if len(raw) > max_bytes or b"\0" in raw[:4096]:
        return None
    return raw.decode("utf-8", "replace")


def scan(folders: list[str], *, max_files: int, max_bytes: int, excluded: Callable[[str], bool],
         stop: Callable[[], bool] = lambda: False) -> Iterator[ScannedFile]:
    """Yield the workspace's code files (bounded; see the module docstring). Runs in a worker thread."""
    for entry in walk(folders, max_files=max_files, max_bytes=max_bytes, excluded=excluded, stop=stop):
        text = read_text(entry.path, max_bytes)
        if text is not None:
            yield ScannedFile(entry.path, entry.label, entry.language_id, text)


def folder_name(folders: list[str]) -> str:
    return Path(folders[0]).name if folders else ""
