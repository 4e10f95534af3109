"""The real-code quality benchmark (bench/quality/real_code.py): its tasks, scores and replay without a model, and a
smoke run with the tiny test model and the real llama-server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bench.quality import real_code as rc
from lsp_server.syntax import has_grammar

needs_grammars = pytest.mark.skipif(not all(has_grammar(x) for x in ("python", "javascript", "typescript", "go")),
                                    reason="tree-sitter grammars (the syntax extra) are not installed")


@needs_grammars
def test_smoke_tasks_cover_every_position_with_the_cursor_where_a_user_has_it():
    args = rc.build_parser().parse_args(["--smoke"])
    tasks = rc.tasks_for(args)
    assert {t.position for t in tasks} == set(rc.POSITIONS)
    for task in tasks:
        line_before = task.prefix[task.prefix.rfind("\n") + 1:]
        if task.position == "indent":
            assert not line_before.strip()  # after the indentation an editor inserts
        elif task.position == "space":
            assert line_before.endswith(" ") and line_before.strip()
        assert task.middle.strip() and task.suffix.startswith(("\n", ""))


def test_scores_and_summary():
    rows = [
        {"language": "python", "kind": "line", "position": "space", "middle": "x + 1",
         "raw": {"text": "\nfoo"}, "raw_healed": {"text": "x + 1\nbar"}, "ours": {"text": "x + 1"}},
        {"language": "python", "kind": "line", "position": "indent", "middle": "y = 2",
         "raw": {"text": "y = 2\nz = 3"}, "ours": {"text": "y = 2\nz = 3"}},
        {"language": "go", "kind": "statements", "position": "indent", "middle": "a()\nb()",
         "raw": {"text": "c()"}, "ours": {"text": ""}},
    ]
    for row in rows:
        row.update(rc.score_task(row))
    assert rows[0]["scores"]["oracle"]["exact_match"]  # the healed prompt's answer counts for the oracle
    assert not rows[0]["scores"]["raw"]["exact_match"] and rows[0]["scores"]["ours"]["exact_match"]
    assert rows[1]["outcome"] == "too_long" and rows[1]["too_long_lines"]
    assert rows[2]["outcome"] == "empty"
    summary = rc.summarise(rows)
    assert summary["all"]["tasks"] == 3 and summary["space: yes"]["tasks"] == 1
    assert summary["space: no (elsewhere)"]["empty"] == 50.0
    assert summary["kind/line"]["too_long"] == 50.0
    assert "| all | 3 |" in rc.table(summary)
    # the healed answer's first line is the hole's; the go task's model wrote another call
    assert summary["model's first line: right"]["tasks"] == 2
    assert summary["model's first line: wrong, kind/statements"]["tasks"] == 1


def test_tasks_carry_the_block_the_server_shows_a_prefix_only_model():
    task = rc.RealTask(language="python", kind="line", position="indent",
                       path="/r/corpus/src/rich-13.9.4-py3-none-any.whl/rich/text.py", line=3,
                       prefix="def f(x):\n    ", middle="y = x", suffix="\n    return y * 2\n\n\nprint(f(2))\n")
    assert task.label == "rich/text.py"
    elsewhere = rc.RealTask(**{**task.__dict__, "path": "/home/me/src/infill/bench/results/corpus-heldout/src/"
                                                       "query-core-5.0.0.tgz/package/src/query.ts"})
    assert elsewhere.label == "package/src/query.ts"
    quality = task.as_quality_task(3)
    assert quality.context[0].filename == "rich/text.py (after the cursor)"
    assert quality.context[0].text == "    return y * 2"  # the lines below the cursor's line, not the rest of it
    assert quality.relative_path == "rich/text.py"
    assert task.as_quality_task(0).context == () and task.as_quality_task(0).relative_path is None
    blank_below = rc.RealTask(**{**task.__dict__, "suffix": "\n\n   \n"})
    assert blank_below.as_quality_task(15).context == ()
    assert rc.build_parser().parse_args([]).next_lines == rc.ContextSettings().next_lines


@needs_grammars
def test_replay_runs_todays_pipeline_over_recorded_texts(tmp_path):
    document_prefix = "def area(w, h):\n    return "
    recorded = {"rows": [
        # healed prompt: its answer began with the removed blank
        {"language": "python", "kind": "line", "position": "space", "path": "a.py", "line": 2, "task_id": "a",
         "prefix": document_prefix, "middle": "w * h", "suffix": "\n\nprint(area(1, 2))\n",
         "raw": {"text": "\n\nfoo", "stop_reason": "token_limit"},
         "raw_healed": {"text": "w * h\n\nprint(1)", "model_text": " w * h\n\nprint(1)", "stop_reason": "token_limit"},
         "ours": {"text": ""}},
    ]}
    path = tmp_path / "recorded.json"
    path.write_text(json.dumps(recorded))
    output = tmp_path / "replayed.json"
    assert rc.main(["--replay", str(path), "--output", str(output), "--quiet"]) == 0
    row = json.loads(output.read_text())["rows"][0]
    assert row["ours"]["text"] == "w * h" and row["recorded_ours"] == ""
    assert rc.main(["--replay", str(path), "--healing", "none", "--output", str(output), "--quiet"]) == 0
    assert json.loads(output.read_text())["rows"][0]["ours"]["text"] == ""  # the unhealed answer: a line break


@needs_grammars
def test_replay_does_not_depend_on_the_machines_load(monkeypatch):
    """The parse-clean cut gives up past its time budget; a replay on a loaded machine must cut all the same."""
    from lsp_server.postprocess import parse_clean

    prefix = "def render(text):\n    if isinstance(text, str):\n        return text\n    "
    suffix = "\n    elif isinstance(text, Text):\n        return text.plain\n    return None\n"
    row = {"language": "python", "kind": "block", "position": "indent", "path": "a.py", "line": 4, "task_id": "a",
           "prefix": prefix, "middle": "x", "suffix": suffix, "ours": {"text": ""},
           "raw": {"text": "if not text:\n        return ''\n    else:\n        return str(text)",
                   "stop_reason": "end_of_stream"}}
    monkeypatch.setattr(parse_clean, "BUDGET_MS", -1.0)  # a machine so loaded that every parse is over budget
    replayed = asyncio.run(rc.replay_rows([row]))
    assert replayed[0]["ours"]["text"] == "if not text:\n        return ''"
    assert parse_clean.BUDGET_MS == -1.0  # the server's budget is left as it was


@pytest.mark.llama_server
@needs_grammars
def test_smoke_run_with_the_tiny_model(llama_server_binary: str, tiny_model: Path, tmp_path):
    args = rc.build_parser().parse_args(["--smoke", "--model", str(tiny_model), "--binary", llama_server_binary,
                                         "--language", "python", "--quiet"])
    report = rc.finish(asyncio.run(rc.run(args)))
    assert report["next_lines"] == 0  # the tiny model is a FIM model: it sees the suffix, the server adds no block
    assert report["rows"] and report["summary"]["all"]["tasks"] == len(report["rows"])
    for row in report["rows"]:
        assert row["raw"]["stop_reason"] in ("token_limit", "end_of_stream")
        assert set(row["scores"]) == {"raw", "ours", "oracle"}
        if row["position"] == "space":
            assert row["raw_healed"]["removed"] == " "
        assert row["scores"]["oracle"]["edit_similarity"] >= row["scores"]["raw"]["edit_similarity"]
