--- Next-edit suggestions: after an edit, ask the server (`textDocument/copilotInlineEdit`) for the matching edit
--- elsewhere in the buffer, draw it with extmarks (removed text highlighted, new text as virtual text on its line or
--- as virtual lines below it, a hint on the cursor line), and let Tab jump to it, then apply it. An applied edit runs
--- the edit's command (the server counts it and chains from it) and asks again at once, so a rename carried through
--- a file is Tab, Tab, Tab, Tab...
---
--- The settings are the server's `next_edit` section (`settings.next_edit` of setup(); `enabled`, `languages`,
--- `debounce_ms`), read here too so that the client asks only where the server would answer.
local M = {}

local api = vim.api
local util = vim.lsp.util

M.ns = api.nvim_create_namespace('infill.next_edit')
M.METHOD = 'textDocument/copilotInlineEdit'
--- Lines around an edit within which Tab applies it without jumping first (as in the VS Code extension).
M.NEAR_LINES = 2
M.DEFAULT_DEBOUNCE_MS = 150

---@class infill.NextEditState
---@field client_id integer
---@field request_id? integer      the request in flight
---@field requested? integer       the buffer version the last request was made for
---@field edit? table              the shown edit (LSP): text, range, textDocument, command
---@field version? integer         the buffer version it belongs to
---@field span? table              { srow, scol, erow, ecol } the edit's range in bytes
---@field timer? uv.uv_timer_t
---@field seq? integer            the buffer's undo state (changenr()) at its last change
---@field seq_max? integer        the highest undo state seen: a change above it is new, not an undo or redo

---@type table<integer, infill.NextEditState>
local state = {}

-- Pure helpers (tested headless) ---------------------------------------------------------------------------------

local function continuation(s, i)
  local b = s:byte(i)
  return b ~= nil and b >= 0x80 and b < 0xC0
end

--- Whether byte i of s belongs to a word (ASCII letters, digits, _ and any non-ASCII byte).
local function word(s, i)
  local b = s:byte(i)
  return b ~= nil and (b >= 0x80 or s:sub(i, i):match('[%w_]') ~= nil)
end

