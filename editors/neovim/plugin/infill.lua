-- Defines :Infill. The server is registered by require('infill').setup(), which users call from their config
-- (set vim.g.infill_auto_setup = true to have it called here with the defaults).
if vim.g.loaded_infill then
  return
end
vim.g.loaded_infill = true

if vim.fn.has('nvim-0.11') == 0 then
  vim.notify('infill: Neovim 0.11 or newer is required', vim.log.levels.ERROR)
  return
end

vim.api.nvim_create_user_command('Infill', function(args)
  require('infill').command(args)
end, {
  nargs = '?',
  desc = 'Infill: status | restart | log | enable | disable | toggle',
  complete = function(arg_lead)
    return require('infill').complete_subcommand(arg_lead)
  end,
})

vim.api.nvim_create_user_command('InfillNextEdit', function()
  require('infill.next_edit').command()
end, { desc = 'Infill: jump to or apply the next edit, or ask for one' })

vim.api.nvim_create_user_command('InfillNextEditDismiss', function()
  require('infill.next_edit').dismiss()
end, { desc = 'Infill: dismiss the next edit' })

if vim.g.infill_auto_setup then
  require('infill').setup(type(vim.g.infill_auto_setup) == 'table' and vim.g.infill_auto_setup or {})
end
