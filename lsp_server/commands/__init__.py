"""The `infill` subcommands (see lsp_server/cli.py)."""

#: The `--config` help of every command: where the settings file is read from without it, as
#: lsp_server.config.config_file_path finds it. Here rather than in lsp_server.config, whose import (the engine's
#: API) a command's arguments should not pay for.
CONFIG_HELP = ("settings file (default: $INFILL_CONFIG, else $XDG_CONFIG_HOME/infill/config.toml, else "
               "~/.config/infill/config.toml)")
