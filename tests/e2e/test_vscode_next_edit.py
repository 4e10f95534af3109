"""Next-edit suggestions in a real VS Code: code-server 4.96.4 (VS Code 1.96.4) with the extension packaged from
source, driven through Chromium (tests/e2e/vscode_driver.js), with the real `infill serve --stdio`.

The user renames a parameter; the server's model-free propagation proposes the same rename four lines below (no model
output is involved: the completion model is the tiny test model, which is no next-edit model, so the server asks it
nothing for next edits). The extension draws it with decorations — the old name struck through, the new one after it,
a hint on the cursor line naming the line —, Tab moves the cursor there, Tab again applies it and reports it, and the
next occurrence is proposed at once (chaining); Escape dismisses. Screenshots of the decorations and of a
multi-line edit (a box) are taken in the session's directory; with INFILL_UPDATE_SCREENSHOTS=1 they replace
docs/images/next-edit-vscode.png and docs/images/next-edit-vscode-lines.png (the pictures in docs/editors.md).

Ordinary ghost text is turned off in this session (`editor.inlineSuggest.enabled: false`) so that the tiny model's
suggestions never take Tab; next-edit decorations do not depend on it. Tools as for tests/e2e/test_vscode_editor.py
(`bash scripts/vscode-editor.sh`); it skips, naming what is missing, only without them, node or llama-server."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_neovim_next_edit import SOURCE
from .test_vscode_editor import (
    _ENTRY,
    WAIT,
    VSCode,
    _json_after,
    machine_settings,
    open_vscode,
    parse_status_trace,
    toolchain,
    user_settings,
    vsix,
)

SCRIPTED = Path(__file__).with_name("next_edit_scripted_server.py")

__all__ = ["toolchain", "vsix"]  # fixtures, used by name

REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "docs" / "images" / "next-edit-vscode.png"
BOX_SCREENSHOT = REPO / "docs" / "images" / "next-edit-vscode-lines.png"
FILE = "scale.py"
UPDATE_SCREENSHOTS = os.environ.get("INFILL_UPDATE_SCREENSHOTS") == "1"
HINT = "→ edit at line 5, Tab (Esc to dismiss)"
#: A second file, so that the second scenario's rename is the newest edit of its document (the server coalesces
#: nearby edits of one document into one history event).
SHIFT_FILE = "shift.py"
SHIFT = '''def shift(points, dx):
    """Move every point right by dx."""
    moved = []

    for x, y in points:
        moved.append((x + dx, y))
    return moved
'''
#: A third copy, for turning next edits off while one is shown.
TOGGLE_FILE = "toggle.py"
#: More copies: the find widget's Escape, and a restart while an edit is shown.
FIND_FILE = "find.py"
RESTART_FILE = "restart.py"
CRASH_FILE = "crash.py"
FIND_WIDGET = ".editor-group-container .monaco-editor .find-widget.visible"
#: A notebook: no next edits are asked for in its cells.
NOTEBOOK = "cells.ipynb"
NOTEBOOK_JSON = json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                       "source": ["x = 1\n", "y = x + 1"]}],
                            "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5})


@pytest.fixture(scope="module")
def vscode(toolchain: dict[str, str], vsix: Path, tiny_model: Path, llama_server_binary: str,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[VSCode]:
    root = tmp_path_factory.mktemp("vscode-next-edit")
    user = {**user_settings(tiny_model), "editor.inlineSuggest.enabled": False, "infill.nextEdit.debounceMs": 50,
            "workbench.colorTheme": "Default Dark Modern", "editor.fontSize": 15}
    with open_vscode(toolchain, vsix, root, user, machine_settings(llama_server_binary, root / "server-gate"),
                     {FILE: SOURCE, SHIFT_FILE: SHIFT, TOGGLE_FILE: SHIFT, FIND_FILE: SHIFT, RESTART_FILE: SHIFT,
                      CRASH_FILE: SHIFT, NOTEBOOK: NOTEBOOK_JSON},
                     viewport=(1000, 420)) as session:
        session.gate.touch()  # no need to hold the server back here
        yield session


def editor_lines(vscode: VSCode) -> list[dict[str, Any]]:
    return vscode.driver("editorLines")


def line_texts(vscode: VSCode) -> list[str]:
    return [line["text"] for line in editor_lines(vscode)]


def cursor(vscode: VSCode) -> tuple[int, int] | None:
    """(line, column), 1-based, from the status bar's "Ln 5, Col 12"."""
    for item in vscode.driver("statusBar"):
        found = re.search(r"Ln (\d+), Col (\d+)", item)
        if found:
            return int(found.group(1)), int(found.group(2))
    return None


