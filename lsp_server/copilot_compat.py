"""What clients written for GitHub's Copilot language server send as configuration, read the way that server reads it.

Next-edit clients (copilot-lsp for Neovim, copilot.el, anything built on `@github/copilot-language-server`) are
pointed at Infill by changing the server command only. They keep sending what the Copilot server documents:
`initializationOptions` with `editorInfo` and `editorPluginInfo` (who the editor is), and through
`workspace/didChangeConfiguration` the settings `http` (proxy), `telemetry`, `github-enterprise` and
`nextEditSuggestions: {enabled}`. Infill validates its settings strictly (an unknown key is a typo worth an error),
so without this layer such a client got "unknown setting" and Infill kept none of what came with it.

Here those keys are taken out before validation: the editor's identity is logged, `nextEditSuggestions.enabled`
means `next_edit.enabled` (unless the same source sets Infill's own key), and the rest concerns a hosted service
Infill does not talk to. Only top-level keys of those exact names are touched; everything else is validated as
before."""

from __future__ import annotations

import logging
from typing import Any, Mapping

log = logging.getLogger(__name__)

#: Keys of the Copilot language server's initialization options: the editor's identity.
IDENTITY_KEYS = ("editorInfo", "editorPluginInfo")
#: Copilot settings for its hosted service (proxy, telemetry, an enterprise host): nothing here to apply them to.
SERVICE_KEYS = ("http", "telemetry", "github-enterprise", "copilotCapabilities")
NEXT_EDIT_KEY = "nextEditSuggestions"


def from_copilot_client(data: Any) -> Any:
    """`data` (initialization options or pushed settings) without the Copilot client's keys, its next-edit switch
    turned into Infill's. Anything that is not a table is returned as it is (validation names the problem)."""
    if not isinstance(data, Mapping) or not any(k in data for k in (*IDENTITY_KEYS, *SERVICE_KEYS, NEXT_EDIT_KEY)):
        return data
    out = dict(data)
    identity = {key: out.pop(key) for key in IDENTITY_KEYS if key in out}
    if identity:
        log.info("client (Copilot language server protocol): %s", _describe(identity))
    ignored = [key for key in SERVICE_KEYS if key in out]
    for key in ignored:
        del out[key]
    if ignored:
        log.info("ignored the Copilot service settings %s: Infill does not use a hosted Copilot service",
                 ", ".join(ignored))
    if NEXT_EDIT_KEY in out:
        switch = out.pop(NEXT_EDIT_KEY)
        enabled = switch.get("enabled") if isinstance(switch, Mapping) else None
        own = out.get("next_edit", out.get("nextEdit"))
        if isinstance(enabled, bool) and not (isinstance(own, Mapping) and "enabled" in own):
            key = "nextEdit" if "nextEdit" in out else "next_edit"
            out[key] = {**(own if isinstance(own, Mapping) else {}), "enabled": enabled}
        elif enabled is not None and not isinstance(enabled, bool):
            log.warning("ignored %s.enabled = %r: expected true or false", NEXT_EDIT_KEY, enabled)
    return out


def _describe(identity: Mapping[str, Any]) -> str:
    parts = []
    for key, value in identity.items():
        if isinstance(value, Mapping):
            parts.append(f"{key} {value.get('name', '?')} {value.get('version', '')}".rstrip())
    return "; ".join(parts) or "no name given"
