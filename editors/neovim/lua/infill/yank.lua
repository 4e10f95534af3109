--- Yanked text as workspace context: on `TextYankPost` the yanked lines go to the server as the `infill/didYank`
--- notification (`{textDocument = {uri}, text, range}`), so code the user just copied can inform the next
--- completion. Only for buffers the infill client is attached to; the server ignores excluded files.
local M = {}

local METHOD = 'infill/didYank'
--- Yanks longer than this are not sent (a whole-file yank is not a hint about the next line).
M.max_chars = 4000

--- The notification's params for a yank in `bufnr`, or nil when there is nothing worth sending.
---@param bufnr integer
---@param event table `vim.v.event` of TextYankPost
---@return table?
function M.params(bufnr, event)
  if event.operator ~= 'y' or type(event.regcontents) ~= 'table' then
    return nil
  end
  local text = table.concat(event.regcontents, '\n')
  if text:match('^%s*$') or #text > M.max_chars then
    return nil
  end
  local start = vim.api.nvim_buf_get_mark(bufnr, '[')[1] - 1
  local finish = vim.api.nvim_buf_get_mark(bufnr, ']')[1] - 1
  return {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    text = text,
    range = { start = { line = math.max(start, 0), character = 0 },
      ['end'] = { line = math.max(finish, start, 0), character = 0 } },
  }
end

--- Sends a yank to every infill client attached to the buffer.
---@param clients vim.lsp.Client[]
function M.send(clients, bufnr, event)
  local params = M.params(bufnr, event)
  if not params then
    return
  end
  for _, client in ipairs(clients) do
    client:notify(METHOD, params)
  end
end

return M