def drawn(vscode: VSCode, line: int, struck: str, hint_line: int) -> list[dict[str, Any]] | None:
    """The editor's lines once line `line` (0-based) shows `struck` struck through and the hint is on `hint_line`."""
    lines = editor_lines(vscode)
    if len(lines) <= max(line, hint_line) or struck not in lines[line]["struck"]:
        return None
    hint = lines[hint_line]
    if HINT_PATTERN.search(hint["text"] + " ".join(hint["pseudo"])) is None:
        return None
    return lines


HINT_PATTERN = re.compile(r"→ (edit at line \d+, Tab|Tab to apply the edit)")


def saved(vscode: VSCode, name: str = FILE) -> str:
    return vscode.saved_text(name, (vscode.workspace / name).read_text())


def log_text(vscode: VSCode) -> str:
    log = vscode.extension_log()
    return log.read_text(errors="replace") if log else ""


def test_rename_is_drawn_below_and_tab_jumps_then_applies_then_chains(vscode: VSCode) -> None:
    d = vscode.driver
    d("status", icon="check", timeout=WAIT)
    d("open", name=FILE, contains="def scale(points, factor):", timeout=WAIT)
    # Rename the parameter: select `factor` on line 1 and type `k`.
    d("press", key="Control+Home")
    d("press", key="End")
    d("press", key="ArrowLeft")
    d("press", key="ArrowLeft")
    d("press", key="Control+Shift+ArrowLeft")
    d("type", text="k")
    lines = vscode.wait_for(lambda: drawn(vscode, 4, "factor", 0), "the next edit drawn on line 5")
    hint = lines[0]["text"] + " ".join(lines[0]["pseudo"])
    assert HINT in hint, lines[0]
    line5 = lines[4]["text"] + " ".join(lines[4]["pseudo"])
    assert "k" in line5.replace("x = x * factor", ""), lines[4]
    assert lines[4]["struck"] == ["factor"], lines[4]
    assert lines[1]["struck"] == [], "the docstring's 'factor' is prose: not proposed"
    shot = vscode.root / "next-edit.png"
    d("screenshot", file=str(shot))
    if UPDATE_SCREENSHOTS:
        shutil.copyfile(shot, SCREENSHOT)
    assert "Sending notification 'textDocument/didShowInlineEdit'" in log_text(vscode)
    assert (vscode.workspace / FILE).read_text() == SOURCE, "showing the edit changes nothing"

    d("press", key="Tab")  # jump
    vscode.wait_for(lambda: cursor(vscode) == (5, 17), "the cursor to jump to the edit (Ln 5, Col 17)")
    vscode.wait_for(lambda: drawn(vscode, 4, "factor", 4), "the hint on the cursor's new line")
    assert "def scale(points, k):" in line_texts(vscode)[0]

    d("press", key="Tab")  # apply
    vscode.wait_for(lambda: "Sending request 'workspace/executeCommand" in log_text(vscode), "the accept command")
    # Chaining: the next use, two lines below, is proposed without any typing; it is near, Tab applies it.
    vscode.wait_for(lambda: (lines := editor_lines(vscode)) and lines[6]["struck"] == ["factor"]
                    and "x * k" in lines[4]["text"], "the chained next edit")
    d("press", key="Tab")
    text = saved(vscode)
    assert text.splitlines()[4:7] == ["        x = x * k", "", "        y = y * k"], text
    assert text.splitlines()[0] == "def scale(points, k):"
    assert text.splitlines()[1] == '    """Multiply every point by the factor."""'
    assert len(re.findall(r"Sending request 'workspace/executeCommand", log_text(vscode))) >= 2


