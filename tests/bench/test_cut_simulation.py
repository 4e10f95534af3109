"""The cut simulation's smoke mode (this repository's own files, no download, no model server) and its scoring."""

from __future__ import annotations

import json
import random

import pytest

from bench.quality import cut_simulation as sim
from lsp_server.syntax import has_grammar


@pytest.mark.parametrize("shown,outcome", [
    ("a = 1\nb = 2", "right"),
    ("a = 1  \nb = 2\n", "right"),            # trailing blanks do not count
    ("a = 1\nb = 2\nc = 3", "too_long"),
    ("a = 1", "too_short"),
    ("", "too_short"),                        # nothing shown
    ("a = 2", "wrong"),
])
def test_score(shown, outcome):
    assert sim.score(shown, "a = 1\nb = 2") == outcome


def test_same_shape_continuation_keeps_the_suffix_indentation_with_other_code():
    task = sim.Task("python", "line", "f.py", 1, "def f():\n    ", "x = 1", "\n    if x:\n\n        return x\n")
    text = sim.continuation(task, "same_shape", random.Random(1), ["y = 2", "z()"])
    lines = text.split("\n")
    assert lines[0] == "" and lines[2] == ""
    assert lines[1].startswith("    ") and lines[1].strip() in ("y = 2", "z()")
    assert lines[3].startswith("        ") and lines[3].strip() in ("y = 2", "z()")
    assert sim.continuation(task, "suffix", random.Random(1), []) == task.suffix
    assert sim.continuation(task, "end", random.Random(1), []) == ""


@pytest.mark.skipif(not all(has_grammar(lang) for lang in sim.SMOKE_FILES), reason="tree-sitter grammars missing")
def test_smoke_run_scores_every_task_in_every_variant(tmp_path):
    output = tmp_path / "sim.json"
    assert sim.main(["--smoke", "--output", str(output), "--quiet"]) == 0
    report = json.loads(output.read_text())
    assert set(report["tasks"]) == set(sim.SMOKE_FILES) and all(n > 0 for n in report["tasks"].values())
    rows = report["rows"]
    assert len(rows) == sum(report["tasks"].values()) * len(sim.CONTINUATIONS) * len(sim.MODELS)
    assert {r["outcome"] for r in rows} <= set(sim.OUTCOMES)
    assert {r["kind"] for r in rows} == set(sim.HOLE_KINDS)
    # A FIM model that writes exactly the missing code and ends is shown exactly that code.
    ended = [r for r in rows if r["model"] == "fim" and r["continuation"] == "end"]
    assert sum(r["outcome"] == "right" for r in ended) >= 0.9 * len(ended)
    assert report["summary"]["fim"]["end"]["all"]["all"]["tasks"] == len(ended)
