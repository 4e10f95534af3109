"""Smoke test of the next-edit benchmark (bench/next_edit): task construction, the scripted model against the real
prompt formats, and a handful of tasks through the real server with the scripted model and with propagation."""

from __future__ import annotations

import asyncio
import json

import pytest

from bench.next_edit import tasks as T
from bench.next_edit.build import load_records
from bench.next_edit.cli import BASE_OPTIONS, load_tasks, main, mode_table, write_listings
from bench.next_edit.harness import apply_edit, offset_of, overlaps, run_mode
from bench.next_edit.report import compare, listing, measures
from bench.next_edit.scripted import FORMS, ScriptedModel
from engine.next_edit.formats import parse, render
from engine.next_edit.types import EditEvent, NextEditOptions, NextEditRequest

OLD = """def area(width, height):
    return width * height


def report(shape):
    print(area(shape.width, shape.height))
    label = shape.name
    total = area(shape.width, shape.height)
    return total


def perimeter(width, height):
    # twice the sum of the sides
    doubled = 2 * (width + height)
    return doubled


def describe(shape):
    name = type(shape).__name__
    sides = (shape.width, shape.height)
    return f"{name} {sides}"
"""
#: A rename applied at its three places, and an unrelated edit (its own sequence).
NEW = OLD.replace("area(", "surface(").replace('f"{name} {sides}"', 'f"{name}: {sides}"')


def rename_record() -> dict:
    record = T.file_record("python", "demo", ("1.0", "1.1"), "demo/geometry.py", OLD, NEW, no_edit_rate=1.0)
    assert record is not None
    return record


def apply_change(text: str, change: T.Change) -> str:
    start, end = offset_of(text, *change.start), offset_of(text, *change.end)
    return text[:start] + change.text + text[end:]


def test_tasks_replay_to_the_current_text_and_name_the_next_hunk() -> None:
    record = rename_record()
    tasks = T.expand(record, "smoke")
    rename = [t for t in tasks if t.sequence_length == 3]
    assert [t.replayed for t in rename] == [1, 2, 3]  # two next-edit tasks and the "no next edit" one
    for task in tasks:
        text = task.base
        for change in task.changes:
            text = apply_change(text, change)
        assert text == task.current
    first = rename[0]
    assert first.changes[0].text == "surface" and first.cursor == (0, len("def surface"))
    assert first.expected is not None and first.expected.count("surface") == 2
    assert first.expected_lines == (5, 6) and first.substitution_like
    assert rename[-1].expected is None and rename[-1].current == T.normalise(NEW)
    # the unrelated edit was a sequence of its own: in the rename's tasks it is already made
    assert '{name}: {sides}' in first.base


@pytest.mark.parametrize("form", sorted(FORMS))
def test_scripted_model_returns_the_true_window_in_each_form(form: str) -> None:
    task = T.expand(rename_record(), "smoke")[0]
    cursor = offset_of(task.current, *task.cursor)
    request = NextEditRequest(path="demo/geometry.py", language="python", text=task.current, cursor=cursor,
                              history=(EditEvent("demo/geometry.py", 0, OLD.splitlines(True)[0],
                                                 task.current.splitlines(True)[0]),))
    rendered = render(request, NextEditOptions(), form)
    model = ScriptedModel(form)
    model.expect(task.current, task.expected, cursor)
    output = model.answer(rendered.shown if rendered.messages else rendered.text)
    assert model.last == "rewrite" and model.unparsed == 0
    stops = [s for s in rendered.format.stop if s in output]
    ended_by = min(stops, key=output.index) if stops else None
    parsed = parse(rendered, output[:output.index(ended_by)] if ended_by else output, ended_by, False)
    window = rendered.window
    assert parsed.window is not None
    assert task.current[:window.start] + parsed.window + task.current[window.end:] == task.expected


def test_judging_an_edit() -> None:
    task = T.expand(rename_record(), "smoke")[0]
    right = {"range": {"start": {"line": 5, "character": 10}, "end": {"line": 5, "character": 14}},
             "text": "surface"}
    assert apply_edit(task.current, right)[0] == task.expected
    assert overlaps((5, 5), task.expected_lines) and not overlaps((7, 7), task.expected_lines)
    assert overlaps((4, 4), (5, 5)) and overlaps((5, 5), (5, 5)) and not overlaps((6, 6), (5, 5))


def test_the_listing_names_each_substitution_like_miss_and_false_positive() -> None:
    from bench.next_edit.harness import Outcome

    tasks = T.expand(rename_record(), "smoke")
    first, second, none = tasks[:3]
    row = second.current.split("\n").index("    name = type(shape).__name__")
    wrong = {"range": {"start": {"line": row, "character": 11}, "end": {"line": row, "character": 15}},
             "text": "kind"}

    def outcome(task: T.Task, edit, exact: bool, location: bool) -> Outcome:
        return Outcome(task.task_id, task.language, task.expected is not None, task.substitution_like,
                       edit is not None, exact, exact, location, exact, 1.0, edit=edit)

    text = listing(tasks, [outcome(first, None, False, False), outcome(second, wrong, False, False),
                           outcome(none, None, False, False)])
    assert first.substitution_like and second.substitution_like
    assert f"== {first.task_id} (substitution-like miss;" in text and "proposed: nothing" in text
    assert f"== {second.task_id} (substitution-like miss, false positive;" in text
    assert "+    name = kind(shape).__name__" in text  # the proposed edit, as a diff
    assert none.task_id not in text  # nothing proposed where nothing was due: neither
    assert listing(tasks, [outcome(none, wrong, False, False)]).startswith(f"== {none.task_id} (false positive;")