def rename_points(vscode: VSCode, name: str) -> list[dict[str, Any]]:
    """Renames `points` on line 1 of a copy of SHIFT to `pts` (the cursor after it) and waits for its next use (line
    5) to be drawn; returns the editor's lines then."""
    d = vscode.driver
    d("status", icon="check", timeout=WAIT)  # (when run alone: the server must be up before the edit)
    d("open", name=name, contains="def shift(points, dx):", timeout=WAIT)
    d("press", key="Control+Home")
    d("press", key="Home")
    for _ in range(len("def shift(points")):
        d("press", key="ArrowRight")
    d("press", key="Control+Shift+ArrowLeft")
    d("type", text="pts")
    return vscode.wait_for(lambda: drawn(vscode, 4, "points", 0), "the next edit on line 5")


def test_escape_dismisses_and_tab_is_tab_again(vscode: VSCode) -> None:
    d = vscode.driver
    lines = rename_points(vscode, SHIFT_FILE)
    assert HINT in lines[0]["text"] + " ".join(lines[0]["pseudo"]), lines[0]
    d("press", key="Escape")
    vscode.wait_for(lambda: not any(line["struck"] for line in editor_lines(vscode)), "the edit to be dismissed")
    assert not any(HINT_PATTERN.search(line["text"] + " ".join(line["pseudo"])) for line in editor_lines(vscode))
    # With nothing shown Tab is VS Code's own: it indents at the cursor.
    d("press", key="Tab")
    text = saved(vscode, SHIFT_FILE)
    assert re.fullmatch(r"def shift\(pts +, dx\):", text.splitlines()[0]), text
    assert text.splitlines()[4] == SHIFT.splitlines()[4], "the dismissed edit was not applied"


def shown_anything(vscode: VSCode) -> bool:
    """Whether any next-edit decoration (a struck-through removal or the hint) is drawn."""
    return any(line["struck"] or HINT_PATTERN.search(line["text"] + " ".join(line["pseudo"]))
               for line in editor_lines(vscode))


def renamed_and_nothing_shown(vscode: VSCode) -> bool:
    """Whether the editor shows the renamed SHIFT copy (not a moment without its lines) and no next edit."""
    lines = editor_lines(vscode)
    return bool(lines) and lines[0]["text"].startswith("def shift(pts") and not any(
        line["struck"] or HINT_PATTERN.search(line["text"] + " ".join(line["pseudo"])) for line in lines)


def test_escape_closes_the_find_widget_first(vscode: VSCode) -> None:
    """Escape while the find widget is open and a next edit is shown closes the find widget, as without Infill,
    whether the focus is in the widget or back in the text (with the focus in the text, the extension's Escape
    dismissed the next edit and left the find widget open); the next Escape then dismisses the edit."""
    d = vscode.driver
    rename_points(vscode, FIND_FILE)
    d("press", key="Control+f")
    vscode.wait_for(lambda: d("visible", selector=FIND_WIDGET), "the find widget")
    d("press", key="Escape")  # the focus in the widget's input
    vscode.wait_for(lambda: not d("visible", selector=FIND_WIDGET), "the find widget to close")
    assert drawn(vscode, 4, "points", 0), "the next edit stays"

    d("press", key="Control+f")
    vscode.wait_for(lambda: d("visible", selector=FIND_WIDGET), "the find widget")
    d("command", title="View: Focus Active Editor Group", timeout=WAIT)  # the focus back in the text, widget open
    d("press", key="Escape")
    vscode.wait_for(lambda: not d("visible", selector=FIND_WIDGET), "the find widget to close")
    assert drawn(vscode, 4, "points", 0), "the next edit stays"
    d("press", key="Escape")
    vscode.wait_for(lambda: renamed_and_nothing_shown(vscode), "the edit to be dismissed")
    text = saved(vscode, FIND_FILE)
    assert text.splitlines()[4] == SHIFT.splitlines()[4], "the dismissed edit was not applied"


def test_restarting_the_server_removes_the_shown_edit(vscode: VSCode) -> None:
    """Infill: Restart Server while a next edit is shown: the edit, proposed by the server that stopped, stayed drawn
    with Tab still bound to apply it (and to report it to a server that never proposed it)."""
    d = vscode.driver
    rename_points(vscode, RESTART_FILE)
    starts = log_text(vscode).count("Infill: starting ")
    d("command", title="Infill: Restart Server", timeout=WAIT)
    vscode.wait_for(lambda: renamed_and_nothing_shown(vscode), "the edit to go", timeout=60)
    wait_for_the_restarted_server(vscode, starts)
    tab_is_tab_again(vscode, RESTART_FILE)


