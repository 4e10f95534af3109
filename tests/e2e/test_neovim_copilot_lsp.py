"""An existing next-edit client, unchanged, against Infill: copilot-lsp (the Neovim plugin written for GitHub's
Copilot language server; vendored in tests/e2e/vendor/, see its README) in a headless Neovim 0.12.

The user's whole change is the server command: `vim.lsp.config('copilot_ls', { cmd = { 'infill', 'serve',
'--stdio' } })`. The plugin keeps its own initialization options (`editorInfo`, `editorPluginInfo`) and settings
(`nextEditSuggestions`); it asks `textDocument/copilotInlineEdit` after a change (debounced), draws the edit,
reports `textDocument/didShowInlineEdit`, jumps to it and applies it with its own functions. Infill's model-free
propagation answers, so no model output is involved; the tiny model only backs the completion side."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from .test_neovim_next_edit import SOURCE
from .test_neovim_plugin import (REPO, SERVER_COMMAND, WAIT, YANKS_ONLY, Nvim, lua_string, nvim_binary,
                                 quit_leaving_nothing)

VENDOR = Path(__file__).with_name("vendor") / "copilot-lsp"
READY = 60.0
__all__ = ["nvim_binary"]  # a fixture, used by name

INIT_LUA = """
vim.opt.runtimepath:prepend({vendor})
vim.g.copilot_nes_debounce = 50
-- The one line a copilot-lsp user changes: the server command (plus, here, the test's model settings).
vim.lsp.config('copilot_ls', {{ cmd = {cmd}, init_options = vim.json.decode({settings}) }})
vim.lsp.enable('copilot_ls')
"""



@pytest.fixture(scope="module")
def nvim(nvim_binary: str, tiny_model: Path, llama_server_binary: str,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nvim]:
    workdir = tmp_path_factory.mktemp("nvim-copilot-lsp")
    settings = {
        "completion": {"kind": "local", "model": str(tiny_model), "local": {"binary": llama_server_binary}},
        "context": YANKS_ONLY,
    }
    init = workdir / "init.lua"
    init.write_text(INIT_LUA.format(vendor=lua_string(str(VENDOR)),
                                    cmd="{" + ", ".join(lua_string(c) for c in SERVER_COMMAND) + "}",
                                    settings=lua_string(json.dumps(settings))))
    env = {**os.environ, **{f"XDG_{kind}_HOME": str(workdir / kind.lower()) for kind in ("CONFIG", "STATE", "DATA",
                                                                                         "CACHE")},
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    editor = Nvim(nvim_binary, workdir, init, env)
    try:
        yield editor
    finally:
        quit_leaving_nothing(editor, workdir / "state")


def lines(nvim: Nvim) -> list[str]:
    return nvim.lua("vim.api.nvim_buf_get_lines(0, 0, -1, false)")


def nes_state(nvim: Nvim) -> dict[str, Any] | None:
    return nvim.lua("vim.b.nes_state or vim.NIL")


def server_stats(nvim: Nvim) -> dict[str, Any]:
    return nvim.lua("(function() local c = vim.lsp.get_clients({ name = 'copilot_ls' })[1] "
                    "local r = c:request_sync('infill/stats', {}, 10000) return r and r.result end)()") or {}


def test_copilot_lsp_shows_jumps_to_and_applies_infills_next_edit(nvim: Nvim, tmp_path: Path) -> None:
    path = tmp_path / "scale.py"
    path.write_text(SOURCE)
    nvim.send(f"<Esc>:edit! {path}<CR>")
    nvim.wait_for(lambda: nvim.lua("(function() local c = vim.lsp.get_clients({ bufnr = 0, name = 'copilot_ls' })[1] "
                                   "return c ~= nil and c.initialized end)()"), READY, "copilot_ls to attach")
    # The user renames the parameter `factor` to `k`; the plugin asks for the next edit after the change.
    nvim.send("gg0f,wciwk<Esc>")
    nvim.wait_for(lambda: lines(nvim)[0] == "def scale(points, k):", WAIT, "the rename")
    state = nvim.wait_for(lambda: nes_state(nvim), WAIT, "copilot-lsp's pending next edit")
    line5 = SOURCE.splitlines()[4]
    first = line5.index("factor")
    assert state["range"] == {"start": {"line": 4, "character": first}, "end": {"line": 4, "character": first + 6}}
    assert state["newText"] == "k" and state["textDocument"]["uri"] == path.as_uri()
    assert state["textDocument"]["version"] == nvim.lua("vim.lsp.util.buf_versions[vim.api.nvim_get_current_buf()]")
    assert lines(nvim)[4] == line5, "showing the edit does not change the buffer"
    # The plugin drew it (its own namespace) and told the server so.
    drawn = nvim.lua("#vim.api.nvim_buf_get_extmarks(0, vim.api.nvim_create_namespace('copilotlsp.nes'), 0, -1, {})")
    assert drawn > 0
    nvim.wait_for(lambda: server_stats(nvim).get("next_edit", {}).get("shown") == 1, WAIT, "didShowInlineEdit")

    # The plugin's own jump, then apply.
    assert nvim.lua("require('copilot-lsp.nes').walk_cursor_start_edit()") is True
    nvim.wait_for(lambda: nvim.lua("vim.api.nvim_win_get_cursor(0)") == [5, first], WAIT, "the jump")
    assert nvim.lua("require('copilot-lsp.nes').apply_pending_nes()") is True
    nvim.wait_for(lambda: lines(nvim)[4] == "        x = x * k", WAIT, "the edit applied")
    # Chaining: after the applied edit the plugin asks again and gets the next use.
    state = nvim.wait_for(lambda: (nes_state(nvim) or {}).get("range", {}).get("start", {}).get("line") == 6
                          and nes_state(nvim), WAIT, "the chained next edit")
    assert state["newText"] == "k"
    stats = server_stats(nvim)["next_edit"]
    assert stats["propagated"] >= 2 and stats["shown"] >= 2
