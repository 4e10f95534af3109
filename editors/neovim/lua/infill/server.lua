--- Finding the `infill` executable, so the plugin works without configuration after `bash scripts/setup.sh`.
---
--- Lookup order (docs/editors.md): the `cmd` option when its first word is not the plain `infill`; else `infill` on
--- PATH; else `.venv/bin/infill` of the Infill checkout this plugin sits in (<checkout>/editors/neovim), which
--- scripts/setup.sh creates.
local M = {}

--- The executable name of the default `cmd`; only this name gets the PATH → checkout lookup.
M.DEFAULT = 'infill'

--- The checkout this plugin belongs to, found from this file's own path
--- (<checkout>/editors/neovim/lua/infill/server.lua); nil when the plugin was copied out of a checkout.
---@return string?
function M.checkout_root()
  local source = debug.getinfo(1, 'S').source
  if source:sub(1, 1) ~= '@' then
    return nil
  end
  local root = vim.fn.fnamemodify(vim.fn.fnamemodify(source:sub(2), ':p'), ':h:h:h:h:h')
  if vim.uv.fs_stat(vim.fs.joinpath(root, 'pyproject.toml')) and vim.uv.fs_stat(vim.fs.joinpath(root, 'lsp_server')) then
    return vim.fs.normalize(root)
  end
  return nil
end

--- The `infill` a checkout's virtual environment holds.
---@param root string
function M.venv_server(root)
  if vim.fn.has('win32') == 1 then
    return vim.fs.joinpath(root, '.venv', 'Scripts', 'infill.exe')
  end
  return vim.fs.joinpath(root, '.venv', 'bin', 'infill')
end

--- Resolves the server command. Returns the command to run (a plain `infill` replaced by the full path found; a
--- configured command unchanged) or nil when nothing was found, and the places looked at, in order.
---@param cmd string[]
---@param root? string|false the checkout to look in (default: this plugin's own); false for none
---@return string[]? cmd
---@return string[] tried
function M.resolve(cmd, root)
  local exe = cmd[1]
  if exe ~= M.DEFAULT then
    return vim.fn.exepath(exe) ~= '' and cmd or nil, { ('cmd = %s'):format(exe) }
  end
  local tried = { '`infill` on PATH' }
  local found = vim.fn.exepath(exe)
  if found == '' then
    if root == nil then
      root = M.checkout_root()
    end
    if root then
      local candidate = M.venv_server(root)
      tried[#tried + 1] = candidate
      if vim.fn.executable(candidate) == 1 then
        found = candidate
      end
    end
  end
  if found == '' then
    return nil, tried
  end
  return vim.list_extend({ found }, cmd, 2), tried
end

--- What to tell the user when nothing was found.
---@param tried string[]
function M.missing_message(tried)
  return ('infill: the language server was not found (looked at: %s). Run `bash scripts/setup.sh` in the Infill '
    .. 'checkout (it installs into the checkout\'s .venv), or `pipx install "infill-lsp[local]"`, or set '
    .. "cmd = { '/full/path/to/infill', 'serve', '--stdio' } in require('infill').setup()"):format(
      table.concat(tried, ', '))
end

local told = {}

--- Shows the message, once per session for the same places unless `again` (lsp_config() runs more than once).
---@param tried string[]
---@param again? boolean
function M.notify_missing(tried, again)
  local message = M.missing_message(tried)
  if again or not told[message] then
    told[message] = true
    vim.notify(message, vim.log.levels.ERROR)
  end
end

return M
