"""Next-edit suggestions (NES): predict the user's next edit from their edit history (docs/next-edit.md).

history.py keeps the edits, propagate.py repeats a substitution without a model, model.py and the engine's
`predict_next_edit` ask a model, gate.py keeps ghost text first, protocol.py speaks the Copilot NES protocol and
feature.py ties them together for the server (lsp_server/server.py registers the handlers)."""

from .feature import NextEdit
from .protocol import ACCEPT_COMMAND, CAPABILITY, DID_FOCUS, DID_SHOW, METHOD

__all__ = ["ACCEPT_COMMAND", "CAPABILITY", "DID_FOCUS", "DID_SHOW", "METHOD", "NextEdit"]
