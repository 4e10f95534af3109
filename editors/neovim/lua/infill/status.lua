--- The server's last `infill/didChangeStatus` per client, for `:Infill status`, the health check and statuslines.
local M = {}

---@class infill.Status
---@field kind 'starting'|'ready'|'busy'|'error'|'disabled'
---@field message string
---@field detail? string
---@field percent? integer

---@type table<integer, infill.Status>
M.by_client = {}

--- Messages already shown with vim.notify, so a repeating error does not flood the screen.
local notified = {}

M.notify_errors = true

--- `lsp.Handler` for the `infill/didChangeStatus` notification.
function M.handler(_, params, ctx)
  if type(params) ~= 'table' then
    return
  end
  local status = {
    kind = params.kind,
    message = type(params.message) == 'string' and params.message or '',
    detail = type(params.detail) == 'string' and params.detail or nil,
    percent = type(params.percent) == 'number' and params.percent or nil,
  }
  M.by_client[ctx.client_id] = status
  if status.kind == 'error' and M.notify_errors and not notified[status.message] then
    notified[status.message] = true
    vim.schedule(function()
      vim.notify(status.message .. (status.detail and ('\n' .. status.detail) or ''), vim.log.levels.ERROR,
        { title = 'Infill' })
    end)
  end
  vim.schedule(function()
    vim.api.nvim_exec_autocmds('User', { pattern = 'InfillStatus', modeline = false, data = status })
  end)
end

function M.forget(client_id)
  M.by_client[client_id] = nil
end

--- The status of the first running infill client, or nil.
---@return infill.Status?
function M.current()
  for _, client in ipairs(vim.lsp.get_clients({ name = 'infill' })) do
    local status = M.by_client[client.id]
    if status then
      return status
    end
  end
end

--- A short text for a statusline: `Infill: ready`, `Infill: starting 40%`, or '' when no server runs.
function M.statusline()
  local status = M.current()
  if not status then
    return #vim.lsp.get_clients({ name = 'infill' }) > 0 and 'Infill: starting' or ''
  end
  local text = 'Infill: ' .. status.kind
  if status.kind == 'starting' and status.percent then
    text = text .. (' %d%%'):format(status.percent)
  end
  return text
end

return M
