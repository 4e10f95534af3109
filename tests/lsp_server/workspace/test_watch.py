"""Files changed on disk after the scan: watched-file events, the periodic re-check, and the registration."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lsprotocol import types

from lsp_server.workspace import ContextSettings
from lsp_server.workspace import watch
from lsp_server.workspace.provider import WorkspaceContext
from lsp_server.workspace.lsp import register_watchers
from lsp_server.workspace.scan import EXTENSIONS

from tests.lsp_server.context_doubles import Doc


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def definition(name: str, body: str = "return 1") -> str:
    return f"def {name}(value):\n    {body}\n"


async def workspace(root: Path, settings: ContextSettings = ContextSettings(), exclude=()) -> tuple:
    write(root, "pkg/geometry.py", definition("area_of_circle"))
    write(root, ".gitignore", "generated/\n*.gen.py\n")
    docs: dict[str, Doc] = {}
    ws = WorkspaceContext(settings, docs, exclude)
    ws.set_folders([str(root)])
    await ws.wait_scanned()
    assert ws.status()["files_indexed"] == 1
    return ws, docs


def names(ws: WorkspaceContext) -> set[str]:
    """The definitions indexed from anywhere (disk files and open documents)."""
    return {name for name, found in ws.tags._by_name.items() if found}


async def events(ws: WorkspaceContext, *paths: Path) -> bool:
    """Report `paths` as a client would, then run the tick's disk step until nothing is pending."""
    ws.files_changed([str(p) for p in paths])
    changed = False
    while ws.status()["disk"]["pending"]:
        changed |= await ws.refresh_files()
        await ws.wait_scanned()
    return changed


async def test_a_created_file_is_indexed_at_the_tick_not_before(tmp_path):
    ws, _ = await workspace(tmp_path)
    created = write(tmp_path, "pkg/invoices.py", definition("compute_invoice_total"))
    ws.files_changed([str(created)])
    assert "compute_invoice_total" not in names(ws)  # the event only records the path
    assert await ws.refresh_files()
    assert "compute_invoice_total" in names(ws) and ws.index.has(str(created))
    status = ws.status()
    assert status["files_indexed"] == 2
    assert status["disk"] | {"mode": None} == {"mode": None, "pending": 0, "events": 1, "updated": 1, "removed": 0,
                                              "rechecks": 0, "rescans": 0}


async def test_a_changed_file_replaces_what_was_indexed(tmp_path):
    ws, _ = await workspace(tmp_path)
    geometry = write(tmp_path, "pkg/geometry.py", definition("perimeter_of_square", "return 4 * value"))
    assert await events(ws, geometry)
    assert "perimeter_of_square" in names(ws) and "area_of_circle" not in names(ws)
    assert ws.status()["files_indexed"] == 1


async def test_a_deleted_file_and_a_deleted_folder_are_dropped(tmp_path):
    ws, _ = await workspace(tmp_path)
    write(tmp_path, "lib/a.py", definition("alpha_function"))
    write(tmp_path, "lib/deep/b.py", definition("beta_function"))
    await events(ws, tmp_path / "lib/a.py", tmp_path / "lib/deep/b.py")
    assert {"alpha_function", "beta_function"} <= names(ws) and ws.status()["files_indexed"] == 3
    (tmp_path / "pkg/geometry.py").unlink()
    assert await events(ws, tmp_path / "pkg/geometry.py")
    assert "area_of_circle" not in names(ws) and ws.status()["files_indexed"] == 2
    for path in ("lib/deep/b.py", "lib/a.py", "lib/deep", "lib"):
        (tmp_path / path).unlink() if path.endswith(".py") else (tmp_path / path).rmdir()
    assert await events(ws, tmp_path / "lib")  # a client reports a deleted folder as the folder alone
    assert names(ws) == set() and len(ws.index) == 0
    status = ws.status()
    assert status["files_indexed"] == 0 and status["disk"]["removed"] == 3


async def test_excluded_ignored_and_skipped_files_are_never_indexed(tmp_path):
    ws, _ = await workspace(tmp_path, exclude=("private/*",))
    paths = [write(tmp_path, relative, definition("should_never_be_indexed"))
             for relative in ("secret_tokens.py", "private/keys.py", "generated/out.py", "pkg/table.gen.py",
                              "notes.txt")]
    await events(ws, *paths)
    skipped = [write(tmp_path, relative, definition("should_never_be_indexed"))
               for relative in ("node_modules/dep/index.js", ".git/hooks/x.py")]
    ws.files_changed([str(p) for p in skipped] + ["/elsewhere/outside.py"])
    assert ws.status()["disk"]["pending"] == 0  # never even looked at: no disk access for them
    assert "should_never_be_indexed" not in names(ws) and ws.status()["files_indexed"] == 1
    assert ws.status()["disk"]["events"] == 8