def test_comparing_two_runs_task_by_task(tmp_path, capsys) -> None:
    def outcome(task_id: str, proposed: bool, exact: bool) -> dict:
        return {"task_id": task_id, "proposed": proposed, "exact": exact}
    before = [outcome("a", True, True), outcome("b", False, False), outcome("c", True, False),
              outcome("d", False, False), outcome("e", True, False), outcome("old", False, False)]
    after = [outcome("a", True, False), outcome("b", True, True), outcome("c", True, True),
             outcome("d", True, False), outcome("e", False, False), outcome("new", True, True)]
    assert compare(before, after) == {"gained": ["b", "c"], "lost": ["a"], "new_wrong": ["d"], "gone_wrong": ["e"],
                                      "only_before": ["old"], "only_after": ["new"]}
    paths = []
    for name, outcomes in (("before", before), ("after", after)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps({"outcomes": {"propagation": outcomes}}), encoding="utf-8")
    assert main(["compare", str(paths[0]), str(paths[1])]) == 0
    printed = capsys.readouterr().out
    assert "gained: 2\n  b\n  c\nlost: 1\n  a\n" in printed and "new_wrong: 1\n  d\n" in printed


def test_the_listings_are_written_beside_the_results_also_outside_bench_results(tmp_path) -> None:
    # `--output /tmp/x` wrote /tmp/x-dev.json and then failed to name its listings (a path is not a file name)
    results = tmp_path / "check-dev.json"
    written = write_listings(results, {"propagation": "== a miss\n", "scripted-sweep": ""})
    assert written == [tmp_path / "check-dev-propagation-misses.txt", tmp_path / "check-dev-scripted-sweep-misses.txt"]
    assert written[0].read_text(encoding="utf-8") == "== a miss\n"


def test_committed_data_has_four_languages_and_both_splits() -> None:
    for split in ("dev", "heldout"):
        records = load_records(split)
        languages = {r["language"] for r in records}
        assert {"python", "javascript", "typescript", "c"} <= languages
        tasks = [t for r in records for t in T.expand(r, split)]
        for language in ("python", "javascript", "typescript", "c"):  # issue 23: at least 100 tasks each
            assert sum(t.language == language for t in tasks) >= 100, (split, language)
        assert all(r["package"] and r["from"] != r["to"] and r["path"] for r in records)
    dev = {r["package"] for r in load_records("dev")}
    assert not dev & {r["package"] for r in load_records("heldout")}


def test_a_rebuild_of_one_language_keeps_the_other_languages_records(tmp_path, monkeypatch) -> None:
    from bench.next_edit import build as B

    packages = tmp_path / "packages.toml"
    packages.write_text('[[dev.python]]\nname = "p"\nversions = ["1", "2"]\n'
                        '[[dev.c]]\nname = "q"\nversions = ["1", "2"]\n', encoding="utf-8")
    made = {"python": "old-python", "c": "old-c"}
    monkeypatch.setattr(B, "DATA", tmp_path)
    monkeypatch.setattr(B, "load_packages", lambda: B.tomllib.loads(packages.read_text(encoding="utf-8")))
    monkeypatch.setattr(B, "package_records", lambda language, name, versions, log=print: [T.file_record(
        language, name, ("1", "2"), made[language], OLD, NEW, 0.0)])
    B.build(["dev"], None, log=lambda *_: None)
    made = {"python": "new-python", "c": "new-c"}
    B.build(["dev"], ["c"], log=lambda *_: None)
    assert [r["path"] for r in B.load_records("dev", tmp_path)] == ["old-python", "new-c"]


@pytest.mark.parametrize("mode", ["scripted-sweep", "propagation"])
def test_a_few_tasks_through_the_server(mode: str) -> None:
    """The rename task with the scripted sweep model or with propagation, plus a few committed tasks."""
    tasks = T.expand(rename_record(), "smoke") + load_tasks("dev", ["python"], 3)
    outcomes = asyncio.run(run_mode(mode_table([])[mode], tasks, BASE_OPTIONS, progress=False))
    assert len(outcomes) == len(tasks) and not any(o.error for o in outcomes)
    assert measures(outcomes)["p50_ms"] is not None
    first, second, none = outcomes[:3]
    assert first.exact and second.exact           # the rename's next places, found
    assert not none.proposed                      # nothing after the last one
    if mode == "propagation":
        assert first.source == "propagated"
