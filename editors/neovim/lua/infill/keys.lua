--- The usual meaning of a key the plugin maps buffer-locally (Tab, Esc, ...): when there is nothing to accept, jump to
--- or dismiss, the key does what it does without the plugin. That is the key's global mapping when it has one
--- (Neovim's own insert-mode <Tab>, which jumps to the next placeholder of an active snippet; a user's `<Esc>` that
--- clears the search highlight), else the key itself.
local M = {}

local api = vim.api

--- The global mapping of `lhs` in `mode` (as nvim_get_keymap gives it), or nil.
function M.global_mapping(mode, lhs)
  local raw = vim.keycode(lhs)
  for _, mapping in ipairs(api.nvim_get_keymap(mode)) do
    if mapping.lhsraw == raw or mapping.lhsrawalt == raw then
      return mapping
    end
  end
  return nil
end

--- What an ALT chord without a mapping does when typed in insert mode (|i_META|): <Esc>, then the key (`<M-]>` →
--- `<Esc>]`, `<M-Right>` → `<Esc><Right>`). Nil for keys with no ALT or with other modifiers too (`<M-C-Right>`).
---@param lhs string
---@return string?
function M.alt_as_esc(lhs)
  local key = lhs:match('^<[MmAa]%-(.+)>$')
  if not key or key:match('^[CcSsDdTtMmAa]%-') then
    return nil
  end
  return '<Esc>' .. (vim.fn.strchars(key) == 1 and key or ('<' .. key .. '>'))
end

--- The keys an expr mapping of `lhs` in `mode` returns to give the key its usual meaning.
---@param mode string
---@param lhs string
---@return string
function M.fallback(mode, lhs)
  local mapping = M.global_mapping(mode, lhs)
  if not mapping then
    local esc = mode == 'i' and M.alt_as_esc(lhs)
    if esc then
      -- Returned from this mapping the chord would not act like <Esc> (only a typed one does): its ALT was dropped
      -- and `<M-]>` inserted `]`. Fed as typed keys instead, mappings applying as they would to typed keys.
      api.nvim_feedkeys(vim.keycode(esc), 'im', false)
      return ''
    end
    return lhs
  end
  local keys
  if mapping.callback and mapping.expr ~= 1 then
    -- Not from here: an expr mapping is evaluated under textlock, where a callback that switches buffers or edits
    -- (`<Tab>` mapped to a function running :bnext) fails with E565. Right after this key instead.
    vim.schedule(mapping.callback)
    return ''
  elseif mapping.callback then
    local result = mapping.callback()
    keys = type(result) == 'string' and result or ''
  elseif mapping.expr == 1 then
    local ok, result = pcall(vim.fn.eval, mapping.rhs)
    if not ok then
      return lhs
    end
    keys = tostring(result)
  else
    keys = mapping.rhs or ''
  end
  if mapping.noremap ~= 1 then
    -- A recursive mapping's keys are mapped again (a <Plug> map); the plugin's own mapping is not recursive.
    api.nvim_feedkeys(vim.keycode(keys), 'im', false)
    return ''
  end
  return keys
end

--- The description every mapping of the plugin starts with.
M.DESC = 'Infill: '

--- Removes the plugin's buffer-local mappings of `bufnr` (insert and normal mode).
function M.clear(bufnr)
  for _, mode in ipairs({ 'i', 'n' }) do
    for _, mapping in ipairs(api.nvim_buf_get_keymap(bufnr, mode)) do
      if type(mapping.desc) == 'string' and mapping.desc:sub(1, #M.DESC) == M.DESC then
        api.nvim_buf_del_keymap(bufnr, mode, mapping.lhs)
      end
    end
  end
end

return M
