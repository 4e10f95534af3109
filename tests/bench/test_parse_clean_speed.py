"""Smoke run of the parse-clean cost benchmark on this repository's own files (no download, no model)."""

import json

import pytest

from bench.latency import parse_clean_speed
from lsp_server.syntax import has_grammar


@pytest.mark.skipif(not all(has_grammar(x) for x in ("python", "javascript", "typescript", "go")),
                    reason="tree-sitter grammars (the syntax extra) are not installed")
def test_smoke_times_clean_and_clashing_items(tmp_path):
    output = tmp_path / "speed.json"
    assert parse_clean_speed.main(["--smoke", "--output", str(output)]) == 0
    report = json.loads(output.read_text())
    shapes = {(row["language"], row["items"]) for row in report["rows"]}
    assert ("python", "clean") in shapes and ("python", "clashing") in shapes
    for row in report["rows"]:
        assert row["n"] > 0 and row["median ms"] >= 0
        if row["items"] == "clean":
            assert row["cut %"] == 0.0  # the missing code itself is never cut
    assert report["all"]["budget_ms"] > 0
