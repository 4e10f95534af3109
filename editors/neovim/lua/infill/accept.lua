--- Accepting a suggestion, whole or in part.
---
--- Neovim's `vim.lsp.inline_completion.get()` accepts a whole item; accepting the next word or line is done here by
--- handing it an `on_accept` that inserts only that part at the cursor. The text functions are pure so they can be
--- tested without a server.
local M = {}

--- The next word of `text`: leading white space (line breaks included), then a run of word characters or a run of
--- other non-blank characters. The whole text when it has no word.
---@param text string
---@return string
function M.next_word(text)
  return text:match('^%s*[%w_]+') or text:match('^%s*[^%w_%s]+') or text
end

--- The rest of the current line of `text`; when `text` starts at a line break, that break and the next line.
---@param text string
---@return string
function M.next_line(text)
  if text:sub(1, 1) == '\n' then
    return '\n' .. text:sub(2):match('^[^\n]*')
  end
  return text:match('^[^\n]*')
end

--- The part of the item's text still to insert at the cursor, and how many bytes of it are already in the buffer
--- (an item whose range starts before the cursor repeats what was typed). nil for snippets.
---@param item vim.lsp.inline_completion.Item
---@param bufnr integer
---@param row integer 0-based cursor row
---@param col integer 0-based cursor byte column
---@return string?, integer
function M.remaining(item, bufnr, row, col)
  local text = item.insert_text
  if type(text) ~= 'string' then
    return nil, 0
  end
  local start = item.range and item.range.start
  if start and (start.row < row or (start.row == row and start.col < col)) then
    local typed = table.concat(vim.api.nvim_buf_get_text(bufnr, start.row, start.col, row, col, {}), '\n')
    if text:sub(1, #typed) == typed then
      return text:sub(#typed + 1), #typed
    end
  end
  return text, 0
end

--- Inserts `chunk` at (row, col) and puts the cursor after it.
function M.insert(bufnr, winid, row, col, chunk)
  local lines = vim.split(chunk, '\n', { plain = true })
  vim.api.nvim_buf_set_text(bufnr, row, col, row, col, lines)
  local last = #lines
  vim.api.nvim_win_set_cursor(winid, { row + last, (last == 1 and col or 0) + #lines[last] })
end

--- Length of `text` in the units of `encoding` ('utf-8', 'utf-16' or 'utf-32').
function M.length(text, encoding)
  if encoding == 'utf-8' then
    return #text
  end
  return vim.str_utfindex(text, encoding)
end

--- The LSP item for an accepted `vim.lsp.inline_completion.Item` (as the server sent it).
function M.lsp_item(item, encoding)
  local range = item.range
  return {
    insertText = item.insert_text,
    range = range and range.to_lsp and range:to_lsp(encoding) or nil,
    command = item.command,
  }
end

return M
