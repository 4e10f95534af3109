"""The VS Code extension inside a real VS Code: code-server 4.96.4 (VS Code 1.96.4) with the extension packaged from
source into a fresh profile, driven through Debian's Chromium by playwright-core (tests/e2e/vscode_driver.js), with
the real `infill serve --stdio` and llama-server on the tiny test model.

What a user would check, in order, in one editor session: the status item reaches "ready"; text typed while the
server is still starting gets its suggestion once the server is up; the ghost text is what the server answered; Tab
accepts it and the saved file holds it; accept-next-word takes one word; unticking `infill.enabled` in the Settings
editor takes effect and the Enable command turns completions back on; an excluded file (.env) gets nothing; a
llama-server that keeps dying shows an error in the status item and "Infill: Restart Server" recovers; the page
contacts nothing outside 127.0.0.1; closing VS Code leaves no process behind.

Tools: `bash scripts/vscode-editor.sh` (Chromium, code-server, playwright-core, vsce; run by scripts/test.sh). The
test skips, naming what is missing, only when that toolchain, node, or llama-server is absent. Waits are for events
(an element, a log entry, a file change); their bounds are safety nets for a loaded 2-core machine."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_neovim_plugin import pids_with_env
from .test_vscode_client import EXTENSION, compiled_output_is_stale

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("vscode_driver.js")
INSTALL_HINT = "run bash scripts/vscode-editor.sh"
#: Safety nets, not speed assertions: code-server and Chromium share 2 cores with the rest of the suite.
STARTUP_TIMEOUT = 180.0
WAIT = 120.0
#: Marks every process of one session (code-server, its extension host, the language server, llama-server,
#: Chromium): they inherit it, so leftovers can be found in /proc.
SESSION_VAR = "INFILL_VSCODE_E2E_SESSION"

#: Holds the language server back until the test creates the gate file: a server that is slow to start, made
#: deterministic, so the test can type while the status is still "starting".
GATED_SERVER = ("import os, sys, time\n"
                "while not os.path.exists(sys.argv[1]):\n"
                "    time.sleep(0.05)\n"
                "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])\n")


def tools_dir() -> Path:
    """Where scripts/vscode-editor.sh installs the toolchain (the same default)."""
    configured = os.environ.get("INFILL_EDITOR_TOOLS")
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "infill" / "vscode-editor"


def find_toolchain() -> tuple[dict[str, str] | None, str]:
    """The installed real-editor tools, or None and what is missing."""
    if shutil.which("node") is None:
        return None, "node is not installed (the real VS Code test needs Node 20+)"
    manifest = tools_dir() / "tools.json"
    if not manifest.is_file():
        return None, f"the real VS Code toolchain is not installed in {tools_dir()}: {INSTALL_HINT}"
    tools = json.loads(manifest.read_text())
    missing = [path for path in (tools["code_server"], tools["chromium"],
                                 Path(tools["node_tools"]) / "node_modules" / "playwright-core",
                                 Path(tools["node_tools"]) / "node_modules" / ".bin" / "vsce")
               if not Path(path).exists()]
    if missing:
        return None, f"the real VS Code toolchain is incomplete (missing {missing}): {INSTALL_HINT}"
    if not (EXTENSION / "node_modules" / "vscode-languageclient").is_dir():
        return None, "the extension's node packages are not installed: run bash scripts/editors.sh"
    return tools, ""


@pytest.fixture(scope="module")
def toolchain() -> dict[str, str]:
    tools, missing = find_toolchain()
    if tools is None:
        pytest.skip(missing)
    return tools


def package_extension(toolchain: dict[str, str], out: Path) -> Path:
    """The extension packaged from the current sources (compiled first when stale), as a user would install it."""
    if compiled_output_is_stale(EXTENSION):
        result = subprocess.run(["npm", "run", "--silent", "compile"], cwd=EXTENSION, capture_output=True, text=True,
                                timeout=300, check=False)
        assert result.returncode == 0, f"npm run compile failed:\n{result.stdout}{result.stderr}"
    vsce = Path(toolchain["node_tools"]) / "node_modules" / ".bin" / "vsce"
    result = subprocess.run([str(vsce), "package", "--skip-license", "--out", str(out)], cwd=EXTENSION,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0 and out.is_file(), f"vsce package failed:\n{result.stdout}{result.stderr}"
    return out


@pytest.fixture(scope="module")
def vsix(toolchain: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return package_extension(toolchain, tmp_path_factory.mktemp("vsix") / "infill.vsix")


class Driver:
    """The browser side: tests/e2e/vscode_driver.js, one JSON request and answer per line."""

    def __init__(self, tools: dict[str, str], env: dict[str, str], log: Path):
        self._log = open(log, "wb")
        self.proc = subprocess.Popen(["node", str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, env={**env, "INFILL_EDITOR_NODE_TOOLS": tools["node_tools"]},
                                     text=True, bufsize=1)
        self._next = 0
        #: Adds what the page shows to a failed command's message (set by VSCode).
        self.describe: Callable[[], str] = lambda: ""

    def __call__(self, cmd: str, **args: Any) -> Any:
        assert self.proc.stdin and self.proc.stdout
        if "timeout" in args:
            args["timeout"] = round(args["timeout"] * 1000)  # seconds here, milliseconds in playwright
        self._next += 1
        self.proc.stdin.write(json.dumps({"id": self._next, "cmd": cmd, "args": args}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the browser driver exited ({self.proc.wait()}) during {cmd}")
        answer = json.loads(line)
        assert answer["id"] == self._next, answer
        if not answer["ok"]:
            describe, self.describe = self.describe, lambda: ""  # no recursion when describing fails too
            try:
                raise AssertionError(f"{cmd} {args}: {answer['error']}\n{describe()}")
            finally:
                self.describe = describe
        return answer["value"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


class VSCode:
    """One code-server session with the extension installed, seen through the browser."""

    def __init__(self, root: Path, driver: Driver, workspace: Path, user_data: Path, gate: Path):
        self.root = root
        self.driver = driver
        self.workspace = workspace
        self.user_data = user_data
        self.gate = gate
        driver.describe = self.diagnostics

    @property
    def settings_file(self) -> Path:
        return self.user_data / "User" / "settings.json"

    def extension_log(self) -> Path | None:
        logs = sorted(self.user_data.glob("logs/*/exthost*/infill.infill/Infill.log"), key=lambda p: p.stat().st_mtime)
        return logs[-1] if logs else None

    def inline_answers(self) -> list[dict[str, Any]]:
        """Every `textDocument/inlineCompletion` the extension sent and the server's answer, read from the LSP
        trace in the extension's log (`infill.trace.server: verbose`, log level trace)."""
        log = self.extension_log()
        return parse_inline_trace(log.read_text(errors="replace")) if log else []

    def statuses(self) -> list[dict[str, Any]]:
        """Every `infill/didChangeStatus` the server sent, in order (from the LSP trace)."""
        log = self.extension_log()
        return parse_status_trace(log.read_text(errors="replace")) if log else []

    def wait_for(self, condition: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{self.diagnostics()}")
            time.sleep(0.1)

    def answer_at(self, since: int, name: str, line: int, character: int) -> dict[str, Any]:
        """Waits for the server's answer to the last request for `name` at (line, character) made after the first
        `since` requests, and returns it."""
        def answered() -> dict[str, Any] | None:
            at = [a for a in self.inline_answers()[since:]
                  if a["position"] == {"line": line, "character": character} and a["uri"].endswith("/" + name)]
            return at[-1] if at and at[-1]["answered"] else None
        return self.wait_for(answered, f"the server's answer at {line}:{character}")

    def diagnostics(self) -> str:
        parts = []
        try:
            parts.append(f"status bar: {self.driver('statusBar')}")
            shot = self.root / "failure.png"
            self.driver("screenshot", file=str(shot))
            parts.append(f"screenshot: {shot}")
        except AssertionError as error:
            parts.append(f"(browser unavailable: {error})")
        log = self.extension_log()
        if log:
            parts.append("--- extension log (tail) ---\n" + log.read_text(errors="replace")[-3000:])
        return "\n".join(parts)

    def saved_text(self, name: str, previous: str) -> str:
        """Saves the active editor (Ctrl+S) and returns the file's new content."""
        path = self.workspace / name
        self.driver("press", key="Control+S")
        return self.wait_for(lambda: path.read_text() if path.read_text() != previous else None,
                             f"{name} to be saved")


_ENTRY = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \[\w+\] ", re.MULTILINE)
_SENT = re.compile(r"Sending request 'textDocument/inlineCompletion - \((\d+)\)'")
_RECEIVED = re.compile(r"Received response 'textDocument/inlineCompletion - \((\d+)\)'")


def _json_after(entry: str, label: str) -> Any:
    at = entry.find(label)
    if at < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(entry[at + len(label):].lstrip())[0]
    except ValueError:
        return None


def parse_status_trace(log: str) -> list[dict[str, Any]]:
    starts = [m.start() for m in _ENTRY.finditer(log)] + [len(log)]
    return [_json_after(log[begin:end], "Params:") or {} for begin, end in itertools.pairwise(starts)
            if "Received notification 'infill/didChangeStatus'" in log[begin:end]]


def parse_inline_trace(log: str) -> list[dict[str, Any]]:
    """[{id, uri, position, context, answered, items}] in request order, from vscode-languageclient's verbose trace.
    Request ids restart with each new client (after a restart), so an answer belongs to the latest request with its
    id."""
    requests: list[dict[str, Any]] = []
    starts = [m.start() for m in _ENTRY.finditer(log)] + [len(log)]
    for begin, end in itertools.pairwise(starts):
        entry = log[begin:end]
        if sent := _SENT.search(entry):
            params = _json_after(entry, "Params:") or {}
            requests.append({"id": int(sent.group(1)), "position": params.get("position"),
                             "context": params.get("context") or {},
                             "uri": (params.get("textDocument") or {}).get("uri", ""), "answered": False, "items": []})
        elif received := _RECEIVED.search(entry):
            for request in reversed(requests):
                if request["id"] == int(received.group(1)):
                    result = _json_after(entry, "Result:")
                    items = result.get("items", []) if isinstance(result, dict) else (result or [])
                    request.update(answered=True, items=items)
                    break
    return requests


def user_settings(tiny_model: Path) -> dict[str, Any]:
    return {
        # A quiet, offline workbench.
        "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": False,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "update.mode": "none",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "chat.commandCenter.enabled": False,
        "git.enabled": False,
        "files.autoSave": "off",  # the test saves with Ctrl+S and reads the file
        # Only Infill's ghost text in the editor; typed text lands as typed.
        "editor.inlineSuggest.enabled": True,
        "editor.quickSuggestions": {"other": False, "comments": False, "strings": False},
        "editor.suggestOnTriggerCharacters": False,
        "editor.autoClosingBrackets": "never",
        "editor.autoClosingQuotes": "never",
        "editor.autoIndent": "none",
        "editor.minimap.enabled": False,
        # Infill on the tiny model.
        "infill.completion.model": str(tiny_model),
        "infill.temperature": 0,
        "infill.maxTokens": 12,
        "infill.multiline": "never",
        "infill.trace.server": "verbose",
    }


def machine_settings(llama_server_binary: str, gate: Path) -> dict[str, Any]:
    """The machine-scoped settings: in a remote window (code-server is one) VS Code takes them from the Remote
    settings (user-data/Machine/settings.json) and ignores them in the User settings."""
    return {
        # The repository's server, held back by the gate until the test opens it.
        "infill.server.command": sys.executable,
        "infill.server.args": ["-c", GATED_SERVER, str(gate), "-m", "lsp_server", "serve", "--stdio"],
        "infill.server.env": {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))},
        "infill.completion.local.binary": llama_server_binary,
    }


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def open_vscode(toolchain: dict[str, str], vsix: Path, root: Path, user: dict[str, Any], machine: dict[str, Any],
                files: dict[str, str], viewport: tuple[int, int] = (1100, 520)) -> Iterator[VSCode]:
    """A fresh code-server profile in `root` with `vsix` installed, the given User and Remote (machine) settings and
    workspace files, opened in Chromium. On exit everything is stopped, and nothing of the session may be left."""
    home, user_data, extensions, workspace = (root / d for d in ("home", "user-data", "extensions", "workspace"))
    for d in (home, user_data / "User", user_data / "Machine", extensions, workspace):
        d.mkdir(parents=True)
    gate = root / "server-gate"
    (user_data / "User" / "settings.json").write_text(json.dumps(user, indent=1))
    (user_data / "Machine" / "settings.json").write_text(json.dumps(machine, indent=1))
    for name, text in files.items():
        (workspace / name).write_text(text)
    # VS Code's IPC sockets (vscode-ipc-*.sock) and Chromium's scratch files go to a directory of the session's own,
    # removed at the end (they were left in /tmp); a short path, as a socket's path is limited to 107 bytes
    scratch = tempfile.mkdtemp(prefix="vsc-")
    env = {
        **os.environ,
        SESSION_VAR: str(root),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": scratch,
        "XDG_RUNTIME_DIR": scratch,
        # No extension gallery and no telemetry: both point at a closed loopback port.
        "EXTENSIONS_GALLERY": json.dumps({"serviceUrl": "http://127.0.0.1:9/gallery",
                                          "itemUrl": "http://127.0.0.1:9/item",
                                          "resourceUrlTemplate": "http://127.0.0.1:9/asset/{publisher}/{name}"}),
        "CS_TELEMETRY_URL": "http://127.0.0.1:9/track",
    }
    config = root / "code-server.yaml"
    config.write_text("auth: none\ncert: false\n")
    common = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions), "--config", str(config)]
    code_server = toolchain["code_server"]
    installed = subprocess.run([code_server, *common, "--install-extension", str(vsix)], env=env,
                               capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0 and "successfully installed" in installed.stdout, \
        installed.stdout + installed.stderr

    port = free_port()
    server_log = open(root / "code-server.log", "wb")
    # --log trace: the extension's log channel starts at trace level, so vscode-languageclient writes the LSP trace
    # the test reads (infill.trace.server only picks how much).
    server = subprocess.Popen(
        [code_server, *common, "--bind-addr", f"127.0.0.1:{port}", "--auth", "none", "--log", "trace",
         "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
         "--disable-getting-started-override", "--disable-file-downloads", str(workspace)],
        env=env, stdin=subprocess.DEVNULL, stdout=server_log, stderr=subprocess.STDOUT, start_new_session=True)
    driver = None
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not healthy(port):
            assert server.poll() is None, f"code-server exited: {(root / 'code-server.log').read_text()[-3000:]}"
            assert time.monotonic() < deadline, "code-server did not answer /healthz"
            time.sleep(0.2)
        driver = Driver(toolchain, env, root / "driver.log")
        driver("launch", url=f"http://127.0.0.1:{port}/?folder={workspace}", chromium=toolchain["chromium"],
               home=str(home), width=viewport[0], height=viewport[1])
        yield VSCode(root, driver, workspace, user_data, gate)
    finally:
        gate.touch()  # a server still held back must not wait forever
        if driver is not None:
            driver.close()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        server_log.close()
        leftovers = wait_for_no_processes(str(root))
        for pid, _ in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(scratch, ignore_errors=True)
        assert not leftovers, f"processes outlived VS Code: {leftovers}"


@pytest.fixture(scope="module")
def vscode(toolchain: dict[str, str], vsix: Path, tiny_model: Path, llama_server_binary: str,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[VSCode]:
    root = tmp_path_factory.mktemp("vscode")
    files = {"shapes.py": "import math\n\n\ndef area(radius):\n", ".env": "DATABASE_URL=postgres://localhost/app\n",
             NOTEBOOK: NOTEBOOK_JSON}
    with open_vscode(toolchain, vsix, root, user_settings(tiny_model),
                     machine_settings(llama_server_binary, root / "server-gate"), files) as session:
        yield session


def wait_for_no_processes(marker: str, timeout: float = 30.0) -> list[tuple[int, str]]:
    """The session's processes still alive once they had `timeout` seconds to exit."""
    deadline = time.monotonic() + timeout
    while True:
        alive = session_processes(marker)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def session_processes(marker: str) -> list[tuple[int, str]]:
    return [(pid, cmd) for pid, cmd in pids_with_env(SESSION_VAR, marker) if pid != os.getpid()]


# --- the scenarios, in the order a user meets them (they share the session above) ------------------------------

FILE = "shapes.py"
#: A notebook of two code cells: ghost text is asked for in the second.
NOTEBOOK = "circles.ipynb"
NOTEBOOK_JSON = json.dumps({
    "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
              for source in (["import math\n", "radius = 2.0"], ["circumference = 2 * math.pi * radius"])],
    "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5})


def type_on_new_line(vscode: VSCode, text: str) -> tuple[int, int]:
    """Goes to the end of the saved file, starts a new line and types `text`; returns the cursor's (line, character)."""
    lines = (vscode.workspace / FILE).read_text().split("\n")
    vscode.driver("press", key="Control+End")
    if lines[-1]:
        vscode.driver("press", key="Enter")
        lines.append("")
    vscode.driver("type", text=text)
    return len(lines) - 1, len(text)


def test_status_ready_and_text_typed_while_starting_gets_its_suggestion(vscode: VSCode) -> None:
    d = vscode.driver
    # The status item exists as soon as the extension is active; the server is held back, so it says "starting".
    starting = d("status", icon="loading", timeout=STARTUP_TIMEOUT)
    assert starting["label"].startswith("Infill starting"), starting
    d("open", name=FILE, contains="def area(radius):", timeout=WAIT)
    since = len(vscode.inline_answers())
    line, character = type_on_new_line(vscode, "    return")
    assert d("statusNow")["icon"] == "loading", "the text must be typed before the server is ready"
    assert d("currentGhost") == ""
    vscode.gate.touch()  # the server starts now; nobody types anything more
    ghost = d("ghost", timeout=WAIT)
    assert ghost.strip(), ghost
    ready = d("status", icon="check", timeout=WAIT)
    assert ready["label"].startswith("Infill ready"), ready
    # The ghost text is the server's answer for this position (from the LSP trace), not anything else.
    answer = vscode.answer_at(since, FILE, line, character)
    assert answer["items"], answer
    assert answer["items"][0]["insertText"].endswith(ghost), (answer, ghost)
    d("screenshot", file=str(vscode.root / "suggestion.png"))
    vscode.shown = ghost  # type: ignore[attr-defined]


def test_tab_accepts_the_suggestion_into_the_buffer(vscode: VSCode) -> None:
    d = vscode.driver
    ghost = getattr(vscode, "shown", None) or pytest.fail("no suggestion is showing (the previous test failed)")
    before = (vscode.workspace / FILE).read_text()
    d("press", key="Tab")
    d("noGhost", timeout=WAIT)
    saved = vscode.saved_text(FILE, before)
    assert saved == before + "    return" + ghost


def test_accept_next_word_takes_one_word(vscode: VSCode) -> None:
    d = vscode.driver
    before = (vscode.workspace / FILE).read_text()
    type_on_new_line(vscode, "    total = ")
    ghost = d("ghost", timeout=WAIT)
    d("press", key="Control+ArrowRight")  # Infill: Accept Next Word of the Suggestion
    # The word moves from the ghost text into the buffer; the rest is still offered.
    rest = vscode.wait_for(lambda: (shown := d("currentGhost")) != ghost and shown, "the suggestion to shrink")
    saved = vscode.saved_text(FILE, before)
    added = saved[len(before):]
    assert saved.startswith(before) and added.startswith("\n    total = "), (before, saved)
    word = added[len("\n    total = "):]
    assert word + rest == ghost, (word, rest, ghost)
    assert word.strip() and len(word.split()) == 1, f"one word of {ghost!r}, got {word!r}"
    # The extension told the server how much was taken.
    vscode.wait_for(lambda: "Sending notification 'textDocument/didPartiallyAcceptCompletion'"
                    in vscode.extension_log().read_text(), "the partial acceptance report")
    d("press", key="Escape")
    d("noGhost", timeout=WAIT)


def test_disabling_completions_in_settings_takes_effect(vscode: VSCode) -> None:
    d = vscode.driver
    assert d("toggleSetting", query="infill.enabled", timeout=WAIT) is False  # Settings editor: untick it
    off = d("status", icon="circle-slash", timeout=WAIT)
    assert "turned off" in off["label"], off
    assert json.loads(vscode.settings_file.read_text())["infill.enabled"] is False
    d("open", name=FILE, contains="def area(radius):", timeout=WAIT)
    since = len(vscode.inline_answers())
    line, character = type_on_new_line(vscode, "    scale = ")
    answer = vscode.answer_at(since, FILE, line, character)
    assert answer["items"] == [], answer
    assert d("currentGhost") == ""
    vscode.saved_text(FILE, (vscode.workspace / FILE).read_text())
    # The command turns them back on (it writes the same setting).
    d("command", title="Infill: Enable Completions", timeout=WAIT)
    d("status", icon="check", timeout=WAIT)
    assert json.loads(vscode.settings_file.read_text())["infill.enabled"] is True
    type_on_new_line(vscode, "    factor = ")
    assert d("ghost", timeout=WAIT).strip()
    d("press", key="Escape")
    vscode.saved_text(FILE, (vscode.workspace / FILE).read_text())


def test_excluded_file_gets_nothing(vscode: VSCode) -> None:
    d = vscode.driver
    d("open", name=".env", contains="DATABASE_URL", timeout=WAIT)
    since, statuses_before = len(vscode.inline_answers()), len(vscode.statuses())
    d("press", key="Control+End")
    d("type", text="SECRET_KEY=")
    answer = vscode.answer_at(since, ".env", 1, len("SECRET_KEY="))
    assert answer["items"] == [], answer
    assert d("currentGhost") == ""
    # The server said why: a status event naming the file (the item shows the latest status, which a late answer
    # for another file may already have replaced, so the event is what is counted).
    vscode.wait_for(lambda: [e for e in vscode.statuses()[statuses_before:]
                             if e.get("kind") == "disabled" and ".env" in e.get("message", "")],
                    "a 'disabled' status naming .env")
    # Only that file: back in the Python file, suggestions come again.
    d("open", name=FILE, contains="def area(radius):", timeout=WAIT)
    type_on_new_line(vscode, "    circumference = ")
    assert d("ghost", timeout=WAIT).strip()
    d("status", icon="check", timeout=WAIT)
    d("press", key="Escape")
    vscode.saved_text(FILE, (vscode.workspace / FILE).read_text())


def test_ghost_text_beside_the_suggestion_widget_extends_the_selected_item(vscode: VSCode) -> None:
    """With VS Code's suggestion widget open, ghost text shows only when it extends the selected item (LSP 3.18
    `selectedCompletionInfo`): the server completes the text as that item makes it."""
    d = vscode.driver
    d("open", name=FILE, contains="def area(radius):", timeout=WAIT)
    since = len(vscode.inline_answers())
    line, character = type_on_new_line(vscode, "    radi")
    d("press", key="Control+Space")  # the widget, from the words of the file (quick suggestions are off here)
    selected = d("suggestWidget", timeout=WAIT)
    assert selected.startswith("radi"), selected

    def with_the_item() -> dict[str, Any] | None:
        asked = [a for a in vscode.inline_answers()[since:] if a["position"] == {"line": line, "character": character}
                 and (a["context"].get("selectedCompletionInfo") or {}).get("text") == selected]
        return asked[-1] if asked and asked[-1]["answered"] else None

    answer = vscode.wait_for(with_the_item, f"an answer to a request with {selected!r} selected")
    assert answer["items"], answer  # the tiny model at temperature 0 always says something here
    insert = answer["items"][0]["insertText"]
    assert insert.startswith(selected) and len(insert) > len(selected), answer
    assert answer["items"][0]["range"]["start"] == {"line": line, "character": character - len("radi")}, answer
    ghost = d("ghost", timeout=WAIT)  # drawn beside the open widget
    assert ghost and insert.endswith(ghost), (ghost, insert)
    d("press", key="Escape")  # closes the widget
    d("press", key="Escape")  # and the ghost text
    vscode.saved_text(FILE, (vscode.workspace / FILE).read_text())


def test_a_notebook_cell_gets_ghost_text(vscode: VSCode) -> None:
    """The cells reach the server through notebook sync (the server completes a cell with the code of the cells
    around it; tests/e2e/test_lsp_notebooks.py checks the prompt), and ghost text is asked for and drawn in a cell."""
    d = vscode.driver
    since = len(vscode.inline_answers())
    d("open", name=NOTEBOOK, contains=None, timeout=WAIT)
    d("click", selector=".notebook-editor .monaco-editor .view-lines >> nth=1", timeout=WAIT)  # the second cell
    d("press", key="Control+End")
    d("press", key="Enter")
    d("type", text="area = ")

    def answered_in_the_cell() -> dict[str, Any] | None:
        asked = [a for a in vscode.inline_answers()[since:] if a["uri"].startswith("vscode-notebook-cell:")
                 and a["uri"].split("#", 1)[0].endswith("/" + NOTEBOOK)
                 and a["position"] == {"line": 1, "character": 7}]
        return asked[-1] if asked and asked[-1]["answered"] else None

    answer = vscode.wait_for(answered_in_the_cell, "an answer to a request in the cell")
    assert answer["items"], answer  # the server has the cell (without notebook sync: no document, no items)
    ghost = d("ghost", timeout=WAIT, notebook=True)
    assert ghost and answer["items"][0]["insertText"].endswith(ghost), (ghost, answer)
    log = vscode.extension_log()
    assert log and "Sending notification 'notebookDocument/didOpen'" in log.read_text(errors="replace")
    d("press", key="Escape")
    d("open", name=FILE, contains="def area(radius):", timeout=WAIT)  # the next tests type in the file


def test_dying_llama_server_shows_an_error_and_restart_recovers(vscode: VSCode, tiny_model: Path) -> None:
    d = vscode.driver
    killed: set[int] = set()

    def llama_pids() -> list[int]:
        return [pid for pid, cmd in session_processes(str(vscode.root))
                if "llama-server" in cmd.split(" ", 1)[0] and str(tiny_model) in cmd]

    def new_llama_server_or_error() -> list[int] | str | None:
        if (d("statusNow") or {}).get("icon") == "error":
            return "error"
        fresh = [pid for pid in llama_pids() if pid not in killed]
        return fresh or None

    # Each kill is a crash; the supervisor restarts llama-server until it has crashed too often, then gives up.
    while (found := vscode.wait_for(new_llama_server_or_error, "a restarted llama-server or an error")) != "error":
        for pid in found:
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        assert len(killed) <= 20, "the supervisor never gave up"
    status = d("statusNow")
    assert "llama-server" in status["label"], status
    d("command", title="Infill: Restart Server", timeout=WAIT)
    ready = d("status", icon="check", timeout=WAIT)
    assert ready["label"].startswith("Infill ready"), ready
    assert [pid for pid in llama_pids() if pid not in killed], "a new llama-server runs"
    type_on_new_line(vscode, "    radius2 = ")
    assert d("ghost", timeout=WAIT).strip()
    d("press", key="Escape")
    vscode.saved_text(FILE, (vscode.workspace / FILE).read_text())


def test_nothing_outside_loopback_was_contacted(vscode: VSCode) -> None:
    report = vscode.driver("report")
    assert report["external"] == [], f"the page requested non-loopback addresses: {report['external']}"
    remote = non_loopback_sockets(str(vscode.root))
    assert remote == [], f"session processes hold non-loopback connections: {remote}"


def non_loopback_sockets(marker: str) -> list[str]:
    """TCP connections of the session's processes whose remote end is not loopback (a snapshot: /proc/net/tcp*
    matched to the processes' socket inodes)."""
    inodes: dict[str, str] = {}
    for pid, cmd in session_processes(marker):
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes[target[8:-1]] = cmd[:80]
        except OSError:
            continue
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            remote_hex, inode = fields[2].split(":")[0], fields[9]
            if inode not in inodes or set(remote_hex) == {"0"}:
                continue  # not ours, or a listening socket
            if remote_hex in ("0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"):
                continue  # 127.0.0.1, ::1, ::ffff:127.0.0.1
            found.append(f"{inodes[inode]} → {fields[2]}")
    return found
