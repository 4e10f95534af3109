--- The plugin's options: defaults, validation, merging.
---
--- `settings` is the server's configuration (the `infill` section), passed through untouched: the server validates
--- it and reports a bad key by name (`window/showMessage`), so the plugin does not duplicate that schema. Keys may be
--- snake_case (as in Lua and the server's TOML file) or camelCase.
local M = {}

---@class infill.Keymaps
---@field accept string|false        Accept the whole suggestion (falls back to the key's normal meaning).
---@field accept_word string|false   Accept the next word of the suggestion.
---@field accept_line string|false   Accept the rest of the suggestion's current line.
---@field next string|false          Show the next choice.
---@field prev string|false          Show the previous choice.
---@field dismiss string|false       Hide the suggestion (or the next edit when no suggestion is shown).
---@field suggest string|false       Ask for a suggestion now (an explicit request: no debounce, no cache, choices).
---@field next_edit string|false     Normal mode: jump to the next edit, then apply it (accept does it in insert mode).
---@field next_edit_dismiss string|false Normal mode: hide the next edit.

---@class infill.Options
---@field cmd string[]               The server command; a plain `infill` is looked up (lua/infill/server.lua).
---@field cmd_env? table<string,string> Extra environment variables for the server (e.g. the API-key variable).
---@field filetypes? string[]        Filetypes to attach to; nil means every buffer with a file type.
---@field root_markers string[]      Files that mark the workspace root (single-file mode when none is found).
---@field settings table             The server's settings (`completion = {...}`, `max_tokens`, `multiline`, ...).
---@field inline_completion boolean  Turn on `vim.lsp.inline_completion` (Neovim 0.12+) for attached buffers.
---@field keymaps infill.Keymaps|false Insert- and normal-mode keymaps; false for none.
---@field notify_errors boolean      Show `error` statuses with vim.notify (once per message).
---@field send_yanks boolean         Send yanked text to the server (`infill/didYank`) as context for completions.

---@type infill.Options
M.defaults = {
  cmd = { 'infill', 'serve', '--stdio' },
  cmd_env = nil,
  filetypes = nil,
  root_markers = { '.git' },
  settings = {},
  inline_completion = true,
  keymaps = {
    accept = '<Tab>',
    accept_word = '<M-Right>',
    accept_line = '<M-C-Right>',
    next = '<M-]>',
    prev = '<M-[>',
    dismiss = '<C-]>',
    suggest = '<M-\\>',
    next_edit = '<Tab>',
    next_edit_dismiss = '<Esc>',
  },
  notify_errors = true,
  send_yanks = true,
}

--- Raises an error naming the option when `value` is not of type `expected` (works the same on every Neovim).
local function check(name, value, expected, optional)
  if value == nil and optional then
    return
  end
  if type(value) ~= expected then
    error(('infill: option %s must be a %s, got %s'):format(name, expected, vim.inspect(value)), 0)
  end
end

--- Raises an error naming the option when `list` (a table) holds anything but non-empty strings (or, with `nested`,
--- lists of them: root markers of equal priority).
local function check_strings(name, list, nested)
  for i, item in ipairs(list) do
    if nested and type(item) == 'table' then
      check_strings(('%s[%d]'):format(name, i), item)
    elseif type(item) ~= 'string' or item == '' then
      error(('infill: option %s[%d] must be a non-empty string, got %s'):format(name, i, vim.inspect(item)), 0)
    end
  end
end

local function validate_keymaps(keymaps)
  if keymaps == false then
    return
  end
  check('keymaps', keymaps, 'table')
  for name, lhs in pairs(keymaps) do
    if M.defaults.keymaps[name] == nil then
      local valid = vim.tbl_keys(M.defaults.keymaps)
      table.sort(valid)
      error(('infill: unknown keymap %q (valid: %s)'):format(name, table.concat(valid, ', ')), 0)
    end
    if lhs ~= false and (type(lhs) ~= 'string' or lhs == '') then
      error(('infill: option keymaps.%s must be a key string or false, got %s'):format(name, vim.inspect(lhs)), 0)
    end
  end
end

--- Merges user options over the defaults; raises an error naming the bad option.
---@param opts? table
---@return infill.Options
function M.resolve(opts)
  opts = opts or {}
  check('opts', opts, 'table')
  for key in pairs(opts) do
    if M.defaults[key] == nil and key ~= 'cmd_env' and key ~= 'filetypes' then
      error(('infill: unknown option %q (see docs/editors.md)'):format(key), 0)
    end
  end
  local resolved = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  if opts.keymaps == false then
    resolved.keymaps = false
  end
  -- Lists replace the defaults rather than merging index by index.
  for _, key in ipairs({ 'cmd', 'root_markers', 'filetypes' }) do
    if opts[key] ~= nil then
      resolved[key] = opts[key]
    end
  end
  check('cmd', resolved.cmd, 'table')
  if #resolved.cmd == 0 then
    error('infill: option cmd must not be empty', 0)
  end
  check_strings('cmd', resolved.cmd)
  check('cmd_env', resolved.cmd_env, 'table', true)
  check('filetypes', resolved.filetypes, 'table', true)
  check_strings('filetypes', resolved.filetypes or {})
  check('root_markers', resolved.root_markers, 'table')
  check_strings('root_markers', resolved.root_markers, true)
  check('settings', resolved.settings, 'table')
  check('inline_completion', resolved.inline_completion, 'boolean')
  check('notify_errors', resolved.notify_errors, 'boolean')
  check('send_yanks', resolved.send_yanks, 'boolean')
  validate_keymaps(resolved.keymaps)
  return resolved
end

return M
