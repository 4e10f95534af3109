"""Files changed on disk after the scan: watched-file events from the client, and a periodic re-check for clients
that cannot send them.

Both only say *which paths to look at again*; what a path then holds (indexed, changed, ignored, gone) is decided by
looking at the disk with the walk's own rules (`scan.entry_for`), so an event that is late, duplicated, or of the
wrong kind (an editor that saves by writing a temporary file and renaming it) still ends in the right state. The
looking is done in `WorkspaceContext.refresh_files`, from the once-a-second tick, never on the request path."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable

from lsprotocol import types

from ..secrets import uri_to_path
from .scan import EXTENSIONS, FileEntry, entry_for, language_of, read_text, skipped_dir

#: Paths looked at again per tick. Reading is done in a worker thread, but indexing a file (identifiers, tree-sitter
#: tags) runs on the event loop, about 1.8 ms of CPU per file (measured on 500 site-packages files): 32 files keep a
#: tick's stall near 60 ms, and a branch switch touching 50 files is indexed within two ticks.
FILES_PER_TICK = 32
#: More pending paths than this (a large branch switch, a formatter run over the tree) start one full scan in the
#: worker thread instead (it swaps in fresh indexes at once) rather than ten seconds of ticks.
RESCAN_AFTER = 300
#: The re-check walks the folders again every RECHECK_S seconds while no request is running. 30 s: someone who
#: switched branches or ran a formatter outside the editor sees the context catch up within half a minute, and a
#: walk only stats files (it reads only the files whose mtime or size changed): 60 ms of CPU for 2,000 files and
#: 110 ms for 5,000 (the `max_files` default), measured on site-packages, i.e. 0.2-0.4 % of a core at this period.
#: A slower walk (a huge tree, a network drive) stretches the period to RECHECK_FACTOR times its duration, so the
#: re-check never takes more than 1 % of a core. No setting: nothing here is a matter of taste.
RECHECK_S = 30.0
RECHECK_FACTOR = 100.0
#: The server's registration id (to unregister or re-register under the same name).
REGISTRATION_ID = "infill-workspace-files"


def watchers() -> list[types.FileSystemWatcher]:
    """What to watch (`client/registerCapability`): the indexed extensions, `.gitignore` files (a change may include
    or leave out files) and deletions of anything, for a deleted folder (clients report it as the folder alone,
    which the extension glob does not match). Plain `**/` globs rather than RelativePatterns per folder: every
    client supports them, and they stay right when folders are added; events outside the folders are dropped."""
    extensions = ",".join(sorted(ext.lstrip(".") for ext in EXTENSIONS))
    return [types.FileSystemWatcher(glob_pattern=f"**/*.{{{extensions}}}"),
            types.FileSystemWatcher(glob_pattern="**/.gitignore"),
            types.FileSystemWatcher(glob_pattern="**/*", kind=types.WatchKind.Delete)]


def registration() -> types.RegistrationParams:
    return types.RegistrationParams(registrations=[types.Registration(
        id=REGISTRATION_ID, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers()))])


def client_can_watch(capabilities: Any) -> bool:
    """Whether the client declared `workspace.didChangeWatchedFiles.dynamicRegistration`."""
    workspace = getattr(capabilities, "workspace", None)
    watched = getattr(workspace, "did_change_watched_files", None)
    return bool(getattr(watched, "dynamic_registration", False))


def paths_from_params(params: Any) -> list[str]:
    """The `file:` paths of a DidChangeWatchedFilesParams (attrs objects or plain dicts); others are ignored."""
    changes = params.get("changes") if isinstance(params, dict) else getattr(params, "changes", None)
    out = []
    for change in changes or ():
        uri = change.get("uri") if isinstance(change, dict) else getattr(change, "uri", None)
        if isinstance(uri, str) and uri.startswith("file:"):
            out.append(os.path.normpath(uri_to_path(uri)))
    return out


def worth_looking(path: str, folders: list[str]) -> bool:
    """Whether a path may hold indexed files: inside a workspace folder, not in (or being) a folder the walk always
    skips (`node_modules`, `.git`, …). A pure string test, so a client reporting every file of `npm install` or of
    a `git gc` costs no disk access."""
    for folder in folders:
        root = os.path.abspath(folder).rstrip(os.sep) + os.sep
        if path.startswith(root):
            *directories, name = path[len(root):].split(os.sep)
            if any(skipped_dir(d) for d in directories):
                return False
            return name == ".gitignore" or language_of(name) is not None or not skipped_dir(name)
    return False


def next_recheck_delay(walk_seconds: float) -> float:
    return max(RECHECK_S, RECHECK_FACTOR * walk_seconds)


def changed_since(seen: dict[str, tuple[int, int]], known: dict[str, tuple[int, int]]) -> list[str]:
    """Paths to look at again after a re-check walk: new, changed (mtime or size) and vanished ones."""
    changed = [path for path, stat in seen.items() if known.get(path) != stat]
    return changed + [path for path in known if path not in seen]


def look(paths: Iterable[str], folders: list[str], *, max_bytes: int,
         excluded: Callable[[str], bool]) -> list[tuple[str, FileEntry | None, str | None]]:
    """(path, entry, text) for each path as it is on disk now: entry None when the walk would skip it (or it is gone
    or a folder), text None when it is not readable as text (binary). Runs in a worker thread."""
    gitignores: dict[str, object] = {}
    out: list[tuple[str, FileEntry | None, str | None]] = []
    for path in paths:
        entry = entry_for(path, folders, max_bytes=max_bytes, excluded=excluded, gitignores=gitignores)
        out.append((path, entry, read_text(entry.path, max_bytes) if entry is not None else None))
    return out