def tab_is_tab_again(vscode: VSCode, name: str) -> None:
    """Once the server is ready again, nothing is shown and Tab indents at the cursor: the edit the server that
    stopped proposed is not applied."""
    vscode.driver("status", icon="check", timeout=WAIT)
    assert not shown_anything(vscode)
    vscode.driver("press", key="Tab")  # VS Code's own Tab: it indents at the cursor
    text = saved(vscode, name)
    assert re.fullmatch(r"def shift\(pts +, dx\):", text.splitlines()[0]), text
    assert text.splitlines()[4] == SHIFT.splitlines()[4], "the stopped server's edit was not applied"


def language_servers(vscode: VSCode) -> list[int]:
    """The pids of this session's Infill language servers (`-m lsp_server`, under its code-server)."""
    def ancestry(pid: int) -> Iterator[str]:
        while pid > 1:
            try:
                yield (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                pid = int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                return

    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            chain = list(ancestry(int(entry.name)))
            if chain and "-m lsp_server serve --stdio" in chain[0] and any(str(vscode.user_data) in c for c in chain):
                found.append(int(entry.name))
    return found


def test_a_crashed_server_takes_its_shown_edit_with_it(vscode: VSCode) -> None:
    """The language server dies while a next edit is shown (vscode-languageclient then starts it again): the edit
    stayed drawn, with Tab bound to apply it and report it to a server that never proposed it."""
    rename_points(vscode, CRASH_FILE)
    servers = language_servers(vscode)
    assert len(servers) == 1, servers
    os.kill(servers[0], signal.SIGKILL)
    vscode.wait_for(lambda: renamed_and_nothing_shown(vscode), "the edit to go", timeout=60)
    vscode.wait_for(lambda: language_servers(vscode) not in ([], servers), "the server to be started again")
    tab_is_tab_again(vscode, CRASH_FILE)


def test_turning_completions_off_removes_the_shown_edit_and_tab_is_tab_again(vscode: VSCode) -> None:
    """`Infill: Disable Completions` (or unticking infill.enabled / infill.nextEdit.enabled) while an edit is drawn:
    it used to stay drawn, with Tab still bound to apply it, until the cursor moved on."""
    d = vscode.driver
    rename_points(vscode, TOGGLE_FILE)
    d("command", title="Infill: Disable Completions", timeout=WAIT)
    try:
        vscode.wait_for(lambda: json.loads(vscode.settings_file.read_text()).get("infill.enabled") is False,
                        "infill.enabled to be false")
        vscode.wait_for(lambda: not any(line["struck"] or HINT_PATTERN.search(line["text"] + " ".join(line["pseudo"]))
                                        for line in editor_lines(vscode)), "the edit to go", timeout=WAIT)
        d("press", key="Tab")  # VS Code's own Tab: it indents at the cursor
        text = saved(vscode, TOGGLE_FILE)
        assert re.fullmatch(r"def shift\(pts +, dx\):", text.splitlines()[0]), text
        assert text.splitlines()[4] == SHIFT.splitlines()[4], "the edit was applied after completions were turned off"
    finally:
        d("command", title="Infill: Enable Completions", timeout=WAIT)
        d("status", icon="check", timeout=WAIT)


def trace(vscode: VSCode, method: str) -> list[dict[str, Any]]:
    """The params of every `method` request or notification the extension sent (from the LSP trace)."""
    text = log_text(vscode)
    starts = [m.start() for m in _ENTRY.finditer(text)] + [len(text)]
    sent = re.compile(rf"Sending (request|notification) '{re.escape(method)}[ ']")
    return [_json_after(text[begin:end], "Params:") or {} for begin, end in zip(starts, starts[1:], strict=False)
            if sent.search(text[begin:end])]


def test_no_next_edit_requests_for_documents_the_server_does_not_have(vscode: VSCode) -> None:
    """Typing in a notebook cell (a `vscode-notebook-cell:` document; in desktop VS Code the settings JSON, a
    `vscode-userdata:` one, is another), which the client did not sync to the server, made a next-edit request the
    server refused ("... is not open"): a warning in the Infill log after every pause in typing. Cells are synced now
    (notebook sync, for ghost text), and next edits are still asked for in files and untitled editors only."""
    d = vscode.driver
    d("status", icon="check", timeout=WAIT)
    before = log_text(vscode).count("next-edit request failed")
    d("open", name=NOTEBOOK, contains=None, timeout=WAIT)
    d("click", selector=".notebook-editor .monaco-editor .view-lines", timeout=WAIT)  # the cell's text: edit it
    d("press", key="Control+End")
    d("type", text=" # a note")
    notebook = vscode.workspace / NOTEBOOK
    d("press", key="Control+S")
    vscode.wait_for(lambda: "# a note" in notebook.read_text(), "the notebook to be saved with the typed text")
    d("command", title="Infill: Suggest the Next Edit", timeout=WAIT)
    try:
        # then a request the server has the document for: the extension sends in order, so once that one is in
        # the trace, any request for the cell (made 50 ms after the typing, or by the command) would be there too
        asked = len(trace(vscode, "textDocument/copilotInlineEdit"))
        d("open", name=FILE, contains="def scale(", timeout=WAIT)  # (an earlier test may have renamed points)
        d("command", title="Infill: Suggest the Next Edit", timeout=WAIT)
        vscode.wait_for(lambda: len(trace(vscode, "textDocument/copilotInlineEdit")) > asked,
                        "the next-edit request for the file")
        uris = [p.get("textDocument", {}).get("uri", "") for m in ("textDocument/copilotInlineEdit",
                                                                   "textDocument/didFocus") for p in trace(vscode, m)]
        assert uris and all(uri.startswith("file:") for uri in uris), uris
        assert log_text(vscode).count("next-edit request failed") == before, log_text(vscode)[-3000:]
    finally:
        notebook.write_text(NOTEBOOK_JSON)


@contextlib.contextmanager
def changed_machine_settings(vscode: VSCode, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Iterator[None]:
    """The server settings in the Remote (Machine) settings.json changed by `change(settings)` while the block runs;
    afterwards the working ones come back, and the server must reach ready with them."""
    machine = vscode.user_data / "Machine" / "settings.json"
    good = machine.read_text()
    settings = json.loads(good)
    machine.write_text(json.dumps({**settings, **change(settings)}))
    try:
        yield
    finally:
        starts = log_text(vscode).count("Infill: starting ")
        machine.write_text(good)
    wait_for_the_restarted_server(vscode, starts)
    ready = vscode.driver("status", icon="check", timeout=WAIT)
    assert ready["label"].startswith("Infill ready"), ready


def wait_for_the_restarted_server(vscode: VSCode, starts: int) -> None:
    """Waits until the extension has started a server after the `starts`-th ("Infill: starting" in its log) and that
    server has sent its own `ready`. The old server's ready may still show until the extension sees the change, and
    the status item lags the log: a check icon seen at once could be the old server's, and a test that typed then
    typed into the restart and lost its edit."""
    vscode.wait_for(lambda: log_text(vscode).count("Infill: starting ") > starts, "the restart")
    vscode.wait_for(lambda: ready_since_last_start(log_text(vscode)), "the restarted server's ready status")


def ready_since_last_start(log: str) -> bool:
    """The server the extension started last has sent its `ready` status (from the LSP trace in the log)."""
    at = log.rfind("Infill: starting ")
    return at >= 0 and any(status.get("kind") == "ready" for status in parse_status_trace(log[at:]))


def test_server_args_of_the_wrong_type_are_named_and_fixing_them_starts_the_server(vscode: VSCode) -> None:
    """`"infill.server.args": "serve --stdio"` (a string, not a list) in settings.json: the extension used to fail
    with "args.join is not a function" (an unhandled error in the extension host), the status item saying only that
    the server was not running. It now says which setting is wrong, and correcting it starts the server."""
    d = vscode.driver
    d("status", icon="check", timeout=WAIT)
    with changed_machine_settings(vscode, lambda s: {"infill.server.args": " ".join(s["infill.server.args"])}):
        error = d("status", icon="error", timeout=60)
        assert "infill.server.args" in error["label"], error


def test_a_server_that_exits_at_once_shows_an_error_and_fixing_it_starts_the_server(vscode: VSCode) -> None:
    """A server that exits as soon as it starts (a broken install): vscode-languageclient restarts it a few times,
    then gives up. The status item then said "Infill is not running" in the look of a server the user turned off. It
    now shows an error saying the server stopped, and a setting that works starts the server again."""
    d = vscode.driver
    d("status", icon="check", timeout=WAIT)
    # vscode-languageclient's words when its default error handler gives up. Not only "will not be restarted": the
    # old server, stopped for the changed setting, also logs "Server will not be restarted" when its connection
    # closes while it stops, and an error icon seen after that was one of the crash-and-restart flickers.
    gives_up = "times in the last 3 minutes. The server will not be restarted"
    gave_up = log_text(vscode).count(gives_up)
    with changed_machine_settings(vscode, lambda s: {"infill.server.args": ["-c", "raise SystemExit('broken')"]}):
        vscode.wait_for(lambda: log_text(vscode).count(gives_up) > gave_up,
                        "vscode-languageclient to give up restarting the server")
        # the error the test is about, not a crash-and-restart flicker's that the status item may still show for a
        # moment after the give-up line is logged
        vscode.wait_for(lambda: (now := d("statusNow")) is not None and now["icon"] == "error"
                        and "stopped" in now["label"], "the status item's error saying the server stopped")


def test_restarting_while_the_server_starts_is_no_failure(vscode: VSCode) -> None:
    """Infill: Restart Server while the language server is still starting (before it has answered `initialize`):
    the abandoned start used to be reported as a failure, an error notification "failed to start: ... Pending response
    rejected since connection got disposed" and the error status, although the new server was starting fine, and
    vscode-languageclient tried to restart the abandoned server ("Restarting server failed", a second notification)."""
    d = vscode.driver
    d("status", icon="check", timeout=WAIT)
    gate = vscode.root / "restart-gate"
    # the gated server of machine_settings, held by a gate not yet there
    held = lambda s: {"infill.server.args": [*s["infill.server.args"][:2], str(gate), *s["infill.server.args"][3:]]}  # noqa: E731
    with changed_machine_settings(vscode, held):
        try:
            d("status", icon="loading", timeout=WAIT)
            before = log_text(vscode)
            d("command", title="Infill: Restart Server", timeout=WAIT)
            # vscode-languageclient kills the old server 2 s after it could not stop it; its start then ends
            vscode.wait_for(lambda: "a language server start was abandoned" in log_text(vscode)[len(before):],
                            "the abandoned start to end")
            since = log_text(vscode)[len(before):]
            assert "failed to start" not in since and "Restarting server failed" not in since, since[-3000:]
            assert d("statusNow")["icon"] == "loading"
            gate.touch()
            d("status", icon="check", timeout=WAIT)
        finally:
            gate.touch()


CALC = "x = add(a)\n\n\n\nold_total\nprint(total)\n"
LOOP = "total = 0\nfor v in values:\n    total += v"


def test_ghost_text_for_an_insertion_after_the_cursor_then_a_box_for_several_lines(
        toolchain: dict[str, str], vsix: Path, tiny_model: Path, tmp_path: Path) -> None:
    """The other displays. An edit that only inserts text on the cursor's line, after the cursor, is ordinary ghost
    text; an edit of several lines is drawn as a box. A scripted server (tests/e2e/next_edit_scripted_server.py)
    proposes `add(a)` → `add(a, b)`, then `old_total` → three lines; it offers no inline completion, so the ghost text
    can only be the next edit."""
    log = tmp_path / "server-log.jsonl"
    rules = json.dumps([["add(a)", "add(a, b)"], ["old_total", LOOP]])
    machine = {"infill.server.command": sys.executable,
               "infill.server.args": [str(SCRIPTED), rules, "-", "ok", str(log)]}
    user = {**user_settings(tiny_model), "infill.nextEdit.debounceMs": 50}
    with open_vscode(toolchain, vsix, tmp_path / "session", user, machine, {"calc.py": CALC}) as vscode:
        d = vscode.driver

        def received(method: str) -> list[dict[str, Any]]:
            lines = log.read_text().splitlines() if log.exists() else []
            return [m for m in (json.loads(line) for line in lines) if m.get("method") == method]

        d("open", name="calc.py", contains="x = add(a)", timeout=WAIT)
        vscode.wait_for(lambda: received("textDocument/didOpen"), "the scripted server to have the file")
        d("press", key="Control+Home")
        d("command", title="Infill: Suggest the Next Edit", timeout=WAIT)
        assert d("ghost", timeout=WAIT) == ", b"
        assert not any(line["struck"] for line in editor_lines(vscode)), "ghost text, not decorations"
        d("press", key="Tab")
        d("noGhost", timeout=WAIT)
        applied = CALC.replace("add(a)", "add(a, b)")
        assert vscode.saved_text("calc.py", CALC) == applied
        vscode.wait_for(lambda: received("workspace/executeCommand"), "the accept command")
        assert received("workspace/executeCommand")[0]["params"] == {"command": "infill.acceptInlineEdit",
                                                                     "arguments": ["scripted-4"]}
        assert received("textDocument/didShowInlineEdit"), "the ghost text was reported as shown"
        # Chaining: asked again at once after the accept; the answer, four lines below, has three lines: a box (an
        # SVG image after the struck-through text) and the hint on the cursor's line.
        def box_drawn() -> list[dict[str, Any]] | None:
            lines = editor_lines(vscode)
            box = len(lines) > 4 and any("image/svg+xml" in p for p in lines[4]["pseudo"])
            return lines if box and lines[4]["struck"] == ["old_total"] else None

        lines = vscode.wait_for(box_drawn, "the multi-line edit drawn as a box")
        assert HINT_PATTERN.search(lines[0]["text"] + " ".join(lines[0]["pseudo"])), lines[0]
        d("screenshot", file=str(tmp_path / "box.png"))
        if UPDATE_SCREENSHOTS:
            shutil.copyfile(tmp_path / "box.png", BOX_SCREENSHOT)
        d("press", key="Tab")  # jump
        vscode.wait_for(lambda: cursor(vscode) == (5, 1), "the cursor at the edit")
        d("press", key="Tab")  # apply
        assert vscode.saved_text("calc.py", applied) == applied.replace("old_total", LOOP)
        commands = [m["params"]["arguments"] for m in received("workspace/executeCommand")]
        assert commands[-1] == [f"scripted-{applied.index('old_total')}"], commands


def test_undo_before_the_accept_is_acknowledged_asks_nothing(
        toolchain: dict[str, str], vsix: Path, tiny_model: Path, tmp_path: Path) -> None:
    """Tab applies a next edit and Ctrl+Z undoes it before the server has answered the accept command: the extension
    then asked for the next edit anyway (the chained request after an accept), for the text as the undo left it, and
    the server proposed the undone edit again at once. The scripted server holds the accept's answer until the next
    message, the undo's change."""
    log = tmp_path / "server-log.jsonl"
    machine = {"infill.server.command": sys.executable,
               "infill.server.args": [str(SCRIPTED), "old_total", "total", "hold-accept", str(log)]}
    user = {**user_settings(tiny_model), "infill.nextEdit.debounceMs": 50}
    text = "a = old_total\nb = old_total\n"
    with open_vscode(toolchain, vsix, tmp_path / "session", user, machine, {"undo.py": text}) as vscode:
        d = vscode.driver

        def received() -> list[dict[str, Any]]:
            return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

        d("open", name="undo.py", contains="a = old_total", timeout=WAIT)
        vscode.wait_for(lambda: any(m.get("method") == "textDocument/didOpen" for m in received()),
                        "the scripted server to have the file")
        d("press", key="Control+Home")
        d("command", title="Infill: Suggest the Next Edit", timeout=WAIT)
        vscode.wait_for(lambda: (lines := editor_lines(vscode)) and lines[0]["struck"] == ["old_total"],
                        "the edit drawn on line 1")
        d("press", key="Tab")  # on the cursor's line: applies it
        vscode.wait_for(lambda: any(m.get("method") == "workspace/executeCommand" for m in received()),
                        "the accept command (held by the server)")
        d("press", key="Control+z")
        vscode.wait_for(lambda: editor_lines(vscode)[0]["text"].startswith("a = old_total"), "the undo")
        # An explicit request after it: the extension sends in order, so a chained request would come before it.
        asked = len([m for m in received() if m.get("method") == "textDocument/copilotInlineEdit"])
        d("command", title="Infill: Suggest the Next Edit", timeout=WAIT)
        vscode.wait_for(lambda: len([m for m in received() if m.get("method") == "textDocument/copilotInlineEdit"])
                        > asked, "the explicit request")
        messages = received()
        accept = next(i for i, m in enumerate(messages) if m.get("method") == "workspace/executeCommand")
        after = [m for m in messages[accept:] if m.get("method") == "textDocument/copilotInlineEdit"]
        assert len(after) == 1, f"only the explicit request after the undone accept: {after}"
