-- Lets `vim.lsp.enable('infill')` work without calling setup() (Neovim 0.11+ reads lsp/<name>.lua from
-- 'runtimepath'). setup() adds the keymaps and turns on the ghost-text UI; this file only describes the server.
return require('infill').lsp_config()
