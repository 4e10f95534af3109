"""Next-edit suggestions in a real Neovim: headless Neovim 0.12 with the plugin from `editors/neovim`.

With the real server (`python -m lsp_server serve --stdio`, model-free propagation: no model output is involved):
the user renames a parameter, the server proposes the same rename further down; the plugin draws it with extmarks
(the old name highlighted, the new one as inline virtual text, a hint on the cursor line), Tab jumps there, Tab again
applies it and reports the acceptance, and the next occurrence is proposed at once (chaining).

With a scripted server (tests/e2e/next_edit_scripted_server.py) the plugin is shown answers the real server does not
give on demand: one for an older version and a malformed one, both dropped; and the multi-line display.

Keys go in through Neovim's RPC socket as typed keys (`--remote-send`); waits are for events (an extmark, a buffer
line, a recorded message), their bounds only safety nets for a loaded machine."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from .test_neovim_plugin import (
    READY_TIMEOUT,
    SERVER_COMMAND,
    WAIT,
    YANKS_ONLY,
    Nvim,
    lua_string,
    nvim_binary,
    run_lua_script,
    running_nvim,
)

SCRIPTED = Path(__file__).with_name("next_edit_scripted_server.py")
NS = "infill.next_edit"
__all__ = ["nvim_binary"]  # a fixture, used by name


def open_file(nvim: Nvim, path: Path, text: str) -> None:
    path.write_text(text)
    nvim.send(f"<Esc>:edit! {path}<CR>")
    nvim.wait_for(lambda: nvim.lua(f"vim.api.nvim_buf_get_name(0) == {lua_string(str(path))}"), WAIT, "the buffer")
    nvim.wait_for(lambda: nvim.lua("(function() local c = vim.lsp.get_clients({ bufnr = 0, name = 'infill' })[1] "
                                   "return c ~= nil and c.initialized end)()"), READY_TIMEOUT,
                  "the infill client to attach")


def marks(nvim: Nvim) -> list[dict[str, Any]]:
    """The next-edit extmarks of the current buffer: row, col and the details that matter."""
    raw = nvim.lua(f"vim.api.nvim_buf_get_extmarks(0, vim.api.nvim_create_namespace('{NS}'), 0, -1, "
                   "{ details = true })") or []
    out = []
    for _, row, col, details in raw:
        out.append({"row": row, "col": col, "end_row": details.get("end_row"), "end_col": details.get("end_col"),
                    "hl": details.get("hl_group"),
                    "virt_text": "".join(c[0] for c in details.get("virt_text") or []),
                    "virt_text_pos": details.get("virt_text_pos"),
                    "virt_lines": ["".join(c[0] for c in line) for line in details.get("virt_lines") or []]})
    return out


def shown_edit(nvim: Nvim, row: int | None = None) -> list[dict[str, Any]] | None:
    """The extmarks once a deletion is drawn (on `row` when given)."""
    found = marks(nvim)
    if any(m["hl"] == "InfillNextEditDelete" and (row is None or m["row"] == row) for m in found):
        return found
    return None


def lines(nvim: Nvim) -> list[str]:
    return nvim.lua("vim.api.nvim_buf_get_lines(0, 0, -1, false)")


def cursor(nvim: Nvim) -> list[int]:
    return nvim.lua("vim.api.nvim_win_get_cursor(0)")


def sent(nvim: Nvim, method: str) -> list[dict[str, Any]]:
    """What the client sent (recorded by INIT_LUA's wrapper): params, and for requests the answer."""
    return nvim.lua(f"vim.tbl_map(function(m) return {{ params = m.params, answered = m.answered or false, "
                    f"result = m.result }} end, vim.tbl_filter(function(m) return m.method == {lua_string(method)} "
                    f"end, _G.infill_test_sent))") or []


# --- with the real server ---------------------------------------------------------------------------------------

#: The parameter's uses are on separate lines: each is one next edit (the server may join uses on one line).
SOURCE = '''def scale(points, factor):
    """Multiply every point by the factor."""
    result = []
    for x, y in points:
        x = x * factor

        y = y * factor
        result.append((x, y))
    return result
'''


@pytest.fixture(scope="module")
def nvim_real(nvim_binary: str, tiny_model: Path, llama_server_binary: str,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nvim]:
    workdir = tmp_path_factory.mktemp("nvim-next-edit")
    settings = {
        "completion": {"kind": "local", "model": str(tiny_model), "local": {"binary": llama_server_binary}},
        "context": YANKS_ONLY,
        "temperature": 0.0,
        "next_edit": {"enabled": True, "propagation": True, "debounce_ms": 50},
    }
    with running_nvim(nvim_binary, workdir, SERVER_COMMAND, settings) as editor:
        # No ghost text in the way: these tests are about next edits (completion stays on in the server).
        editor.exec_lua("vim.lsp.inline_completion.enable(false)")
        yield editor


def test_rename_is_proposed_below_and_tab_jumps_then_applies_then_chains(nvim_real: Nvim, tmp_path: Path) -> None:
    nvim = nvim_real
    open_file(nvim, tmp_path / "scale.py", SOURCE)
    nvim.exec_lua("vim.lsp.inline_completion.enable(false, { bufnr = 0 })")
    # The user renames the parameter `factor` to `k` on line 1.
    nvim.send("gg0f,wciwk<Esc>")
    nvim.wait_for(lambda: lines(nvim)[0] == "def scale(points, k):", WAIT, "the rename")
    # The server proposes the same rename on line 5 (the docstring's "factor" is prose, not the parameter).
    found = nvim.wait_for(lambda: shown_edit(nvim, row=4), WAIT, "the next edit on line 5")
    line5 = SOURCE.splitlines()[4]
    first = line5.index("factor")
    deletion = [m for m in found if m["hl"] == "InfillNextEditDelete"]
    assert [(m["row"], m["col"], m["end_row"], m["end_col"]) for m in deletion] == [(4, first, 4, first + 6)], found
    inserted = [m for m in found if m["virt_text_pos"] == "inline"]
    assert [(m["row"], m["col"], m["virt_text"]) for m in inserted] == [(4, first + 6, "k")], found
    hint = [m for m in found if m["virt_text_pos"] == "eol"]
    assert [(m["row"], m["virt_text"]) for m in hint] == [(0, "→ edit at line 5, Tab (Esc to dismiss)")], found
    assert lines(nvim)[4] == line5, "showing the edit does not change the buffer"
    # The server was told it is shown.
    nvim.wait_for(lambda: sent(nvim, "textDocument/didShowInlineEdit"), WAIT, "didShowInlineEdit")

    nvim.send("<Tab>")  # jump
    nvim.wait_for(lambda: cursor(nvim) == [5, first], WAIT, "the cursor to jump to the edit")
    assert lines(nvim)[4] == line5, "the jump does not apply the edit"
    assert [m["row"] for m in marks(nvim) if m["virt_text_pos"] == "eol"] == [4], "the hint follows the cursor"

    accepted_before = len([c for c in sent(nvim, "workspace/executeCommand")
                           if c["params"]["command"] == "infill.acceptInlineEdit"])
    nvim.send("<Tab>")  # apply
    nvim.wait_for(lambda: lines(nvim)[4] == "        x = x * k", WAIT, "the edit applied")
    accepted = nvim.wait_for(lambda: [c for c in sent(nvim, "workspace/executeCommand")
                                      if c["params"]["command"] == "infill.acceptInlineEdit"][accepted_before:],
                             10, "the accept command")
    assert accepted[-1]["params"]["arguments"], accepted

    # Chaining: the next use, two lines below, is proposed without any further typing.
    found = nvim.wait_for(lambda: shown_edit(nvim, row=6), WAIT, "the chained next edit on line 7")
    assert [(m["row"], m["col"], m["end_col"]) for m in found if m["hl"] == "InfillNextEditDelete"] == [(6, 16, 22)]
    assert [m["virt_text"] for m in found if m["virt_text_pos"] == "eol"] == ["→ Tab to apply the edit, Esc to dismiss"]
    nvim.send("<Tab>")  # near the cursor: applies at once
    nvim.wait_for(lambda: lines(nvim)[6] == "        y = y * k", WAIT, "the second edit applied")
    assert lines(nvim) == ["def scale(points, k):", '    """Multiply every point by the factor."""',
                           "    result = []", "    for x, y in points:", "        x = x * k", "",
                           "        y = y * k", "        result.append((x, y))", "    return result"]
    # Every request named the buffer's version at the time; the answers echoed it.
    for request in sent(nvim, "textDocument/copilotInlineEdit"):
        for edit in (request.get("result") or {}).get("edits") or []:
            assert edit["textDocument"]["version"] == request["params"]["textDocument"]["version"], request


def test_dismiss_key_hides_the_edit_and_tab_is_tab_again(nvim_real: Nvim, tmp_path: Path) -> None:
    nvim = nvim_real
    open_file(nvim, tmp_path / "dismiss.py", SOURCE)
    nvim.exec_lua("vim.lsp.inline_completion.enable(false, { bufnr = 0 })")
    nvim.send("gg0f,wciwk<Esc>")
    nvim.wait_for(lambda: shown_edit(nvim, row=4), WAIT, "the next edit")
    nvim.send("<Esc>")
    nvim.wait_for(lambda: marks(nvim) == [], WAIT, "the edit to be dismissed")
    assert not nvim.lua("require('infill.next_edit').visible()")
    # With nothing shown, the plugin's normal-mode Tab is Neovim's own (<Tab> = <C-i>): nothing is applied.
    before = lines(nvim)
    nvim.send("<Tab>")
    assert lines(nvim) == before


def test_insert_mode_tab_jumps_and_applies_when_no_ghost_text_is_shown(nvim_real: Nvim, tmp_path: Path) -> None:
    nvim = nvim_real
    open_file(nvim, tmp_path / "insert.py", SOURCE)
    nvim.exec_lua("vim.lsp.inline_completion.enable(false, { bufnr = 0 })")
    nvim.send("gg0f,wciwk")  # still in insert mode: the edit is asked for while typing
    nvim.wait_for(lambda: shown_edit(nvim, row=4), WAIT, "the next edit on line 5")
    assert nvim.lua("vim.api.nvim_get_mode().mode") == "i"
    nvim.send("<Tab>")  # the plugin's insert-mode accept key: no ghost text, so it jumps
    nvim.wait_for(lambda: cursor(nvim) == [5, 16], WAIT, "the cursor to jump to the edit")
    assert lines(nvim)[4] == SOURCE.splitlines()[4]
    nvim.send("<Tab>")
    nvim.wait_for(lambda: lines(nvim)[4] == "        x = x * k", WAIT, "the edit applied")
    assert nvim.lua("vim.api.nvim_get_mode().mode") == "i", "still in insert mode"
    assert cursor(nvim) == [5, len("        x = x * k")], "the cursor after the new text"
    nvim.send("<Esc>")


def test_undo_right_after_applying_asks_nothing(nvim_real: Nvim, tmp_path: Path) -> None:
    """`u` right after Tab applied a next edit: the undo was taken for an edit to continue, so the plugin asked again
    and the server proposed the undone edit at once, at the same place (VS Code asks nothing after an undo or redo).
    Now an undo or redo hides what is shown and asks nothing; the next real edit asks again."""
    nvim = nvim_real
    open_file(nvim, tmp_path / "undo.py", SOURCE)
    nvim.exec_lua("vim.lsp.inline_completion.enable(false, { bufnr = 0 }) "
                  # after the plugin's own TextChanged autocommand (made at attach): what it left pending
                  "vim.api.nvim_create_autocmd('TextChanged', { buffer = 0, callback = function() "
                  "vim.g.infill_test_after = { tick = vim.b.changedtick, "
                  "pending = require('infill.next_edit').pending(0) } end })")
    nvim.send("gg0f,wciwk<Esc>")
    nvim.wait_for(lambda: shown_edit(nvim, row=4), WAIT, "the next edit")
    nvim.send("<Tab>")
    nvim.wait_for(lambda: cursor(nvim)[0] == 5, WAIT, "the jump")
    nvim.send("<Tab>")
    nvim.wait_for(lambda: shown_edit(nvim, row=6), WAIT, "the chained next edit")
    assert lines(nvim)[4] == "        x = x * k"
    nvim.send("u")
    tick = nvim.wait_for(lambda: lines(nvim)[4] == SOURCE.splitlines()[4] and nvim.lua("vim.b.changedtick"), WAIT,
                         "the undo")
    after = nvim.wait_for(lambda: (a := nvim.lua("vim.g.infill_test_after")) and a["tick"] == tick and a, WAIT,
                          "the undo's TextChanged")
    assert after["pending"] is False, "no request after the undo"
    assert marks(nvim) == [], "the chained edit, for the text before the undo, is hidden"
    nvim.send("<C-r>")
    tick = nvim.wait_for(lambda: lines(nvim)[4] == "        x = x * k" and nvim.lua("vim.b.changedtick"), WAIT,
                         "the redo")
    after = nvim.wait_for(lambda: (a := nvim.lua("vim.g.infill_test_after")) and a["tick"] == tick and a, WAIT,
                          "the redo's TextChanged")
    assert after["pending"] is False, "no request after the redo"
    # A new edit asks again.
    nvim.send("ggApass<Esc>")
    version = nvim.wait_for(lambda: lines(nvim)[0].endswith("pass")
                            and nvim.lua("vim.lsp.util.buf_versions[vim.api.nvim_get_current_buf()]"), WAIT,
                            "the new edit")
    nvim.wait_for(lambda: [r for r in sent(nvim, "textDocument/copilotInlineEdit")
                           if r["params"]["textDocument"]["version"] == version], WAIT, "a request after a new edit")


def test_checkhealth_reports_next_edits(nvim_real: Nvim, tmp_path: Path) -> None:
    nvim = nvim_real
    open_file(nvim, tmp_path / "health.py", "x = 1\n")
    nvim.send("<Esc>:checkhealth infill<CR>")

    def report() -> str | None:
        if nvim.lua("vim.bo.filetype") != "checkhealth":
            return None
        text = "\n".join(lines(nvim))
        return text if "Next-edit suggestions" in text and "offers next edits" in text else None

    text = nvim.wait_for(report, 30, "the health report's next-edit section")
    nvim.send(":tabclose<CR>")
    section = text[text.index("Next-edit suggestions"):]
    assert "OK on, asked 50 ms after the last change" in section, section
    assert "textDocument/copilotInlineEdit" in section, section


def test_turned_off_at_run_time_it_asks_nothing(nvim_real: Nvim, tmp_path: Path) -> None:
    nvim = nvim_real
    open_file(nvim, tmp_path / "off.py", SOURCE)
    assert nvim.lua("require('infill.next_edit').request()") is True
    nvim.exec_lua("require('infill').update_settings({ next_edit = { enabled = false } })")
    try:
        assert nvim.lua("require('infill.next_edit').request()") is False
        before = len(sent(nvim, "textDocument/copilotInlineEdit"))
        nvim.exec_lua("vim.cmd('InfillNextEdit')")  # run to its end before the count below
        assert len(sent(nvim, "textDocument/copilotInlineEdit")) == before
        config = nvim.lua("vim.lsp.get_clients({ name = 'infill' })[1].settings.infill.next_edit.enabled")
        assert config is False, "the server was sent the new setting"
    finally:
        nvim.exec_lua("require('infill').update_settings({ next_edit = { enabled = true } })")


# --- with the scripted server -----------------------------------------------------------------------------------


@pytest.fixture
def scripted(nvim_binary: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Nvim, Path]]:
    mode, old, new = request.param
    log = tmp_path / "server-log.jsonl"
    workdir = tmp_path / "nvim"
    workdir.mkdir()
    with running_nvim(nvim_binary, workdir, [sys.executable, str(SCRIPTED), old, new, mode, str(log)],
                      {"next_edit": {"debounce_ms": 20}}) as editor:
        yield editor, log


