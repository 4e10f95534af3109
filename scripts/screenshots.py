"""Takes the README's pictures of a suggestion in real editors, with the default model (Gemma 3 270M, installed by
scripts/setup.sh), so that the suggestion is a real one:

- VS Code: code-server with the extension packaged from source, in Chromium (the same session as the real-editor
  test, tests/e2e/test_vscode_editor.py);
- Neovim: the real Neovim 0.12 TUI running in a detached tmux, its screen captured with colours (`capture-pane -e`)
  and drawn as a terminal page that Chromium photographs.

    python3 scripts/screenshots.py [OUT_DIR]      (default docs/images)
    python3 scripts/screenshots.py --next-edit [OUT_DIR]
                                     (docs/images/next-edit-neovim.png: a next-edit suggestion in the Neovim TUI;
                                      model-free, the same rename as tests/e2e/test_neovim_next_edit.py; the VS Code
                                      ones, next-edit-vscode*.png, by INFILL_UPDATE_SCREENSHOTS=1 pytest
                                      tests/e2e/test_vscode_next_edit.py)

Needs what the real-editor test needs (bash scripts/vscode-editor.sh) plus tmux. Stops everything it started."""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.local.binary import find_llama_server  # noqa: E402 (after the sys.path entry above)
from tests.e2e.test_neovim_next_edit import SOURCE as NEXT_EDIT_SOURCE  # noqa: E402
from tests.e2e.test_neovim_plugin import PLUGIN, Nvim, find_nvim, ghost_text, lua_string  # noqa: E402
from tests.e2e.test_vscode_editor import (  # noqa: E402
    find_toolchain,
    machine_settings,
    open_vscode,
    package_extension,
    user_settings,
)

FILE = "fib.py"
TEXT = 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'
TYPED = "    if n"
WAIT = 900.0  # the default model on a loaded 2-core machine can take minutes for one suggestion


def server_settings() -> dict:
    """Default model (unset → the built-in Gemma 3 270M), room for a multi-line suggestion."""
    return {"max_tokens": 24, "multiline": "auto", "temperature": 0.0}


def vscode_shot(out: Path, work: Path) -> None:
    tools, missing = find_toolchain()
    if tools is None:
        raise SystemExit(missing)
    binary = find_llama_server(None)
    if binary is None:
        raise SystemExit("llama-server is not installed: bash scripts/setup.sh")
    vsix = package_extension(tools, work / "infill.vsix")
    user = {key: value for key, value in user_settings(Path("unused")).items() if key != "infill.completion.model"}
    user.update({"infill.maxTokens": 24, "infill.multiline": "auto", "workbench.colorTheme": "Default Dark Modern"})
    root = work / "vscode"
    root.mkdir()
    (root / "server-gate").touch()  # no need to hold the server back here
    with open_vscode(tools, vsix, root, user, machine_settings(binary, root / "server-gate"), {FILE: TEXT},
                     viewport=(960, 400)) as vscode:
        d = vscode.driver
        d("status", icon="check", timeout=WAIT)
        d("open", name=FILE, contains="def fibonacci(n):", timeout=WAIT)
        d("press", key="Control+End")
        d("type", text=TYPED)
        print("VS Code suggestion:", repr(d("ghost", timeout=WAIT)))
        d("status", icon="check", timeout=WAIT)
        d("screenshot", file=str(out / "vscode-suggestion.png"))


NVIM_INIT = """
vim.opt.runtimepath:prepend({plugin})
vim.o.termguicolors = true
vim.o.swapfile = false
vim.o.number = true
vim.o.autoindent = false
vim.cmd('colorscheme default')
vim.cmd('filetype plugin on')
vim.cmd('filetype indent off')
vim.cmd('syntax on')
vim.cmd('runtime plugin/infill.lua')
require('infill').setup({{ cmd = {cmd}, settings = vim.json.decode({settings}) }})
"""