--- What really changes when `old` becomes `new`: the shared start and end taken off (on character boundaries).
---@return integer prefix bytes shared at the start
---@return string removed
---@return string inserted
function M.change_of(old, new)
  local most = math.min(#old, #new)
  local prefix = 0
  while prefix < most and old:byte(prefix + 1) == new:byte(prefix + 1) do
    prefix = prefix + 1
  end
  while prefix > 0 and (continuation(old, prefix + 1) or continuation(new, prefix + 1)) do
    prefix = prefix - 1
  end
  local suffix = 0
  while suffix < most - prefix and old:byte(#old - suffix) == new:byte(#new - suffix) do
    suffix = suffix + 1
  end
  while suffix > 0 and (continuation(old, #old - suffix + 1) or continuation(new, #new - suffix + 1)) do
    suffix = suffix - 1
  end
  if prefix + suffix < #old then
    -- Something is removed: mark whole words (`points` -> `pts` highlights `points`, not `oin`).
    while prefix > 0 and word(old, prefix) and (word(old, prefix + 1) or word(new, prefix + 1)) do
      prefix = prefix - 1
    end
    while suffix > 0 and word(old, #old - suffix + 1) and (word(old, #old - suffix) or word(new, #new - suffix)) do
      suffix = suffix - 1
    end
  end
  return prefix, old:sub(prefix + 1, #old - suffix), new:sub(prefix + 1, #new - suffix)
end

--- (row, col) after walking `text` from (row, col), in bytes.
function M.advance(row, col, text)
  local lines = vim.split(text, '\n', { plain = true })
  if #lines == 1 then
    return row, col + #text
  end
  return row + #lines - 1, #lines[#lines]
end

--- 'jump' when the cursor row is more than NEAR_LINES away from the edit's rows, else 'apply'.
function M.tab_action(span, cursor_row)
  if cursor_row < span[1] - M.NEAR_LINES or cursor_row > span[3] + M.NEAR_LINES then
    return 'jump'
  end
  return 'apply'
end

function M.hint_text(action, span)
  if action == 'jump' then
    return ('→ edit at line %d, Tab (Esc to dismiss)'):format(span[1] + 1)
  end
  return '→ Tab to apply the edit, Esc to dismiss'
end

--- The server's `next_edit` settings (snake_case or camelCase keys), with the client's defaults.
---@param settings table the server settings given to setup()
function M.settings(settings)
  local section = settings and (settings.next_edit or settings.nextEdit) or {}
  local function get(snake, camel)
    local v = section[snake]
    if v == nil then
      v = section[camel]
    end
    return v
  end
  local debounce = get('debounce_ms', 'debounceMs')
  return {
    enabled = settings == nil or settings.enabled ~= false and get('enabled', 'enabled') ~= false,
    languages = get('languages', 'languages') or {},
    debounce_ms = type(debounce) == 'number' and debounce or M.DEFAULT_DEBOUNCE_MS,
  }
end

--- Whether next edits are asked for in a buffer of `filetype` (the LSP language id Neovim sends).
function M.enabled_for(nes, filetype)
  if not nes.enabled then
    return false
  end
  return nes.languages[filetype] ~= false
end

--- The method and accept command the server advertises (`capabilities.experimental.infill.nextEdit`), or nil.
function M.advertised(client)
  local caps = client and client.server_capabilities
  local nes = caps and caps.experimental and caps.experimental.infill and caps.experimental.infill.nextEdit
  if type(nes) == 'table' and type(nes.method) == 'string' then
    return nes
  end
  return nil
end

-- Buffer state ---------------------------------------------------------------------------------------------------

local function options()
  return require('infill').options or require('infill.config').resolve()
end

local function buffer_version(bufnr)
  return util.buf_versions[bufnr] or api.nvim_buf_get_changedtick(bufnr)
end

--- The infill client of `bufnr` that offers next edits.
local function nes_client(bufnr)
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr, name = 'infill' })) do
    if M.advertised(client) then
      return client
    end
  end
  return nil
end

--- LSP position → (row, byte col), clamped to the buffer.
local function to_bytes(bufnr, position, encoding)
  local count = api.nvim_buf_line_count(bufnr)
  if position.line >= count then
    local last = api.nvim_buf_get_lines(bufnr, count - 1, count, false)[1] or ''
    return count - 1, #last
  end
  local line = api.nvim_buf_get_lines(bufnr, position.line, position.line + 1, false)[1] or ''
  local ok, col = pcall(vim.str_byteindex, line, encoding, position.character, false)
  return position.line, ok and math.min(col, #line) or #line
end

local function buf_text(bufnr, span)
  return table.concat(api.nvim_buf_get_text(bufnr, span[1], span[2], span[3], span[4], {}), '\n')
end

local function clear_marks(bufnr)
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
end

--- Hides the shown edit of `bufnr` (nothing else changes).
local function hide(bufnr)
  local st = state[bufnr]
  if st then
    st.edit, st.version, st.span = nil, nil, nil
  end
  clear_marks(bufnr)
end

local function cancel(bufnr)
  local st = state[bufnr]
  if not st then
    return
  end
  if st.timer then
    st.timer:stop()
  end
  if st.request_id then
    local client = vim.lsp.get_client_by_id(st.client_id)
    if client then
      client:cancel_request(st.request_id)
    end
    st.request_id = nil
  end
end

--- The shown edit of the current buffer, or nil (also when the buffer changed since).
function M.current(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local st = state[bufnr]
  if not st or not st.edit then
    return nil
  end
  if st.version ~= buffer_version(bufnr) then
    hide(bufnr)
    return nil
  end
  return st
end

function M.visible(bufnr)
  return M.current(bufnr) ~= nil
end

--- Whether a request for `bufnr` is scheduled (the debounce runs) or in flight.
function M.pending(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local st = state[bufnr]
  return st ~= nil and (st.request_id ~= nil or (st.timer ~= nil and st.timer:is_active()))
end

-- Drawing --------------------------------------------------------------------------------------------------------

local function draw_hint(bufnr, st)
  local winid = api.nvim_get_current_win()
  if api.nvim_win_get_buf(winid) ~= bufnr then
    return
  end
  if st.hint_id then
    pcall(api.nvim_buf_del_extmark, bufnr, M.ns, st.hint_id)
  end
  local row = api.nvim_win_get_cursor(winid)[1] - 1
  st.hint_id = api.nvim_buf_set_extmark(bufnr, M.ns, row, 0, {
    virt_text = { { M.hint_text(M.tab_action(st.span, row), st.span), 'InfillNextEditHint' } },
    virt_text_pos = 'eol',
    hl_mode = 'combine',
  })
end

--- Draws `st.edit`: the removed part highlighted, the new text inline (one line) or as virtual lines (several).
local function draw(bufnr, st)
  clear_marks(bufnr)
  st.hint_id = nil
  local span = st.span
  local old = buf_text(bufnr, span)
  local prefix, removed, inserted = M.change_of(old, st.edit.text)
  local srow, scol = M.advance(span[1], span[2], old:sub(1, prefix))
  local rrow, rcol = M.advance(srow, scol, removed)
  if removed ~= '' then
    api.nvim_buf_set_extmark(bufnr, M.ns, srow, scol, { end_row = rrow, end_col = rcol,
      hl_group = 'InfillNextEditDelete', priority = 250 })
  end
  if inserted ~= '' and not inserted:find('\n', 1, true) then
    api.nvim_buf_set_extmark(bufnr, M.ns, rrow, rcol, { virt_text = { { inserted, 'InfillNextEditInsert' } },
      virt_text_pos = 'inline', priority = 250 })
  elseif inserted ~= '' then
    -- Several lines: the lines the edit's rows become, shown below them.
    local first = api.nvim_buf_get_text(bufnr, span[1], 0, span[1], span[2], {})[1] or ''
    local last_line = api.nvim_buf_get_lines(bufnr, span[3], span[3] + 1, false)[1] or ''
    local new_lines = vim.split(first .. st.edit.text .. last_line:sub(span[4] + 1), '\n', { plain = true })
    local virt_lines = {}
    for _, line in ipairs(new_lines) do
      virt_lines[#virt_lines + 1] = { { line, 'InfillNextEditInsert' } }
    end
    api.nvim_buf_set_extmark(bufnr, M.ns, span[3], 0, { virt_lines = virt_lines, priority = 250 })
  end
  draw_hint(bufnr, st)
end

local function show(bufnr, client, edit)
  local st = state[bufnr]
  local encoding = client.offset_encoding
  local srow, scol = to_bytes(bufnr, edit.range.start, encoding)
  local erow, ecol = to_bytes(bufnr, edit.range['end'], encoding)
  st.edit, st.version, st.span = edit, buffer_version(bufnr), { srow, scol, erow, ecol }
  if buf_text(bufnr, st.span) == edit.text then
    hide(bufnr)
    return
  end
  draw(bufnr, st)
  if edit.command then
    client:notify('textDocument/didShowInlineEdit', { item = { command = edit.command } })
  end
  api.nvim_exec_autocmds('User', { pattern = 'InfillNextEdit', modeline = false,
    data = { bufnr = bufnr, edit = edit } })
end

-- Requests -------------------------------------------------------------------------------------------------------

--- Asks for the next edit at the cursor of the current window (which must show `bufnr`).
---@param bufnr? integer
---@param trigger_kind? integer 1 invoked (explicit, chained), 2 automatic
function M.request(bufnr, trigger_kind)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local winid = api.nvim_get_current_win()
  local client = nes_client(bufnr)
  local nes = M.settings(options().settings)
  if not client or api.nvim_win_get_buf(winid) ~= bufnr or not M.enabled_for(nes, vim.bo[bufnr].filetype) then
    return false
  end
  cancel(bufnr)
  hide(bufnr)
  local st = state[bufnr] or {}
  state[bufnr] = st
  st.client_id = client.id
  local version = buffer_version(bufnr)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr), version = version },
    position = util.make_position_params(winid, client.offset_encoding).position,
    context = { triggerKind = trigger_kind or 2 },
  }
  st.requested = version
  local ok, request_id
  ok, request_id = client:request(M.advertised(client).method, params, function(err, result)
    if st.request_id ~= request_id then
      return -- superseded: an answer to an older request
    end
    st.request_id = nil
    if err or type(result) ~= 'table' or type(result.edits) ~= 'table' or not result.edits[1] then
      return
    end
    local edit = result.edits[1]
    local doc = edit.textDocument or {}
    if doc.version ~= buffer_version(bufnr) or doc.uri ~= params.textDocument.uri
      or type(edit.text) ~= 'string' or type(edit.range) ~= 'table' or not api.nvim_buf_is_valid(bufnr) then
      return -- outdated (the buffer changed since) or malformed
    end
    show(bufnr, client, edit)
  end, bufnr)
  if ok then
    st.request_id = request_id
  end
  return ok
end

--- Whether the change that made the buffer's undo state `seq` was an undo or redo (`u`, `<C-r>`, `:earlier`...): a
--- move to a change the buffer already had. A new change gets a number above every one seen; typing on in insert
--- mode keeps the number of the change it continues.
local function undo_or_redo(st, seq)
  local moved = st.seq ~= nil and seq ~= st.seq and seq <= (st.seq_max or seq)
  st.seq, st.seq_max = seq, math.max(st.seq_max or seq, seq)
  return moved
end

--- Called on every change of an attached buffer: hides the edit and asks again after the debounce (not after an
--- undo or redo: undoing an applied edit is no edit to continue, and asking again proposed the undone edit at once).
local function on_change(bufnr)
  local st = state[bufnr] or {}
  state[bufnr] = st
  local undone = undo_or_redo(st, api.nvim_buf_call(bufnr, vim.fn.changenr))
  local version = buffer_version(bufnr)
  if st.requested == version then
    return -- already asked for this version (an applied edit chains at once; leaving insert mode changes nothing)
  end
  cancel(bufnr)
  hide(bufnr)
  if undone then
    return
  end
  local client = nes_client(bufnr)
  local nes = M.settings(options().settings)
  if not client or not M.enabled_for(nes, vim.bo[bufnr].filetype) then
    return
  end
  st.client_id = client.id
  st.timer = st.timer or vim.uv.new_timer()
  st.timer:stop()
  st.timer:start(nes.debounce_ms, 0, vim.schedule_wrap(function()
    if api.nvim_buf_is_valid(bufnr) and api.nvim_get_current_buf() == bufnr and buffer_version(bufnr) == version then
      M.request(bufnr, 2)
    end
  end))
end

-- Keys -----------------------------------------------------------------------------------------------------------

--- Tab: jumps to the shown edit when it is away from the cursor, else applies it (then asks for the next one).
--- Returns false when no edit is shown.
function M.jump_or_apply()
  local bufnr = api.nvim_get_current_buf()
  local st = M.current(bufnr)
  if not st then
    return false
  end
  local winid = api.nvim_get_current_win()
  local row = api.nvim_win_get_cursor(winid)[1] - 1
  if M.tab_action(st.span, row) == 'jump' then
    vim.cmd("normal! m'") -- back with <C-o>
    api.nvim_win_set_cursor(winid, { st.span[1] + 1, st.span[2] })
    draw_hint(bufnr, st)
    return true
  end
  return M.apply()
end

--- Applies the shown edit, runs its command and asks for the next edit.
function M.apply()
  local bufnr = api.nvim_get_current_buf()
  local st = M.current(bufnr)
  local client = st and vim.lsp.get_client_by_id(st.client_id)
  if not st or not client then
    return false
  end
  local edit, span = st.edit, st.span
  hide(bufnr)
  cancel(bufnr)
  vim.lsp.util.apply_text_edits({ { range = edit.range, newText = edit.text } }, bufnr, client.offset_encoding)
  local row, col = M.advance(span[1], span[2], edit.text)
  local last = api.nvim_buf_line_count(bufnr)
  row = math.min(row, last - 1)
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
  -- In normal mode the cursor sits on the last character of the new text, as after a change.
  local in_insert = api.nvim_get_mode().mode:sub(1, 1) == 'i'
  if not in_insert and col > 0 then
    col = col - 1
  end
  api.nvim_win_set_cursor(0, { row + 1, math.min(col, #line) })
  if edit.command then
    client:exec_cmd(edit.command, { bufnr = bufnr })
  end
  M.request(bufnr, 1)
  return true
end

--- Hides the shown edit and cancels the request in flight. Returns false when nothing was shown.
function M.dismiss(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local shown = M.visible(bufnr)
  cancel(bufnr)
  hide(bufnr)
  return shown
end

--- After a settings change: hides the edits shown where next edits are now off (`:Infill disable`), and stops asking.
function M.settings_changed()
  local nes = M.settings(options().settings)
  for bufnr in pairs(state) do
    if api.nvim_buf_is_valid(bufnr) and not M.enabled_for(nes, vim.bo[bufnr].filetype) then
      M.dismiss(bufnr)
    end
  end
end

--- `:InfillNextEdit`: jumps to or applies the shown edit, or asks for one now.
function M.command()
  if not M.jump_or_apply() then
    M.request(0, 1)
  end
end

-- Attaching ------------------------------------------------------------------------------------------------------

--- The highlights, `default` so a colorscheme or the user can set their own. The removal is DiffDelete's colours,
--- struck through (a link could not add the strike-through).
function M.define_highlights()
  local delete = api.nvim_get_hl(0, { name = 'DiffDelete', link = false })
  delete.strikethrough, delete.default = true, true
  api.nvim_set_hl(0, 'InfillNextEditDelete', delete)
  api.nvim_set_hl(0, 'InfillNextEditInsert', { default = true, link = 'DiffAdd' })
  api.nvim_set_hl(0, 'InfillNextEditHint', { default = true, link = 'Comment' })
end

local group = api.nvim_create_augroup('infill.next_edit', { clear = true })
api.nvim_create_autocmd('ColorScheme', { group = group, callback = function() M.define_highlights() end })

--- Sets up the autocommands of `bufnr` (once per buffer).
---@param bufnr integer
function M.attach(bufnr)
  if vim.b[bufnr].infill_next_edit_attached then
    return
  end
  vim.b[bufnr].infill_next_edit_attached = true
  M.define_highlights()
  api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI' }, { group = group, buffer = bufnr,
    callback = function(ev) on_change(ev.buf) end })
  api.nvim_create_autocmd({ 'CursorMoved', 'CursorMovedI' }, { group = group, buffer = bufnr, callback = function(ev)
    local st = M.current(ev.buf)
    if st then
      draw_hint(ev.buf, st)
    end
  end })
  api.nvim_create_autocmd({ 'BufLeave', 'BufUnload' }, { group = group, buffer = bufnr,
    callback = function(ev) M.dismiss(ev.buf) end })
  api.nvim_create_autocmd('BufEnter', { group = group, buffer = bufnr, callback = function(ev)
    local client = nes_client(ev.buf)
    if client then
      client:notify('textDocument/didFocus', { textDocument = { uri = vim.uri_from_bufnr(ev.buf) } })
    end
  end })
end

--- Maps the normal-mode keys of `bufnr` (lua/infill/init.lua removes the previous ones first).
---@param bufnr integer
---@param keymaps infill.Keymaps|false
function M.set_keymaps(bufnr, keymaps)
  if not keymaps then
    return
  end
  -- Normal mode; expr maps with a fallback, so the keys keep their meaning (their global mapping, if any) when no
  -- edit is shown. The action runs after the mapping (an expr map may not change the buffer).
  local function map(name, action, desc)
    local lhs = keymaps[name]
    if not lhs then
      return
    end
    vim.keymap.set('n', lhs, function()
      if not M.visible() then
        return require('infill.keys').fallback('n', lhs)
      end
      vim.schedule(action)
      return ''
    end, { buffer = bufnr, expr = true, desc = require('infill.keys').DESC .. desc })
  end
  map('next_edit', M.jump_or_apply, 'jump to or apply the next edit')
  map('next_edit_dismiss', M.dismiss, 'dismiss the next edit')
end

function M.detach(bufnr)
  M.dismiss(bufnr)
  local st = state[bufnr]
  if st and st.timer then
    st.timer:close()
  end
  state[bufnr] = nil
end

return M
