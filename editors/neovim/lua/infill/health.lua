--- `:checkhealth infill`: the Neovim features used, the server executable and its version, the model settings and
--- the running server's status.
local M = {}

local health = vim.health

local function check_neovim(infill)
  health.start('Neovim')
  local v = vim.version()
  local version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim ' .. version .. ' has vim.lsp.config / vim.lsp.enable')
  else
    health.error('Neovim ' .. version .. ' is too old', { 'Infill needs Neovim 0.11 or newer' })
  end
  if infill.has_inline_completion() then
    health.ok('vim.lsp.inline_completion is available: suggestions show as ghost text')
  else
    health.warn('This Neovim has no vim.lsp.inline_completion (added in 0.12): no ghost text', {
      'Upgrade to Neovim 0.12+, or use the request API:',
      "require('infill').complete() inserts the first suggestion at the cursor;",
      "require('infill').request(function(err, items) ... end) returns the items.",
    })
  end
end

--- The command that prints the version: the server command up to `serve`, then --version.
local function version_command(cmd)
  local out = {}
  for _, arg in ipairs(cmd) do
    if arg == 'serve' then
      break
    end
    out[#out + 1] = arg
  end
  out[#out + 1] = '--version'
  return out
end

local function check_server_command(opts)
  health.start('Server executable')
  local server = require('infill.server')
  local cmd, tried = server.resolve(opts.cmd)
  if not cmd then
    health.error('the language server was not found (looked at: ' .. table.concat(tried, ', ') .. ')', {
      'Run `bash scripts/setup.sh` in the Infill checkout (it installs into the checkout\'s .venv)',
      'or install it with pipx install "infill-lsp[local]"',
      "or set cmd in require('infill').setup({ cmd = { '/full/path/to/infill', 'serve', '--stdio' } })",
    })
    return
  end
  health.ok(('`%s` is %s'):format(opts.cmd[1], vim.fn.exepath(cmd[1])))
  local vcmd = version_command(cmd)
  local ok, result = pcall(function()
    return vim.system(vcmd, { text = true, env = opts.cmd_env }):wait(15000)
  end)
  if not ok then
    health.error(('`%s` could not run: %s'):format(table.concat(vcmd, ' '), result))
  elseif result.code ~= 0 then
    health.error(('`%s` exited with %s'):format(table.concat(vcmd, ' '), tostring(result.code)),
      { vim.trim((result.stderr or '') .. (result.stdout or '')) })
  else
    health.ok('version: ' .. vim.trim(result.stdout ~= '' and result.stdout or result.stderr))
  end
end

local function get(tbl, snake, camel)
  if type(tbl) ~= 'table' then
    return nil
  end
  local value = tbl[snake]
  if value == nil then
    value = tbl[camel]
  end
  return value
end

local function check_model(opts)
  health.start('Model')
  local completion = opts.settings.completion or {}
  local kind = completion.kind or 'local'
  local model = completion.model
  if kind == 'local' then
    if model == nil then
      health.ok('local backend with the built-in default model (the server reports if it cannot find it)')
    elseif model:match('%.gguf$') or model:sub(1, 1) == '/' or model:sub(1, 1) == '~' or model:sub(1, 1) == '.' then
      local path = vim.fs.normalize(model)
      if vim.uv.fs_stat(path) then
        health.ok('local model file ' .. path)
      else
        health.error('the model file does not exist: ' .. path, { 'Fix settings.completion.model' })
      end
    else
      if get(opts.settings, 'allow_download', 'allowDownload') then
        health.ok('local model ' .. model .. ' (a Hugging Face id or model directory; downloaded on first use)')
      else
        -- the server never downloads behind the user's back: an id not in the cache fails to start
        health.ok('local model ' .. model .. ' (a Hugging Face id or model directory; an id must be downloaded '
          .. 'first with `infill models download ' .. model .. '`, or set allow_download = true)')
      end
    end
    local binary = get(completion['local'], 'binary', 'binary')
    if binary then
      if vim.fn.executable(vim.fs.normalize(binary)) == 1 then
        health.ok('llama-server: ' .. binary)
      else
        health.error('llama-server is not executable: ' .. binary, { 'Fix settings.completion.local.binary' })
      end
    end
  else
    local endpoint = get(completion, 'api_endpoint', 'apiEndpoint')
    health.ok(('backend %s, model %s, endpoint %s'):format(kind, tostring(model or '(default)'),
      tostring(endpoint or '(default)')))
    local key_env = get(completion, 'api_key_env', 'apiKeyEnv')
    if key_env then
      local given = opts.cmd_env and opts.cmd_env[key_env]
      if given and given ~= '' then
        health.ok(('the API key variable %s is set in cmd_env'):format(key_env))
      elseif vim.env[key_env] and vim.env[key_env] ~= '' then
        health.ok(('the API key variable %s is set'):format(key_env))
      else
        health.warn(('the API key variable %s is not set in this environment'):format(key_env))
      end
    end
  end
end

local function check_status(infill)
  health.start('Server status')
  local status = require('infill.status')
  local clients = infill.clients()
  if #clients == 0 then
    health.info('no infill server is running (it starts when a file is opened)')
    return
  end
  for _, client in ipairs(clients) do
    local s = status.by_client[client.id]
    local label = ('client %d'):format(client.id)
    if not s then
      health.info(label .. ': started, no status reported yet')
    elseif s.kind == 'ready' or s.kind == 'busy' then
      health.ok(('%s: %s (%s)'):format(label, s.kind, s.message))
    elseif s.kind == 'starting' then
      health.info(('%s: starting (%s)'):format(label, s.message))
    elseif s.kind == 'disabled' then
      health.warn(('%s: disabled (%s)'):format(label, s.message), { ':Infill enable turns completion back on' })
    else
      health.error(('%s: %s'):format(label, s.message), { s.detail or ':Infill log shows the server log' })
    end
    local ic = infill.has_inline_completion() and next(client.attached_buffers)
      and vim.lsp.inline_completion.is_enabled({ bufnr = next(client.attached_buffers) })
    if infill.has_inline_completion() and next(client.attached_buffers) then
      if ic then
        health.ok(label .. ': ghost text is on in its buffers')
      else
        health.warn(label .. ': ghost text is off', { 'vim.lsp.inline_completion.enable() turns it on' })
      end
    end
  end
end

local function check_next_edit(infill, opts)
  health.start('Next-edit suggestions')
  local next_edit = require('infill.next_edit')
  local nes = next_edit.settings(opts.settings)
  if not nes.enabled then
    health.info('off (settings.next_edit.enabled = false, or settings.enabled = false)')
  else
    local off = {}
    for language, on in pairs(nes.languages) do
      if on == false then
        off[#off + 1] = language
      end
    end
    table.sort(off)
    health.ok(('on, asked %d ms after the last change%s'):format(nes.debounce_ms,
      #off > 0 and (', except for ' .. table.concat(off, ', ')) or ''))
  end
  local keymaps = opts.keymaps
  -- the insert-mode keys are mapped only where Neovim has inline completion (0.12); 0.11 gets the normal-mode ones
  local insert_key = infill.has_inline_completion() and keymaps and keymaps.accept or nil
  if keymaps and (keymaps.next_edit or insert_key) then
    health.ok(('keys: %s (normal mode) / %s (insert mode) jump to the edit, then apply it; %s dismisses it')
      :format(tostring(keymaps.next_edit or 'none'), tostring(insert_key or 'none'),
        tostring(keymaps.next_edit_dismiss or keymaps.dismiss or 'none')))
  else
    health.info('no keys mapped: use :InfillNextEdit and :InfillNextEditDismiss')
  end
  for _, client in ipairs(infill.clients()) do
    local advertised = next_edit.advertised(client)
    if advertised then
      health.ok(('client %d offers next edits (%s)'):format(client.id, advertised.method))
    elseif client.initialized then
      health.warn(('client %d: this server does not offer next-edit suggestions'):format(client.id),
        { 'Update the Infill server (capabilities.experimental.infill.nextEdit is missing)' })
    end
  end
end

function M.check()
  local infill = require('infill')
  check_neovim(infill)
  if not infill.options then
    health.warn("require('infill').setup() has not been called: checking the default options")
  end
  local opts = infill.options or require('infill.config').resolve()
  check_server_command(opts)
  check_model(opts)
  check_status(infill)
  check_next_edit(infill, opts)
end

return M