@contextlib.contextmanager
def neovim_tui(root: Path, name: str, text: str, settings: dict, size: tuple[int, int]) -> Iterator[Nvim]:
    """The real Neovim TUI on `name` (holding `text`) in a detached tmux of `size` columns x rows, with the plugin
    and the repository's server; yields the test's RPC helpers on it. Stops tmux (and so Neovim) on exit."""
    nvim_binary = find_nvim()
    if nvim_binary is None or shutil.which("tmux") is None:
        raise SystemExit("Neovim 0.12 (the test extra) and tmux are needed for the Neovim picture")
    root.mkdir()
    (root / name).write_text(text)
    init = root / "init.lua"
    cmd = [sys.executable, "-m", "lsp_server", "serve", "--stdio"]
    init.write_text(NVIM_INIT.format(plugin=lua_string(str(PLUGIN)),
                                     cmd="{" + ", ".join(lua_string(c) for c in cmd) + "}",
                                     settings=lua_string(json.dumps(settings))))
    env = {**os.environ, "XDG_CONFIG_HOME": str(root / "config"), "XDG_STATE_HOME": str(root / "state"),
           "XDG_DATA_HOME": str(root / "data"), "XDG_CACHE_HOME": str(Path.home() / ".cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "TERM": "tmux-256color", "COLORTERM": "truecolor"}
    socket = root / "nvim.sock"
    tmux = ["tmux", "-L", f"infill-shot-{os.getpid()}-{root.name}", "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-x", str(size[0]), "-y", str(size[1]), "-s", "shot",
                    f"{nvim_binary} --listen {socket} -n -i NONE -u {init} {root / name}"],
                   check=True, env=env, cwd=root)
    try:
        driver = Nvim.__new__(Nvim)  # the test's RPC helpers, on the Neovim that tmux runs
        driver.binary, driver.socket, driver.env, driver.log = nvim_binary, str(socket), env, root / "none"
        driver.proc = _Running()  # type: ignore[assignment]
        driver.wait_for(lambda: socket.exists(), 30, "Neovim's socket")
        driver.tmux = tmux  # type: ignore[attr-defined]
        yield driver
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, check=False)


def photograph(driver: Nvim, chromium: str, png: Path, window: str) -> None:
    """Captures the tmux screen with its colours and has Chromium draw it into `png` (window "W,H" pixels)."""
    time.sleep(0.3)  # let the terminal draw the extmarks (a picture, not a test)
    screen = subprocess.run([*driver.tmux, "capture-pane", "-p", "-e", "-t", "shot"],  # type: ignore[attr-defined]
                            check=True, capture_output=True, text=True).stdout
    root = Path(driver.socket).parent
    page = root / "screen.html"
    page.write_text(terminal_page(screen))
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={png}", f"--window-size={window}", f"file://{page}"],
                   check=True, capture_output=True, env={**os.environ, "HOME": str(root)})


def neovim_shot(out: Path, work: Path, chromium: str) -> None:
    with neovim_tui(work / "nvim", FILE, TEXT, server_settings(), (92, 14)) as driver:
        driver.wait_for(lambda: driver.lua("(require('infill.status').current() or {}).kind") == "ready", WAIT,
                        "the server to be ready")
        driver.send("G" + "o" + TYPED)
        driver.wait_for(lambda: ghost_text(driver), WAIT, "ghost text")
        lines = (ghost_text(driver) or {})["lines"]
        print("Neovim suggestion:", repr("\n".join(lines)))
        photograph(driver, chromium, out / "neovim-suggestion.png", "940,330")


NEXT_EDIT_FILE = "scale.py"
ATTACHED = ("(function() local c = vim.lsp.get_clients({ bufnr = 0, name = 'infill' })[1] "
            "return c ~= nil and c.initialized end)()")
NEXT_EDIT_MARKS = "#vim.api.nvim_buf_get_extmarks(0, vim.api.nvim_create_namespace('infill.next_edit'), 0, -1, {})"


def neovim_next_edit_shot(out: Path, work: Path, chromium: str) -> None:
    """The Neovim TUI after renaming `factor` to `k`: the same rename proposed on line 5, with the hint. Model-free
    (propagation), so the default model need not be ready."""
    with neovim_tui(work / "nvim-next-edit", NEXT_EDIT_FILE, NEXT_EDIT_SOURCE, {"next_edit": {"debounce_ms": 50}},
                    (80, 11)) as driver:
        driver.wait_for(lambda: driver.lua(ATTACHED), WAIT, "the server")
        driver.send("gg0f,wciwk<Esc>")
        driver.wait_for(lambda: driver.lua(NEXT_EDIT_MARKS) >= 3, WAIT, "the next edit")
        photograph(driver, chromium, out / "next-edit-neovim.png", "820,260")


