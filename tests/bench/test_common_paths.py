"""Where the benchmarks write their reports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.common import paths


def test_a_report_goes_where_it_is_told(tmp_path: Path) -> None:
    output = tmp_path / "deep" / "report.json"
    assert paths.write_report({"a": [1, 2]}, output, "ignored") == output
    assert json.loads(output.read_text()) == {"a": [1, 2]}


def test_by_default_every_run_has_its_own_file_under_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    written = paths.write_report({"n": 1}, None, "soak")
    assert written.parent == tmp_path / "results"
    assert re.fullmatch(r"soak-\d{8}-\d{6}\.json", written.name), written.name
    assert json.loads(written.read_text()) == {"n": 1}
