"""API keys out of anything that may be logged or shown: log lines and error messages.

Logs end up in bug reports, so the LSP layer's log filter and the backends' own log lines use this one function:
the configured keys are replaced wherever they appear, and so is anything shaped like a credential (a bearer token,
an `api_key=` value, a vendor key prefix), because a key may come from the environment without being configured."""

from __future__ import annotations

import re
from typing import Iterable

MASK = "***"

_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[^\s\"',]+"),
    # `api_key=…`, `"authorization": "…"`: the value, unless it is a bearer token (masked above, keeping "Bearer")
    re.compile(r"(?i)((?:api[_-]?key|x-api-key|authorization|token)[\"']?\s*[:=]\s*[\"']?)(?!bearer\s)"
               r"[^\s\"',}]{6,}"),
    re.compile(r"\b(sk-|sk_|xai-|gsk_|hf_)[A-Za-z0-9_\-]{10,}"),
)

#: Shorter "secrets" are left alone: masking every "ab" would make a log unreadable and protect nothing.
MIN_SECRET_LENGTH = 4


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every given secret and every credential-shaped value replaced by MASK."""
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text
