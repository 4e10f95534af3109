"""Where the benchmarks read and write: the repository root, bench/results/ (git-ignored) and scratch directories.
One place, so that a module's depth inside bench/ does not decide where its results land."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO_ROOT / "bench" / "results"


def write_report(report: dict[str, Any], output: Path | None, name: str) -> Path:
    """Write a benchmark's JSON report to `output`, by default to bench/results/<name>-<local time>.json (every run
    its own file, so that runs can be compared), and return where it went."""
    output = output or RESULTS_DIR / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1))
    return output


def scratch_dir(prefix: str) -> str:
    """A new directory in the system's temporary directory, removed when the benchmark's process exits: the servers'
    homes and logs are read during the run, and each run used to leave its directories behind in /tmp."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(functools.partial(shutil.rmtree, path, ignore_errors=True))
    return path
