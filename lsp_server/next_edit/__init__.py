"""Next-edit suggestions (NES): predict the user's next edit from their edit history (docs/next-edit.md).

history.py keeps the edits, propagate/ repeats a substitution without a model, focus.py points the model's window
at the likeliest place, model.py and the engine's `predict_next_edit` ask a model, gate.py keeps ghost text first,
protocol.py speaks the Copilot NES protocol and feature.py ties them together for the server (lsp_server/server.py
registers the handlers). This package module imports nothing, so that the server's start-up pays only for what it
uses: import from the submodules."""