async def test_size_cap_binary_and_max_files_hold_for_changes(tmp_path):
    ws, _ = await workspace(tmp_path, ContextSettings(max_file_kb=1, max_files=2))
    big = write(tmp_path, "pkg/geometry.py", definition("area_of_circle") + "x = 1\n" * 400)
    assert await events(ws, big)  # grew over the cap: dropped
    assert ws.status()["files_indexed"] == 0
    blob = tmp_path / "blob.py"
    blob.write_bytes(b"def binary_thing():\0\1\2")
    await events(ws, blob)
    first, second = (write(tmp_path, f"new_{i}.py", definition(f"new_function_{i}")) for i in range(2))
    await events(ws, first, second)
    # the binary file is known (it counts like in the scan's walk) but not indexed; max_files = 2 leaves room for
    # one more file only
    assert names(ws) == {"new_function_0"} and ws.status()["files_indexed"] == 1


async def test_an_open_document_stays_served_from_the_document(tmp_path):
    ws, docs = await workspace(tmp_path)
    path = tmp_path / "pkg/geometry.py"
    uri = path.as_uri()
    docs[uri] = Doc(definition("area_of_circle_being_edited"))
    ws.opened(uri)
    ws.tick()
    write(tmp_path, "pkg/geometry.py", definition("formatter_wrote_this"))
    await events(ws, path)
    assert "area_of_circle_being_edited" in names(ws) and "formatter_wrote_this" not in names(ws)
    assert all(w.text is not None for w in ws.index.windows if w is not None and w.key == str(path))
    ws.closed(uri)  # closed: the disk's version is what remains
    assert "formatter_wrote_this" in names(ws) and "area_of_circle_being_edited" not in names(ws)

    docs[uri] = Doc(definition("open_again"))
    ws.opened(uri)
    ws.tick()
    path.unlink()
    await events(ws, path)
    assert "open_again" in names(ws) and ws.status()["files_indexed"] == 0
    ws.closed(uri)
    assert names(ws) == set()


async def test_a_gitignore_change_rescans(tmp_path):
    ws, _ = await workspace(tmp_path)
    write(tmp_path, "pkg/later.py", definition("later_function"))
    await events(ws, tmp_path / "pkg/later.py")
    ignore = write(tmp_path, ".gitignore", "generated/\n*.gen.py\nlater.py\n")
    await events(ws, ignore)
    assert ws.status()["disk"]["rescans"] == 1
    assert "later_function" not in names(ws) and ws.status()["files_indexed"] == 1


async def test_a_burst_of_events_rescans_once(tmp_path):
    ws, _ = await workspace(tmp_path)
    paths = [write(tmp_path, f"many/m{i}.py", definition(f"many_{i}")) for i in range(watch.RESCAN_AFTER + 1)]
    await events(ws, *paths)
    status = ws.status()
    assert status["disk"]["rescans"] == 1 and status["disk"]["updated"] == 0
    assert status["files_indexed"] == watch.RESCAN_AFTER + 2


async def test_events_wait_while_a_scan_runs_and_are_dropped_when_files_are_off(tmp_path):
    ws, _ = await workspace(tmp_path)
    created = write(tmp_path, "pkg/invoices.py", definition("compute_invoice_total"))
    ws.start_scan()
    ws.files_changed([str(created)])
    assert not await ws.refresh_files() and ws.status()["disk"]["pending"] == 1
    await ws.wait_scanned()
    await ws.refresh_files()
    assert "compute_invoice_total" in names(ws)
    ws.configure(ContextSettings(workspace_files=False), ())
    ws.files_changed([str(created)])
    assert not await ws.refresh_files() and ws.status()["disk"]["pending"] == 0


async def test_the_recheck_finds_created_changed_and_deleted_files(tmp_path):
    ws, _ = await workspace(tmp_path)
    write(tmp_path, "pkg/other.py", definition("other_function"))
    await events(ws, tmp_path / "pkg/other.py")
    read_before = ws.status()["disk"]["updated"]
    assert await ws.recheck() == 0  # nothing changed: nothing is read again
    write(tmp_path, "pkg/new.py", definition("brand_new_function"))
    write(tmp_path, "pkg/geometry.py", definition("area_of_circle_renamed", "return 3.14 * value * value"))
    (tmp_path / "pkg/other.py").unlink()
    write(tmp_path, "generated/ignored.py", definition("ignored_function"))
    assert await ws.recheck() == 3
    while ws.status()["disk"]["pending"]:
        await ws.refresh_files()
    assert names(ws) == {"brand_new_function", "area_of_circle_renamed"}
    status = ws.status()
    assert status["files_indexed"] == 2 and status["disk"]["rechecks"] == 2
    assert status["disk"]["updated"] == read_before + 2


