"""Per-vendor chat request normalisation, driven by the `vendors.toml` table instead of if-chains.

Why a table: vendors keep changing which OpenAI fields they accept; a new quirk should be one line of data, and the
table can be read and reviewed without reading code."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping

from ..errors import ConfigError
from ..tomlfiles import read_packaged, tomllib

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelRule:
    pattern: re.Pattern
    drop: tuple[str, ...] = ()
    rename: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class VendorRules:
    drop: tuple[str, ...] = ()
    rename: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)
    model_rules: tuple[ModelRule, ...] = ()


_RULE_KEYS = frozenset({"drop", "rename", "options", "model_rules"})


def _parse_vendor(name: str, raw: Mapping[str, Any]) -> VendorRules:
    known = _RULE_KEYS
    unknown = set(raw) - known
    if unknown:
        raise ConfigError(f"vendors.toml:{name}", f"unknown keys {sorted(unknown)} (valid: {sorted(known)})")
    rules = tuple(ModelRule(re.compile(r["match"]), tuple(r.get("drop", ())), dict(r.get("rename", {})))
                  for r in raw.get("model_rules", ()))
    return VendorRules(tuple(raw.get("drop", ())), dict(raw.get("rename", {})), dict(raw.get("options", {})), rules)


def parse_table(text: str) -> dict[str, VendorRules]:
    return _parse_data(tomllib.loads(text))


def _parse_data(data: Mapping[str, Any]) -> dict[str, VendorRules]:
    return {name: _parse_vendor(name, raw) for name, raw in _flatten(data).items()}


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Mapping[str, Any]]:
    """TOML reads `[llama.cpp]` as nested tables; vendor names are the dotted paths of tables that hold rules."""
    out: dict[str, Mapping[str, Any]] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            if value and not set(value) & _RULE_KEYS and all(isinstance(v, Mapping) for v in value.values()):
                out.update(_flatten(value, name + "."))
            else:
                out[name] = value
    return out


@lru_cache(maxsize=1)
def vendor_table() -> dict[str, VendorRules]:
    return _parse_data(read_packaged("engine.backends", "vendors.toml"))


@dataclass(frozen=True)
class ChatNormalizer:
    """Turns an OpenAI-shaped chat body into what `vendor` accepts."""

    vendor: str
    default_model: str | None = None
    supported_models: tuple[str, ...] = ()

    def rules(self) -> VendorRules:
        return vendor_table().get(self.vendor, VendorRules())

    def model_for(self, requested: str | None) -> str | None:
        """The requested model if allowed; otherwise the default (with a warning when one was asked for)."""
        if not requested:
            return self.default_model
        if self.supported_models and requested not in self.supported_models:
            log.warning("%s chat: model %r is not in supported_models %s; using %r", self.vendor, requested,
                        list(self.supported_models), self.default_model)
            return self.default_model
        return requested

    def normalize(self, body: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(body)
        model = self.model_for(out.get("model"))
        if model is None:
            out.pop("model", None)
        else:
            out["model"] = model
        rules = self.rules()
        out = _apply(out, rules.drop, rules.rename)
        if rules.options:
            options = dict(out.get("options") or {})
            for key, target in rules.options.items():
                if key in out:
                    options[target] = out.pop(key)
            if options:
                out["options"] = options
        for rule in rules.model_rules:
            if model and rule.pattern.search(model):
                out = _apply(out, rule.drop, rule.rename)
        return out


def _apply(body: dict[str, Any], drop: tuple[str, ...], rename: Mapping[str, str]) -> dict[str, Any]:
    out = {k: v for k, v in body.items() if k not in drop}
    for old, new in rename.items():
        if old in out:
            out[new] = out.pop(old)
    return out