def server_log(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("scripted", [("stale", "width", "size"), ("malformed", "width", "size")], indirect=True)
def test_outdated_and_malformed_answers_are_dropped(scripted: tuple[Nvim, Path], tmp_path: Path) -> None:
    nvim, log = scripted
    open_file(nvim, tmp_path / "area.py", "w = 1\n\n\n\narea = width * height\n")
    nvim.send(":InfillNextEdit<CR>")
    # The answer arrives (recorded with its result) and carries an edit, but nothing is drawn.
    answers = nvim.wait_for(lambda: [r for r in sent(nvim, "textDocument/copilotInlineEdit") if r["answered"]],
                            WAIT, "the server's answer")
    assert answers[-1]["result"]["edits"], answers
    assert marks(nvim) == []
    assert not nvim.lua("require('infill.next_edit').visible()")
    assert not [m for m in server_log(log) if m.get("method") == "textDocument/didShowInlineEdit"]


@pytest.mark.parametrize("scripted", [("hold", "width", "size")], indirect=True)
def test_a_change_cancels_the_request_in_flight(scripted: tuple[Nvim, Path], tmp_path: Path) -> None:
    nvim, log = scripted
    open_file(nvim, tmp_path / "held.py", "w = 1\n\n\n\narea = width * height\n")
    nvim.send(":InfillNextEdit<CR>")
    request = nvim.wait_for(lambda: [m for m in server_log(log) if m.get("method") == "textDocument/copilotInlineEdit"],
                            WAIT, "the request to reach the server")[-1]
    # The server holds its answer; the user edits meanwhile (the answer then comes, for the older version).
    nvim.send("ggAx<Esc>")
    nvim.wait_for(lambda: [m for m in server_log(log) if m.get("method") == "$/cancelRequest"
                           and m["params"]["id"] == request["id"]], WAIT, "$/cancelRequest for the held request")
    answered = nvim.wait_for(lambda: [r for r in sent(nvim, "textDocument/copilotInlineEdit")
                                      if r["params"]["textDocument"]["version"] == request["params"]["textDocument"]
                                      ["version"] and r["answered"]], WAIT, "the held answer to arrive")
    assert answered[0]["result"]["edits"], "the held answer carries an edit (for an older version)"
    assert not [m for m in marks(nvim) if m["hl"] == "InfillNextEditDelete"], "a cancelled request's answer is dropped"


@pytest.mark.parametrize("scripted", [("ok", "width", "size")], indirect=True)
def test_keys_without_a_next_edit_keep_the_users_own_mappings(scripted: tuple[Nvim, Path], tmp_path: Path) -> None:
    """With no next edit shown, the plugin's normal-mode <Esc> and <Tab> do what they do without the plugin,
    including the user's own global mappings (`<Esc>` clearing the search highlight is a common one); the plugin's
    buffer-local mappings fed the bare keys and so bypassed them in every buffer the server was attached to."""
    nvim, log = scripted
    nvim.exec_lua("vim.g.infill_test_keys = {} "
                  "vim.keymap.set('n', '<Esc>', '<Cmd>call add(g:infill_test_keys, \"esc\")<CR>') "
                  # a function that changes windows (as one running :bnext does): not allowed under an expr map's
                  # textlock, so the plugin must not call it from its own expr mapping (E565)
                  "vim.keymap.set('n', '<Tab>', function() vim.cmd('split') vim.cmd('close') "
                  "local keys = vim.g.infill_test_keys table.insert(keys, 'tab') vim.g.infill_test_keys = keys end)")
    open_file(nvim, tmp_path / "keys.py", "w = 1\n")  # nothing for the scripted server to propose
    assert not nvim.lua("require('infill.next_edit').visible()")
    nvim.exec_lua("vim.g.infill_test_keys = {}")  # open_file's own <Esc> was typed before the buffer had the plugin
    nvim.send("<Esc>")
    nvim.wait_for(lambda: nvim.lua("vim.g.infill_test_keys") == ["esc"], WAIT, "the user's <Esc> mapping")
    nvim.send("<Tab>")
    nvim.wait_for(lambda: nvim.lua("vim.g.infill_test_keys") == ["esc", "tab"], WAIT, "the user's <Tab> mapping")


@pytest.mark.parametrize("scripted", [("ok", "width", "size")], indirect=True)
def test_setup_called_again_rebinds_the_keys_of_open_buffers(scripted: tuple[Nvim, Path], tmp_path: Path) -> None:
    """`setup()` called again (a re-sourced config) with other keys: the buffers already open get the new keys too,
    not only the files opened afterwards (they kept the old <Tab>, and the new key did its default instead)."""
    nvim, log = scripted
    open_file(nvim, tmp_path / "keys.py", "w = 1\n\n\n\narea = width * height\n")
    nvim.exec_lua("local o = require('infill').options "
                  "require('infill').setup({ cmd = o.cmd, settings = o.settings, keymaps = { next_edit = '<C-n>' } })")
    assert nvim.lua("vim.fn.maparg('<Tab>', 'n')") == "", "the old key is gone"
    nvim.send(":InfillNextEdit<CR>")
    nvim.wait_for(lambda: shown_edit(nvim, row=4), WAIT, "the next edit")
    nvim.send("<C-n>")
    nvim.wait_for(lambda: cursor(nvim) == [5, 7], WAIT, "the new key to jump to the edit")


@pytest.mark.parametrize("scripted", [("ok", "width", "size")], indirect=True)
def test_infill_disable_hides_the_shown_edit(scripted: tuple[Nvim, Path], tmp_path: Path) -> None:
    """`:Infill disable` with a next edit on screen: the edit goes away, and Tab no longer jumps to it or applies it
    (it stayed drawn and Tab-able although the user had turned Infill off)."""
    nvim, log = scripted
    open_file(nvim, tmp_path / "off.py", "w = 1\n\n\n\narea = width * height\n")
    nvim.send(":InfillNextEdit<CR>")
    nvim.wait_for(lambda: shown_edit(nvim, row=4), WAIT, "the next edit")
    nvim.send(":Infill disable<CR>")
    nvim.wait_for(lambda: marks(nvim) == [], WAIT, "the edit to be hidden")
    assert nvim.lua("require('infill.next_edit').jump_or_apply()") is False, "nothing left for Tab to act on"
    assert cursor(nvim) == [1, 0] and lines(nvim)[4] == "area = width * height"


@pytest.mark.parametrize("scripted", [("ok", "old_total", "total = 0\nfor v in values:\n    total += v")],
                         indirect=True)
def test_multiline_edit_is_drawn_as_virtual_lines_and_applied(scripted: tuple[Nvim, Path], tmp_path: Path) -> None:
    nvim, log = scripted
    open_file(nvim, tmp_path / "sum.py", "values = [1, 2]\nold_total\nprint(total)\n")
    nvim.send(":InfillNextEdit<CR>")
    found = nvim.wait_for(lambda: shown_edit(nvim), WAIT, "the multi-line edit")
    blocks = [m for m in found if m["virt_lines"]]
    assert [(m["row"], m["virt_lines"]) for m in blocks] == [(1, ["total = 0", "for v in values:", "    total += v"])]
    deletion = [m for m in found if m["hl"] == "InfillNextEditDelete"]
    assert [(m["row"], m["col"], m["end_row"], m["end_col"]) for m in deletion] == [(1, 0, 1, 9)]
    # On the cursor's line (row 0 is within two lines): the hint says Tab applies, and it does.
    assert [m["virt_text"] for m in found if m["virt_text_pos"] == "eol"] == ["→ Tab to apply the edit, Esc to dismiss"]
    nvim.send("<Tab>")
    nvim.wait_for(lambda: lines(nvim) == ["values = [1, 2]", "total = 0", "for v in values:", "    total += v",
                                          "print(total)"], WAIT, "the edit applied")
    commands = nvim.wait_for(lambda: [m for m in server_log(log) if m.get("method") == "workspace/executeCommand"],
                             10, "the accept command")
    assert commands[-1]["params"] == {"command": "infill.acceptInlineEdit", "arguments": ["scripted-16"]}
    shown = [m for m in server_log(log) if m.get("method") == "textDocument/didShowInlineEdit"]
    assert shown and shown[0]["params"]["item"]["command"]["arguments"] == ["scripted-16"]


LUA_UNITS = r"""
vim.opt.runtimepath:prepend(PLUGIN)
local ne = require('infill.next_edit')
local function eq(a, b, what)
  if not vim.deep_equal(a, b) then
    error(('%s: expected %s, got %s'):format(what, vim.inspect(b), vim.inspect(a)), 2)
  end
end
eq({ ne.change_of('width * 2', 'size * 2') }, { 0, 'width', 'size' }, 'shared end trimmed')
eq({ ne.change_of('f(a)', 'f(a, b)') }, { 3, '', ', b' }, 'pure insertion')
eq({ ne.change_of('"é"', '"è"') }, { 1, 'é', 'è' }, 'prefix stops at a character boundary')
eq({ ne.change_of('café', 'cafè') }, { 0, 'café', 'cafè' }, 'non-ASCII letters are word characters')
eq({ ne.change_of('x', 'x') }, { 1, '', '' }, 'no change')
eq({ ne.change_of('points', 'pts') }, { 0, 'points', 'pts' }, 'a removal inside a word marks the word')
eq({ ne.change_of('a = total_size', 'a = total_sum') }, { 4, 'total_size', 'total_sum' }, 'whole word')
eq({ ne.change_of('ret', 'return') }, { 3, '', 'urn' }, 'a pure insertion stays minimal')
eq({ ne.advance(3, 4, 'ab') }, { 3, 6 }, 'advance on a line')
eq({ ne.advance(3, 4, 'ab\ncde') }, { 4, 3 }, 'advance over a line break')
eq(ne.tab_action({ 10, 0, 10, 5 }, 7), 'jump', 'three lines above: jump')
eq(ne.tab_action({ 10, 0, 10, 5 }, 8), 'apply', 'two lines above: apply')
eq(ne.tab_action({ 10, 0, 12, 5 }, 14), 'apply', 'two lines below the end: apply')
eq(ne.tab_action({ 10, 0, 12, 5 }, 15), 'jump', 'three lines below the end: jump')
eq(ne.hint_text('jump', { 9, 0, 9, 1 }), '→ edit at line 10, Tab (Esc to dismiss)', 'hint, 1-based line')
local s = ne.settings({ next_edit = { languages = { markdown = false } } })
eq({ s.enabled, s.debounce_ms }, { true, ne.DEFAULT_DEBOUNCE_MS }, 'defaults')
eq(ne.enabled_for(s, 'markdown'), false, 'per language off')
eq(ne.enabled_for(s, 'python'), true, 'other languages on')
eq(ne.settings({ nextEdit = { debounceMs = 75 } }).debounce_ms, 75, 'camelCase keys')
eq(ne.settings({ enabled = false }).enabled, false, 'off with the whole server')
local config = require('infill.config')
eq(config.resolve({}).keymaps.next_edit, '<Tab>', 'next_edit key default')
eq(config.resolve({ keymaps = { next_edit = '<C-n>' } }).keymaps.next_edit_dismiss, '<Esc>', 'dismiss key default')
local ok, err = pcall(config.resolve, { keymaps = { nxt_edit = 'x' } })
assert(not ok and err:match('next_edit'), 'an unknown key names the valid ones: ' .. tostring(err))
print('next edit lua units ok')
"""


def test_lua_units(nvim_binary: str, tmp_path: Path) -> None:
    assert "next edit lua units ok" in run_lua_script(nvim_binary, tmp_path, LUA_UNITS)