async def test_the_recheck_never_runs_twice_at_once_and_a_scan_stops_it(tmp_path):
    ws, _ = await workspace(tmp_path)
    write(tmp_path, "pkg/new.py", definition("brand_new_function"))
    assert ws.start_recheck()
    assert not ws.start_recheck()  # one at a time
    ws.start_scan()  # reads everything itself: the re-check's walk stops and its result is dropped
    task = ws._recheck_task
    assert task is not None and await task == 0
    await ws.wait_scanned()
    assert ws.status()["disk"]["rechecks"] == 0 and "brand_new_function" in names(ws)
    assert ws.start_recheck()
    await ws.close()  # stops it too
    assert task.done() and ws._recheck_task is not None and ws._recheck_task.done()


def test_recheck_period_grows_with_a_slow_walk():
    assert watch.next_recheck_delay(0.05) == watch.RECHECK_S
    assert watch.next_recheck_delay(1.0) == 100.0


def test_changed_since_compares_mtime_and_size():
    known = {"/w/a.py": (1, 10), "/w/b.py": (1, 10), "/w/gone.py": (1, 10)}
    seen = {"/w/a.py": (1, 10), "/w/b.py": (2, 10), "/w/new.py": (3, 5)}
    assert sorted(watch.changed_since(seen, known)) == ["/w/b.py", "/w/gone.py", "/w/new.py"]


def test_paths_from_params_takes_objects_and_dicts_and_only_files():
    params = types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri="file:///w/a%20b.py", type=types.FileChangeType.Created),
        types.FileEvent(uri="untitled:1", type=types.FileChangeType.Changed)])
    assert watch.paths_from_params(params) == ["/w/a b.py"]
    assert watch.paths_from_params({"changes": [{"uri": "file:///w/x/../c.py", "type": 3}, {"uri": 4}]}) == ["/w/c.py"]
    assert watch.paths_from_params({}) == [] and watch.paths_from_params(None) == []


def test_worth_looking_at():
    folders = ["/w"]
    assert watch.worth_looking("/w/src/a.py", folders)
    assert watch.worth_looking("/w/src", folders)  # a folder (deleted, maybe)
    assert watch.worth_looking("/w/.eslintrc.js", folders)  # the walk indexes hidden files, not hidden folders
    assert watch.worth_looking("/w/sub/.gitignore", folders)
    assert not watch.worth_looking("/w/node_modules/x/index.js", folders)
    assert not watch.worth_looking("/w/node_modules", folders)
    assert not watch.worth_looking("/w/.git/index", folders)
    assert not watch.worth_looking("/w/.idea", folders)
    assert not watch.worth_looking("/elsewhere/a.py", folders)


def test_watchers_cover_every_indexed_extension():
    code, gitignore, deletions = watch.watchers()
    pattern = code.glob_pattern
    assert isinstance(pattern, str) and pattern.startswith("**/*.{") and pattern.endswith("}")
    listed = pattern[len("**/*.{"):-1].split(",")
    assert sorted("." + ext for ext in listed) == sorted(EXTENSIONS)
    assert gitignore.glob_pattern == "**/.gitignore"
    assert deletions.glob_pattern == "**/*" and deletions.kind == types.WatchKind.Delete


class FakeServer:
    def __init__(self, capabilities: Any, fail: bool = False) -> None:
        self.client_capabilities = capabilities
        self.workspace_context = WorkspaceContext(ContextSettings(), {})
        self.sent: list[Any] = []
        self.fail = fail

    async def client_register_capability_async(self, params: Any) -> None:
        self.sent.append(params)
        if self.fail:
            raise RuntimeError("method not found")


def capabilities(dynamic: bool | None) -> types.ClientCapabilities:
    watched = None if dynamic is None else types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=dynamic)
    return types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(did_change_watched_files=watched))


@pytest.mark.parametrize("dynamic, fail, sent, mode", [
    (True, False, 1, "events"), (True, True, 1, "recheck"), (False, False, 0, "recheck"), (None, False, 0, "recheck")])
async def test_watchers_are_registered_only_when_the_client_can_watch(dynamic, fail, sent, mode):
    server = FakeServer(capabilities(dynamic), fail)
    await register_watchers(server)
    assert len(server.sent) == sent and server.workspace_context.watch_mode == mode
    if sent:
        registration, = server.sent[0].registrations
        assert registration.method == "workspace/didChangeWatchedFiles"
        assert registration.register_options.watchers == watch.watchers()


async def test_register_watchers_without_capabilities_at_all():
    server = SimpleNamespace(workspace_context=WorkspaceContext(ContextSettings(), {}))
    await register_watchers(server)
    assert server.workspace_context.watch_mode == "recheck"


async def test_turning_context_on_again_rescans(tmp_path):
    ws, _ = await workspace(tmp_path)
    ws.configure(ContextSettings(enabled=False), ())
    created = write(tmp_path, "pkg/while_off.py", definition("written_while_off"))
    ws.files_changed([str(created)])  # dropped: nothing is watched while it is off
    assert ws.status()["disk"]["pending"] == 0
    assert ws.configure(ContextSettings(), ())
    await ws.wait_scanned()
    assert "written_while_off" in names(ws)
