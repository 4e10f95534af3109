--- Infill for Neovim: registers the `infill` language server, turns on Neovim's inline completion (ghost text) for
--- it, and adds keymaps and the `:Infill` command.
---
--- ```lua
--- require('infill').setup({
---   settings = { completion = { kind = 'local', model = '~/models/qwen2.5-coder-1.5b-q8_0.gguf' } },
--- })
--- ```
local config = require('infill.config')
local status = require('infill.status')
local accept = require('infill.accept')
local server = require('infill.server')
local yank = require('infill.yank')
local keys = require('infill.keys')
local next_edit = require('infill.next_edit')

local M = {}

local api = vim.api
local NAME = 'infill'
local INLINE = 'textDocument/inlineCompletion'

---@type infill.Options?
M.options = nil

--- Whether this Neovim has the built-in inline completion UI (0.12+).
function M.has_inline_completion()
  return vim.lsp.inline_completion ~= nil and vim.lsp.inline_completion.get ~= nil
end

--- An empty Lua table encodes as a JSON list; the server wants an object for its settings.
local function as_object(tbl)
  if next(tbl) == nil then
    return vim.empty_dict()
  end
  return tbl
end

--- Adds `dir` to the client's workspace folders (and tells the server), unless it is one already.
---@param client vim.lsp.Client
---@param dir string
local function add_workspace_folder(client, dir)
  local uri = vim.uri_from_fname(dir)
  for _, folder in ipairs(client.workspace_folders or {}) do
    if folder.uri == uri then
      return
    end
  end
  local folder = { uri = uri, name = dir }
  client.workspace_folders = client.workspace_folders or {}
  table.insert(client.workspace_folders, folder)
  client:notify('workspace/didChangeWorkspaceFolders', { event = { added = { folder }, removed = {} } })
end

--- One server for every buffer of this Neovim, whichever project it belongs to. Neovim's default starts a server per
--- root directory, and every `infill serve` starts a llama-server of its own: three projects open meant the model
--- loaded three times (memory, cores, and seconds of "starting" for each new project). A buffer of another project
--- adds its root to the server's workspace folders instead.
---@param client vim.lsp.Client
---@param cfg vim.lsp.ClientConfig
---@return boolean
local function reuse_client(client, cfg)
  if client.name ~= cfg.name or client:is_stopped() or not vim.deep_equal(client.config.cmd, cfg.cmd) then
    return false
  end
  if cfg.root_dir then
    add_workspace_folder(client, cfg.root_dir)
  end
  return true
end

--- The `vim.lsp.Config` for the server, built from the resolved options. The default `infill` command is looked up
--- on PATH, then in the checkout's .venv (lua/infill/server.lua); when neither has it the user is told where it looked.
---@param opts? infill.Options
---@return vim.lsp.Config
function M.lsp_config(opts)
  opts = opts or M.options or config.resolve()
  local cmd, tried = server.resolve(opts.cmd)
  if not cmd then
    server.notify_missing(tried)
  end
  return {
    name = NAME,
    cmd = cmd or opts.cmd,
    cmd_env = opts.cmd_env,
    filetypes = opts.filetypes,
    root_markers = opts.root_markers,
    reuse_client = reuse_client,
    -- initializationOptions, the `infill` section for workspace/configuration, and (sent by Neovim after
    -- initialize) workspace/didChangeConfiguration {settings = {infill = ...}} all carry the same settings.
    init_options = as_object(vim.deepcopy(opts.settings)),
    settings = { [NAME] = as_object(vim.deepcopy(opts.settings)) },
    handlers = { ['infill/didChangeStatus'] = status.handler },
    on_exit = function(_, _, client_id)
      status.forget(client_id)
    end,
  }
end

---@return vim.lsp.Client[]
function M.clients(filter)
  return vim.lsp.get_clients(vim.tbl_extend('force', { name = NAME }, filter or {}))
end