class _Running:
    @staticmethod
    def poll() -> None:
        return None


# --- ANSI (SGR) screen → HTML -----------------------------------------------------------------------------------

_BASIC = ["#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
          "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"]


def _color256(n: int) -> str:
    if n < 16:
        return _BASIC[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#" + "".join(f"{v:02x}" for v in (steps[n // 36], steps[(n // 6) % 6], steps[n % 6]))
    level = 8 + (n - 232) * 10
    return f"#{level:02x}{level:02x}{level:02x}"


def terminal_page(screen: str, fg: str = "#e0e2ea", bg: str = "#14161b") -> str:
    """The captured screen as one HTML page: SGR colours, bold, italic, reverse."""
    out = []
    state: dict = {}
    for line in screen.rstrip("\n").split("\n"):
        parts = re.split(r"\x1b\[([0-9;]*)m", line)
        row = []
        for i, part in enumerate(parts):
            if i % 2:
                codes = [int(c) if c else 0 for c in part.split(";")]
                j = 0
                while j < len(codes):
                    c = codes[j]
                    if c == 0:
                        state = {}
                    elif c == 1:
                        state["bold"] = True
                    elif c == 3:
                        state["italic"] = True
                    elif c == 7:
                        state["reverse"] = True
                    elif c == 9:
                        state["strike"] = True
                    elif c == 29:
                        state.pop("strike", None)
                    elif c == 22:
                        state.pop("bold", None)
                    elif c == 23:
                        state.pop("italic", None)
                    elif c == 27:
                        state.pop("reverse", None)
                    elif 30 <= c <= 37 or 90 <= c <= 97:
                        state["fg"] = _BASIC[c - 30 if c < 90 else c - 82]
                    elif 40 <= c <= 47 or 100 <= c <= 107:
                        state["bg"] = _BASIC[c - 40 if c < 100 else c - 92]
                    elif c in (39, 49):
                        state.pop("fg" if c == 39 else "bg", None)
                    elif c in (38, 48) and j + 1 < len(codes):
                        key = "fg" if c == 38 else "bg"
                        if codes[j + 1] == 5 and j + 2 < len(codes):
                            state[key] = _color256(codes[j + 2])
                            j += 2
                        elif codes[j + 1] == 2 and j + 4 < len(codes):
                            state[key] = "#" + "".join(f"{v:02x}" for v in codes[j + 2:j + 5])
                            j += 4
                    j += 1
            elif part:
                color, back = state.get("fg", fg), state.get("bg", bg)
                if state.get("reverse"):
                    color, back = back, color
                style = f"color:{color};background:{back}"
                style += ";font-weight:bold" if state.get("bold") else ""
                style += ";font-style:italic" if state.get("italic") else ""
                style += ";text-decoration:line-through" if state.get("strike") else ""
                row.append(f'<span style="{style}">{html.escape(part)}</span>')
        out.append("".join(row))
    body = "\n".join(out)
    return (f"<!doctype html><meta charset=utf-8><body style='margin:0;background:{bg}'>"
            f"<pre style='margin:0;padding:10px;font:15px/1.35 \"DejaVu Sans Mono\",monospace;color:{fg}'>"
            f"{body}</pre>")


def main() -> None:
    args = sys.argv[1:]
    next_edit = "--next-edit" in args
    args = [a for a in args if a != "--next-edit"]
    out = Path(args[0]) if args else REPO / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    tools, missing = find_toolchain()
    if tools is None:
        raise SystemExit(missing)
    if next_edit:
        with tempfile.TemporaryDirectory(prefix="infill-shots-") as work:
            neovim_next_edit_shot(out, Path(work), tools["chromium"])
        print(f"wrote {out / 'next-edit-neovim.png'}")
        return
    with tempfile.TemporaryDirectory(prefix="infill-shots-") as work:
        vscode_shot(out, Path(work))
        neovim_shot(out, Path(work), tools["chromium"])
    print(f"wrote {out / 'vscode-suggestion.png'} and {out / 'neovim-suggestion.png'}")


if __name__ == "__main__":
    main()
