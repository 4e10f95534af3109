"""The configurations the fuzz sends: the completion kinds it switches between (each pointed at the loopback), the
prompt budgets a change may set, the bad settings the server must refuse (with one popup, and without stopping
completions), and `merge`, which lays a change over the settings in force."""

from __future__ import annotations

from typing import Any

from .backend import FUZZ_TEMPLATE

BAD_SETTINGS: list[tuple[str, Any]] = [
    ("completion.kind unknown", {"completion": {"kind": "nope/completion"}}),
    ("completion.kind of another role", {"completion": {"kind": "openai/chat"}}),
    ("ftp endpoint", {"completion": {"api_endpoint": "ftp://127.0.0.1/v1"}}),
    ("unbalanced [ in the endpoint", {"completion": {"api_endpoint": "http://[::1"}}),
    ("endpoint host IDNA cannot encode", {"completion": {"api_endpoint": "http://\ud800/v1"}}),
    ("endpoint port out of range", {"completion": {"api_endpoint": "http://127.0.0.1:99999/v1"}}),
    ("template without {prefix}", {"completion": {"prompt_template": "<fim>{suffix}"}}),
    ("template with an unknown placeholder", {"completion": {"prompt_template": "{prefix}{cursor}"}}),
    ("empty language name", {"languages": {"": {"extra_stop_words": ["x"]}}}),
    ("empty stop word", {"languages": {"python": {"extra_stop_words": [""]}}}),
    ("empty additional stop word", {"completion": {"additional_stop_words": [""]}}),
    ("negative max_tokens", {"max_tokens": -1}),
    ("max_tokens a string", {"max_tokens": "many"}),
    ("debounce min above max", {"debounce": {"min_ms": 50, "max_ms": 5}}),
    ("unknown key", {"no_such_setting": 1}),
    ("completion not a table", {"completion": 5}),
    ("zero request_timeout", {"request_timeout": 0}),
    ("invoked_choices 0", {"invoked_choices": 0}),
    ("no model for openai", {"completion": {"model": None}}),
]


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


#: The completion kinds the fuzz configures against the loopback, by the protocol they speak to it.
KINDS: dict[str, Any] = {
    # Every kind names each key the others set: a configuration change is merged over the initialization options.
    # The loopback is the fuzz's own server: `shared: false` keeps the cache warm-ups (whose prompts the oracle
    # checks) coming, which a llama-server Infill did not start otherwise never gets.
    "openai": lambda root: {"kind": "openai/completion", "model": "fuzz", "api_endpoint": f"{root}/v1",
                            "prompt_template": None, "shared": None},
    "completion": lambda root: {"kind": "llama.cpp/completion", "api_endpoint": root,
                                "prompt_template": FUZZ_TEMPLATE, "shared": False},
    "infill": lambda root: {"kind": "llama.cpp/infill", "api_endpoint": root, "prompt_template": None,
                            "shared": False},
}
#: Prompt budgets a configuration change may set (tokens; without a tokenizer 4 characters each). The first one keeps
#: whole documents, so the oracle then asks for the exact text before and after the cursor.
PREFIX_BUDGETS = (4_000_000, 1024, 256, 16, 2)
SUFFIX_BUDGETS = (4_000_000, 256, 16, 2)
