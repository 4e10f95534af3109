"""The language server's settings: one typed dataclass built from layered sources.

Sources, later wins: built-in defaults → the user's config file → initializationOptions → workspace/configuration
(section `infill`) → workspace/didChangeConfiguration. Each source is kept as the raw dict it came in, so a bad value
in one source can be rejected on its own while the last good configuration stays in force.

The settings dict is flat (an `engine` table is accepted too and merged into the top level): the engine's keys
(every field of EngineConfig: `completion`, `chat`, `embedding`, `languages`, …) sit beside the server's own keys,
so `{"completion": {"kind": "local"}}` works as editors send it.
Validation reuses `engine.config.from_dict`, so an error names the dotted key exactly as the user wrote it."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

from engine.api import check_config, check_next_edit_model
from engine.config import EngineConfig, _snake, from_dict, merge
from engine.errors import ConfigError
from engine.tomlfiles import tomllib

from .next_edit.settings import NextEditSettings
from .workspace.settings import ContextSettings

SECTION = "infill"
ENGINE_KEYS = frozenset(f.name for f in dataclasses.fields(EngineConfig))


@dataclass(frozen=True)
class DebounceSettings:
    """Automatic requests wait this long so that a burst of keystrokes costs one model call, not one per key.

    `adaptive` waits about one and a half typing intervals, but never longer than the recent model latency
    (a fast model is cheap to call, a slow one is worth waiting for), clamped to [min_ms, max_ms]."""

    mode: Literal["adaptive", "fixed"] = "adaptive"
    fixed_ms: int = 150
    min_ms: int = 25
    max_ms: int = 600

    def __post_init__(self) -> None:
        if min(self.fixed_ms, self.min_ms, self.max_ms) < 0:
            raise ValueError("debounce times must not be negative")
        if self.min_ms > self.max_ms:
            raise ValueError("min_ms must not exceed max_ms")


@dataclass(frozen=True)
class SpeculationSettings:
    """Keeping suggestions up with typing (lsp_server/speculation.py).

    `prefetch`: when a suggestion is shown, compute the next one for the document as if it were accepted.
    `reuse_inflight`: a request whose typed characters the running generation already produced waits for it.
    `time_budget_ms` / `invoked_time_budget_ms`: after this much generation a suggestion ends at the next line
    break (automatic and explicit requests; 0 turns it off). A separate, smaller bound than a request deadline.
    Defaults: the replay files' lines take 10 tokens (median; p75 17) with the default model's tokenizer, which
    generates about 52 tokens/s on 2 cores, so 250 ms gives one or two whole lines and, with the debounce and a
    cached prefill, keeps an automatic suggestion near 600 ms; 1000 ms (llama.vim's) gives an explicit request
    about five lines."""

    prefetch: bool = True
    #: Prefetch also for hosted vendor APIs, where each prefetch is one more billed and rate-limited request: off
    #: unless asked for. Hosted means a kind other than local, llama.cpp/, vllm/ and ollama/ (so openai/, deepseek/,
    #: mistral/) whose endpoint is not on this machine or a local network, unless completion.self_hosted says
    #: otherwise (lsp_server/speculation.py `prefetch_decision`). Self-hosted servers prefetch when `prefetch` is on.
    prefetch_hosted: bool = False
    reuse_inflight: bool = True
    time_budget_ms: int = 250
    invoked_time_budget_ms: int = 1000

    def __post_init__(self) -> None:
        if self.time_budget_ms < 0 or self.invoked_time_budget_ms < 0:
            raise ValueError("time budgets must not be negative")


@dataclass(frozen=True)
class ServerSettings:
    engine: EngineConfig = field(default_factory=EngineConfig)
    enabled: bool = True
    #: `auto` decides per request (rest of line, syntax, indentation); `always`/`never` force it.
    multiline: Literal["auto", "always", "never"] = "auto"
    max_tokens: int = 64
    temperature: float = 0.1
    #: Invoked (explicit) requests may show several choices, sampled hotter so that they differ.
    invoked_choices: int = 1
    invoked_temperature: float = 0.6
    debounce: DebounceSettings = field(default_factory=DebounceSettings)
    speculation: SpeculationSettings = field(default_factory=SpeculationSettings)
    #: How long a request waits for a model that is still loading before it gives up.
    ready_timeout: float = 120.0
    #: The longest a model may take over one completion, once it is ready: the generation ends there whatever the
    #: server does (a trickling or endless stream), keeping what it produced so far.
    request_timeout: float = 20.0
    cache_size: int = 100
    cache_ttl: float = 300.0
    #: Typing through a shown suggestion is served from it for at most this many typed characters.
    typing_through_max: int = 50
    #: A suggestion whose first line the model wrote with a mean token log-probability under this is not shown: the
    #: model was guessing (lsp_server/postprocess/confidence.py). Needs a backend that reports log-probabilities
    #: (llama-server; asking costs it about 5 % of its generation speed); None turns the check off.
    confidence_floor: float | None = None
    #: Globs added to the built-in secret-file exclusions.
    exclude: tuple[str, ...] = ()
    #: Indentation used when the client sends no FormattingOptions (None: guess from the document).
    indent_unit: str | None = None
    #: Debug logging also writes prompts and completions (otherwise redacted).
    log_level: Literal["error", "warning", "info", "debug"] = "info"
    log_file: str | None = None
    #: Workspace context: snippets from other files in the prompt (lsp_server/workspace, docs/context.md).
    context: ContextSettings = field(default_factory=ContextSettings)
    #: Next-edit suggestions (lsp_server/next_edit, docs/next-edit.md).
    next_edit: NextEditSettings = field(default_factory=NextEditSettings)

    def __post_init__(self) -> None:
        if self.max_tokens <= 0:
            raise ValueError("max_tokens must be a positive integer")
        if not 0.0 <= self.temperature <= 2.0 or not 0.0 <= self.invoked_temperature <= 2.0:
            raise ValueError("temperatures must be numbers from 0 to 2")
        if not 1 <= self.invoked_choices <= 8:
            raise ValueError("invoked_choices must be from 1 to 8")
        if self.ready_timeout <= 0 or self.request_timeout <= 0:
            raise ValueError("ready_timeout and request_timeout must be positive numbers of seconds")
        if self.cache_size < 0 or self.cache_ttl < 0 or self.typing_through_max < 0:
            raise ValueError("cache_size, cache_ttl and typing_through_max must not be negative")
        if self.confidence_floor is not None and not self.confidence_floor <= 0.0:
            raise ValueError("confidence_floor must be a log-probability (a number ≤ 0) or null")

    @property
    def debug(self) -> bool:
        return self.log_level == "debug"


def parse_settings(data: Mapping[str, Any] | None) -> ServerSettings:
    """Validate a flat settings dict. Raises ConfigError naming the offending key."""
    data = dict(data or {})
    nested = data.pop("engine", None)
    if nested is not None:  # `[engine.completion]` in a TOML file is the same as `[completion]`
        if not isinstance(nested, Mapping):
            raise ConfigError("engine", f"expected a table, got {nested!r}")
        data = merge(data, nested)
    engine_part: dict[str, Any] = {}
    server_part: dict[str, Any] = {}
    for key, value in data.items():
        (engine_part if _snake(key) in ENGINE_KEYS else server_part)[key] = value
    engine = from_dict(EngineConfig, engine_part)
    check_config(engine)
    settings: ServerSettings = from_dict(ServerSettings, {**server_part, "engine": engine})
    if settings.next_edit.model is not None:  # checked like the completion model, errors under next_edit.model
        check_next_edit_model(settings.next_edit.model)
    return settings


def config_file_path(env: Mapping[str, str] | None = None) -> Path:
    """`$INFILL_CONFIG`, else `$XDG_CONFIG_HOME/infill/config.toml`, else `~/.config/infill/config.toml` (the
    commands' `--config` help, lsp_server/commands/__init__.py CONFIG_HELP, says the same)."""
    env = os.environ if env is None else env
    if env.get("INFILL_CONFIG"):
        return Path(env["INFILL_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "infill" / "config.toml"


def load_settings_file(explicit: str | Path | None) -> dict[str, Any]:
    """The raw settings of the file a command was given with `--config`, else of config_file_path(). One function for
    every `infill` command so they agree: an explicit file that does not exist raises ConfigError naming it (a typo
    there would otherwise run silently with the defaults); the default location may be absent (no settings)."""
    if not explicit:
        return load_config_file(config_file_path())
    path = Path(explicit).expanduser()
    if not path.is_file():
        raise ConfigError(str(path), "the settings file does not exist")
    return load_config_file(path)


def load_config_file(path: Path) -> dict[str, Any]:
    """The file's settings; {} when it does not exist. A malformed file raises ConfigError naming the file."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as exc:  # a ValueError, not a TOMLDecodeError: it escaped, and the server's start with it
        raise ConfigError(str(path), f"cannot read the config file: it is not UTF-8 text (byte "
                                     f"0x{exc.object[exc.start]:02x} at offset {exc.start}); save it as UTF-8") from exc
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(str(path), f"cannot read the config file: {exc}") from exc
    # A file may hold the settings at the top level or under [infill].
    if isinstance(data.get(SECTION), dict) and len(data) == 1:
        return dict(data[SECTION])
    return data


LAYERS = ("defaults", "file", "initialization", "workspace", "change")


class SettingsStore:
    """Keeps each source's raw dict and the merged, validated result.

    `update(layer, data)` validates the merge with the new layer; on error the layer is not applied, the previous
    settings stay, and the ConfigError is raised for the caller to show."""

    def __init__(self) -> None:
        self._layers: dict[str, dict[str, Any]] = {name: {} for name in LAYERS}
        self.current = ServerSettings()

    def merged(self, layers: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
        layers = self._layers if layers is None else layers
        out: dict[str, Any] = {}
        for name in LAYERS:
            out = merge(out, layers.get(name) or {})
        return out

    def update(self, layer: str, data: Mapping[str, Any] | None, *, replaces: tuple[str, ...] = ()) -> ServerSettings:
        """`replaces`: layers the new data supersedes, emptied with it (a pulled configuration replaces what the
        client pushed before: it is the client's whole current configuration)."""
        if layer not in self._layers or any(name not in self._layers for name in replaces):
            raise ValueError(f"unknown settings layer in {(layer, *replaces)!r}")
        if data is not None and not isinstance(data, Mapping):
            raise ConfigError(SECTION, f"expected a table of settings, got {data!r}")
        candidate = dict(self._layers)
        for name in replaces:
            candidate[name] = {}
        candidate[layer] = dict(data or {})
        settings = parse_settings(self.merged(candidate))
        self._layers = candidate
        self.current = settings
        return settings

    def checkpoint(self) -> tuple[dict[str, dict[str, Any]], ServerSettings]:
        """The state to go back to (`rollback`) when settings that validated still fail to take effect."""
        return dict(self._layers), self.current

    def rollback(self, state: tuple[dict[str, dict[str, Any]], ServerSettings]) -> None:
        self._layers, self.current = dict(state[0]), state[1]


def engine_changed(old: ServerSettings, new: ServerSettings) -> bool:
    """Whether a settings change needs a new engine (model, backend, languages…); other keys apply at once."""
    return old.engine != new.engine
