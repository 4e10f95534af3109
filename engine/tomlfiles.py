"""Reading TOML: the standard library's `tomllib`, or `tomli` (the same parser, published separately) on Python 3.10.

The one place that chooses between them; the data tables shipped inside the engine (languages, prompt templates,
known models, vendor rules) are read through `read_packaged`."""

from __future__ import annotations

import sys
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["tomllib", "read_packaged"]


def read_packaged(package: str, name: str) -> dict[str, Any]:
    """The TOML file `name` shipped inside `package` (e.g. "engine", "languages.toml")."""
    return tomllib.loads(resources.files(package).joinpath(name).read_text(encoding="utf-8"))