--- Pushes new server settings to the running clients (`workspace/didChangeConfiguration`), e.g.
--- `require('infill').update_settings({ multiline = 'never' })`. Kept for clients started later too.
---@param settings table merged into the current settings
function M.update_settings(settings)
  local opts = M.options or config.resolve()
  opts.settings = vim.tbl_deep_extend('force', opts.settings, settings)
  M.options = opts
  vim.lsp.config(NAME, { init_options = as_object(vim.deepcopy(opts.settings)),
    settings = { [NAME] = as_object(vim.deepcopy(opts.settings)) } })
  for _, client in ipairs(M.clients()) do
    client.settings = { [NAME] = as_object(vim.deepcopy(opts.settings)) }
    client:notify('workspace/didChangeConfiguration', { settings = client.settings })
  end
  next_edit.settings_changed()
end

-- Keymaps ---------------------------------------------------------------------------------------------------------

--- Accepts the next word or line of the shown suggestion; returns false when none is shown.
---@param unit 'word'|'line'
function M.accept_part(unit)
  if not M.has_inline_completion() then
    return false
  end
  return vim.lsp.inline_completion.get({
    on_accept = function(item)
      local client = vim.lsp.get_client_by_id(item.client_id)
      local bufnr = api.nvim_get_current_buf()
      local winid = api.nvim_get_current_win()
      local cursor = api.nvim_win_get_cursor(winid)
      local row, col = cursor[1] - 1, cursor[2]
      local remaining, typed = accept.remaining(item, bufnr, row, col)
      local chunk = remaining and (unit == 'word' and accept.next_word(remaining) or accept.next_line(remaining))
      if not client or not remaining or chunk == remaining then
        -- Nothing partial about it: accept the whole item (range, acceptance command and all).
        return M.accept_item(item)
      end
      local encoding = client.offset_encoding
      local lsp_item = accept.lsp_item(item, encoding)
      accept.insert(bufnr, winid, row, col, chunk)
      client:notify('textDocument/didPartiallyAcceptCompletion', {
        item = lsp_item,
        acceptedLength = accept.length(item.insert_text:sub(1, typed + #chunk), encoding),
      })
    end,
  })
end

--- Applies a whole item the way Neovim's default accept does, then runs its acceptance command.
function M.accept_item(item)
  local bufnr = api.nvim_get_current_buf()
  local text = item.insert_text
  if type(text) ~= 'string' then
    vim.snippet.expand(text.value)
  elseif item.range then
    local lines = vim.split(text, '\n', { plain = true })
    local s, e = item.range.start, item.range.end_
    api.nvim_buf_set_text(bufnr, s.row, s.col, e.row, e.col, lines)
    api.nvim_win_set_cursor(0, { s.row + #lines, (#lines == 1 and s.col or 0) + #lines[#lines] })
  else
    api.nvim_paste(text, false, 0)
  end
  local client = vim.lsp.get_client_by_id(item.client_id)
  if client and item.command then
    client:exec_cmd(item.command, { bufnr = bufnr })
  end
end

--- Whether ghost text is shown in `bufnr` (Neovim draws the selected suggestion as an extmark in this namespace).
---@param bufnr integer
---@return boolean
function M.suggestion_shown(bufnr)
  local ns = api.nvim_get_namespaces()['nvim.lsp.inline_completion']
  return ns ~= nil and #api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { limit = 1 }) > 0
end

--- Asks for a suggestion now, as an explicit request (`triggerKind` Invoked: the server skips its debounce and its
--- cache and may offer several choices, `invoked_choices`), e.g. after a dismissed or an empty one. Neovim 0.12 has no
--- public function for it: the buffer's inline-completion object is reached through `vim.lsp._capability`
--- (internal); where that is missing, the buffer's own automatic request runs instead. Insert mode only (ghost text
--- is shown and accepted there); returns false elsewhere or when the buffer has no inline completion.
---@param bufnr? integer
---@return boolean
function M.suggest(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if api.nvim_get_mode().mode:sub(1, 1) ~= 'i' then
    return false
  end
  if not M.has_inline_completion() or not vim.lsp.inline_completion.is_enabled({ bufnr = bufnr }) then
    return false
  end
  local ok, capability = pcall(require, 'vim.lsp._capability')
  local kind = ok and type(capability) == 'table' and type(capability.all) == 'table'
    and capability.all.inline_completion
  local completor = type(kind) == 'table' and type(kind.active) == 'table' and kind.active[bufnr]
  if type(completor) == 'table' and type(completor.request) == 'function' then
    completor:request(vim.lsp.protocol.InlineCompletionTriggerKind.Invoked)
    return true
  end
  local group = ('nvim.lsp.inline_completion:%d'):format(bufnr)
  return (pcall(api.nvim_exec_autocmds, 'CursorMovedI', { group = group, buffer = bufnr }))
end

--- Hides the shown suggestion; returns false when none is shown.
function M.dismiss()
  if not M.has_inline_completion() then
    return false
  end
  return vim.lsp.inline_completion.get({ on_accept = function() end })
end

local function set_keymaps(bufnr, keymaps)
  if not keymaps or not M.has_inline_completion() then
    return
  end
  local function map(name, rhs, desc, expr)
    local lhs = keymaps[name]
    if lhs then
      vim.keymap.set('i', lhs, rhs, { buffer = bufnr, expr = expr, desc = keys.DESC .. desc })
    end
  end
  -- With a fallback: the key keeps its usual meaning when no suggestion is shown (its global mapping, if any).
  local function with_fallback(name, action)
    return function()
      if action() then
        return ''
      end
      return keys.fallback('i', keymaps[name])
    end
  end
  -- A next-edit suggestion comes after the ghost text: Tab accepts the ghost text when one is shown, else it jumps to
  -- or applies the next edit (the action runs after the mapping: an expr map may not change the buffer).
  local function next_edit_then(action)
    if next_edit.visible() then
      vim.schedule(action)
      return true
    end
    return false
  end
  map('accept', with_fallback('accept', function()
    return vim.lsp.inline_completion.get() or next_edit_then(next_edit.jump_or_apply)
  end), 'accept the suggestion or the next edit', true)
  map('accept_word', with_fallback('accept_word', function()
    return M.accept_part('word')
  end), 'accept the next word', true)
  map('accept_line', with_fallback('accept_line', function()
    return M.accept_part('line')
  end), 'accept the next line', true)
  map('dismiss', with_fallback('dismiss', function()
    return M.dismiss() or next_edit.dismiss()
  end), 'dismiss the suggestion or the next edit', true)
  -- Cycling acts on a shown suggestion only; with none, the key keeps its usual meaning too (select() did nothing
  -- then, and the key was lost).
  local function cycle(count)
    return function()
      if not M.suggestion_shown(api.nvim_get_current_buf()) then
        return false
      end
      vim.schedule(function()
        vim.lsp.inline_completion.select({ count = count })
      end)
      return true
    end
  end
  map('suggest', function()
    M.suggest(bufnr)
  end, 'ask for a suggestion now', false)
  map('next', with_fallback('next', cycle(1)), 'next suggestion', true)
  map('prev', with_fallback('prev', cycle(-1)), 'previous suggestion', true)
end

--- Maps the keys of `bufnr` from `keymaps`, the plugin's previous ones removed (setup() may be called again).
local function apply_keymaps(bufnr, keymaps)
  keys.clear(bufnr)
  set_keymaps(bufnr, keymaps)
  next_edit.set_keymaps(bufnr, keymaps)
end

--- Buffers an infill client has been attached to: `:Infill restart` serves them again even after the server died
--- (Neovim then detaches it from them, and re-attaches only when a buffer's filetype is set again).
---@type table<integer, true>
local served = {}

--- Neovim 0.12 builds before neovim/neovim#35965 (30 Sep 2025) create a buffer's inline-completion autocommands
--- (InsertEnter, CursorMovedI, TextChangedP, InsertLeave) for all buffers: typing in one file then asks for every other
--- attached file at this file's cursor, and drawing such an answer fails (Index out of bounds). Scopes them to `bufnr`;
--- nothing to do on builds with the fix.
local function scope_inline_completion(bufnr)
  local ok, autocmds = pcall(api.nvim_get_autocmds, { group = ('nvim.lsp.inline_completion:%d'):format(bufnr) })
  if not ok then
    return
  end
  for _, au in ipairs(autocmds) do
    if not au.buflocal and type(au.callback) == 'function' then
      api.nvim_del_autocmd(au.id)
      api.nvim_create_autocmd(au.event, { group = au.group, buffer = bufnr, callback = au.callback })
    end
  end
end

--- Whether the mode is one where Neovim asks for suggestions by itself (insert or replace mode).
local function inserting()
  local mode = api.nvim_get_mode().mode
  return mode:sub(1, 1) == 'i' or mode:sub(1, 1) == 'R'
end

--- Neovim 0.12's inline completion does not stop its debounce timer when insert mode is left (InsertLeave aborts
--- only the requests already sent): text typed just before <Esc> is asked for in normal mode, and the answer is drawn
--- there as ghost text that nothing removes until insert mode is entered again, where it is drawn at its old place
--- ("Invalid 'col': out of range" in the InsertEnter autocommand once that line got shorter). An automatic request
--- made outside insert mode, or answered after it was left, is answered with nothing instead.
local function guard_inline_completion(client)
  if client._infill_inline_guard then
    return
  end
  client._infill_inline_guard = true
  local request = client.request
  client.request = function(self, method, params, handler, bufnr, ...)
    local automatic = method == 'textDocument/inlineCompletion' and type(params) == 'table'
      and type(params.context) == 'table' and params.context.triggerKind == 2
    if not automatic or not handler then
      return request(self, method, params, handler, bufnr, ...)
    end
    local ctx = { method = method, client_id = self.id, bufnr = bufnr, params = params }
    if not inserting() then
      vim.schedule(function()
        handler(nil, { items = {} }, ctx)
      end)
      return true, nil
    end
    return request(self, method, params, function(err, result, context, ...)
      if not err and not inserting() then
        result = { items = {} }
      end
      return handler(err, result, context, ...)
    end, bufnr, ...)
  end
end

local function on_attach(client, bufnr)
  served[bufnr] = true
  guard_inline_completion(client)
  local opts = M.options or config.resolve()
  if opts.inline_completion and M.has_inline_completion() then
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
  end
  scope_inline_completion(bufnr)
  next_edit.attach(bufnr)
  apply_keymaps(bufnr, opts.keymaps)
  api.nvim_exec_autocmds('User', { pattern = 'InfillAttach', modeline = false,
    data = { client_id = client.id, bufnr = bufnr } })
end

-- The request API (Neovim 0.11, which has no inline completion UI) ------------------------------------------------

--- Requests inline completions at the cursor (an explicit, `Invoked` request) and calls `callback(err, items)`
--- with the server's items (`insertText`, `range`, `command`).
---@param callback fun(err: lsp.ResponseError?, items: lsp.InlineCompletionItem[]?, client: vim.lsp.Client?)
---@param bufnr? integer
function M.request(callback, bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local client = M.clients({ bufnr = bufnr })[1]
  if not client then
    callback({ code = -32803, message = 'infill: no infill server attached to buffer ' .. bufnr }, nil, nil)
    return
  end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.context = { triggerKind = 1 }
  client:request(INLINE, params, function(err, result)
    local items = result and (result.items or result) or nil
    callback(err, items, client)
  end, bufnr)
end

local function cursor_position(winid, client)
  return vim.lsp.util.make_position_params(winid, client.offset_encoding).position
end

--- Inserts the first suggestion at the cursor (for Neovim versions without the ghost-text UI).
function M.complete()
  local bufnr = api.nvim_get_current_buf()
  local winid = api.nvim_get_current_win()
  M.request(function(err, items, client)
    if err or not items or not items[1] or not client then
      vim.notify(err and ('infill: ' .. err.message) or 'infill: no suggestion', vim.log.levels.INFO)
      return
    end
    local item = items[1]
    local text = type(item.insertText) == 'string' and item.insertText or item.insertText.value
    local here = cursor_position(winid, client)
    local range = item.range or { start = here, ['end'] = here }
    vim.lsp.util.apply_text_edits({ { range = range, newText = text } }, bufnr, client.offset_encoding)
    if item.command then
      client:exec_cmd(item.command, { bufnr = bufnr })
    end
  end, bufnr)
end

-- Commands --------------------------------------------------------------------------------------------------------

--- `:Infill status`
function M.status()
  local clients = M.clients()
  if #clients == 0 then
    local stopped = false
    for bufnr in pairs(served) do
      stopped = stopped or api.nvim_buf_is_loaded(bufnr)
    end
    vim.notify(stopped and 'Infill: no server running: it stopped (:Infill restart starts it again)'
      or 'Infill: no server running (open a file to start it)', vim.log.levels.WARN)
    return
  end
  local lines = {}
  for _, client in ipairs(clients) do
    local s = status.by_client[client.id]
    local text = s and (s.kind .. (s.message ~= '' and (': ' .. s.message) or '')) or 'starting (no status yet)'
    if s and s.detail then
      text = text .. ' (' .. s.detail .. ')'
    end
    local bufs = vim.tbl_keys(client.attached_buffers)
    table.insert(lines, ('client %d [%s], %d buffer(s): %s'):format(client.id, table.concat(client.config.cmd, ' '),
      #bufs, text))
  end
  vim.notify('Infill: ' .. table.concat(lines, '\n'), vim.log.levels.INFO)
end

--- Starts the server for `bufnr` (used by restart).
function M.start(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local cfg = vim.lsp.config[NAME] or M.lsp_config()
  -- Looked up again: the server may have been installed since setup().
  local cmd, tried = server.resolve((M.options or config.defaults).cmd)
  if not cmd then
    server.notify_missing(tried, true)
    return nil
  end
  if vim.lsp.is_enabled and not vim.lsp.is_enabled(NAME) then
    -- setup() found no server; now there is one: buffers opened from now on get it too.
    vim.lsp.config(NAME, { cmd = cmd })
    vim.lsp.enable(NAME)
  end
  local root_dir = vim.fs.root(bufnr, (M.options or config.defaults).root_markers)
  return vim.lsp.start(vim.tbl_extend('force', vim.deepcopy(cfg), { cmd = cmd, root_dir = root_dir }),
    { bufnr = bufnr, reuse_client = reuse_client })
end

--- `:Infill restart`: stops the servers and starts one again for every buffer they served (also when they died).
function M.restart()
  local buffers = {}
  local seen = {}
  local function add(bufnr)
    if not seen[bufnr] then
      seen[bufnr] = true
      buffers[#buffers + 1] = bufnr
    end
  end
  local clients = M.clients()
  for _, client in ipairs(clients) do
    for bufnr in pairs(client.attached_buffers) do
      add(bufnr)
    end
    client:stop()
  end
  for bufnr in pairs(served) do
    if api.nvim_buf_is_loaded(bufnr) then
      add(bufnr)
    else
      served[bufnr] = nil
    end
  end
  vim.wait(5000, function()
    for _, client in ipairs(clients) do
      if not client:is_stopped() then
        return false
      end
    end
    return true
  end, 50)
  for _, client in ipairs(clients) do
    if not client:is_stopped() then
      client:stop(true)
    end
  end
  if #buffers == 0 and vim.bo.buftype == '' then
    buffers = { api.nvim_get_current_buf() }
  end
  for _, bufnr in ipairs(buffers) do
    if api.nvim_buf_is_valid(bufnr) then
      M.start(bufnr)
    end
  end
end

--- The server's log file: `log_file` from the settings, else `$XDG_STATE_HOME/infill/infill.log`.
function M.log_path()
  local settings = (M.options or config.defaults).settings
  local configured = settings.log_file or settings.logFile
  if configured then
    return vim.fs.normalize(configured)
  end
  local state = vim.env.XDG_STATE_HOME
  if not state or state == '' then
    state = vim.fs.joinpath(vim.env.HOME or vim.fn.expand('~'), '.local', 'state')
  end
  return vim.fs.joinpath(state, 'infill', 'infill.log')
end

--- `:Infill log`: opens the server's log file, or Neovim's LSP log when the server has written none yet.
function M.log()
  local path = M.log_path()
  if vim.uv.fs_stat(path) == nil then
    vim.notify(('Infill: no server log at %s yet; opening the LSP client log'):format(path), vim.log.levels.INFO)
    path = vim.lsp.get_log_path()
  end
  vim.cmd.split(vim.fn.fnameescape(path))
end

local SUBCOMMANDS = {
  status = M.status,
  restart = M.restart,
  log = M.log,
  enable = function()
    M.update_settings({ enabled = true })
  end,
  disable = function()
    M.update_settings({ enabled = false })
  end,
  toggle = function()
    M.update_settings({ enabled = (M.options or config.defaults).settings.enabled == false })
  end,
}

function M.command(args)
  local name = args.fargs[1] or 'status'
  local run = SUBCOMMANDS[name]
  if not run then
    vim.notify(('Infill: unknown subcommand %q (valid: %s)'):format(name,
      table.concat(vim.tbl_keys(SUBCOMMANDS), ', ')), vim.log.levels.ERROR)
    return
  end
  run()
end

function M.complete_subcommand(arg_lead)
  local names = vim.tbl_keys(SUBCOMMANDS)
  table.sort(names)
  return vim.tbl_filter(function(n)
    return n:find(arg_lead, 1, true) == 1
  end, names)
end

M.statusline = status.statusline
M.next_edit = next_edit

-- Setup -----------------------------------------------------------------------------------------------------------

local attach_group

--- Configures and enables the server. Calling it again replaces the options.
---@param opts? table see `infill.Options` in lua/infill/config.lua
function M.setup(opts)
  M.options = config.resolve(opts)
  status.notify_errors = M.options.notify_errors
  attach_group = api.nvim_create_augroup('infill.attach', { clear = true })
  api.nvim_create_autocmd('LspAttach', {
    group = attach_group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == NAME then
        on_attach(client, ev.buf)
      end
    end,
  })
  api.nvim_create_autocmd('LspDetach', {
    group = attach_group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == NAME then
        next_edit.detach(ev.buf)
      end
    end,
  })
  if M.options.send_yanks then
    api.nvim_create_autocmd('TextYankPost', {
      group = attach_group,
      callback = function(ev)
        local clients = M.clients({ bufnr = ev.buf })
        if #clients > 0 then
          yank.send(clients, ev.buf, vim.v.event)
        end
      end,
    })
  end
  -- Called again: the buffers already served get the new keys too.
  for _, client in ipairs(M.clients()) do
    for bufnr in pairs(client.attached_buffers) do
      apply_keymaps(bufnr, M.options.keymaps)
    end
  end
  vim.lsp.config(NAME, M.lsp_config(M.options))
  -- Without a server every buffer would get Neovim's own spawn error; lsp_config() has said where it looked.
  -- `:Infill restart` looks again (after an install).
  if server.resolve(M.options.cmd) then
    vim.lsp.enable(NAME)
  end
end

return M
