"""Where the benchmarks read and write: the repository root and bench/results/ (git-ignored). One place, so that a
module's depth inside bench/ does not decide where its results land."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO_ROOT / "bench" / "results"
