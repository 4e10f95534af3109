"""Benchmark tasks: editor cursors on an empty line, fixed samples, execution-based scoring in a child process."""

from __future__ import annotations

import pytest

from bench.quality.humaneval_exec import ExecItem, score_humaneval
from bench.quality.metrics import humaneval_program_middle
from bench.quality.suites_data import (DEFAULT_DATA_DIR, HUMANEVAL_MULTI, HUMANEVAL_SINGLE, SANTACODER, fixed_sample,
                                       load_suite, on_empty_line)

pytestmark = pytest.mark.skipif(not (DEFAULT_DATA_DIR / "human-eval-infilling").is_dir(),
                                reason=f"benchmark data not found in {DEFAULT_DATA_DIR}")


def test_cursor_sits_on_an_empty_line():
    assert on_empty_line("a = 1", "b = 2\n") == ("a = 1\n", "\nb = 2\n")
    assert on_empty_line("a = 1\n", "b = 2\n") == ("a = 1\n", "\nb = 2\n")


def test_fixed_sample_is_repeatable_and_a_limit_is_a_prefix_of_it():
    assert fixed_sample(100, 10, seed=1) == fixed_sample(100, 10, seed=1)
    assert fixed_sample(100, 10, seed=1) != fixed_sample(100, 10, seed=2)
    assert fixed_sample(5, None, seed=1) == [0, 1, 2, 3, 4]
    multi_10 = load_suite(HUMANEVAL_MULTI, limit=10)
    multi_3 = load_suite(HUMANEVAL_MULTI, limit=3)
    assert [t.task_id for t in multi_3] == [t.task_id for t in multi_10[:3]]


def test_suites_load_with_their_sizes():
    assert len(load_suite(HUMANEVAL_SINGLE)) == 1033
    assert len(load_suite(HUMANEVAL_MULTI)) == 500
    santacoder = load_suite(SANTACODER, santacoder_sample=5)
    assert [t.language for t in santacoder] == ["python"] * 5 + ["java"] * 5 + ["javascript"] * 5
    assert all(t.prefix.endswith("\n") and t.suffix.startswith("\n") for t in santacoder)


def test_unknown_suite_is_named():
    with pytest.raises(ValueError, match="unknown suite 'nope'"):
        load_suite("nope")


def test_reference_middles_pass_and_wrong_ones_fail_in_a_child_process():
    tasks = load_suite(HUMANEVAL_SINGLE, limit=4)
    items = []
    for task in tasks:
        items.append(ExecItem(f"{task.task_id}|ref", task.problem, humaneval_program_middle(task.reference,
                                                                                            task.suffix)))
        items.append(ExecItem(f"{task.task_id}|junk", task.problem, humaneval_program_middle("x = (", task.suffix)))
        items.append(ExecItem(f"{task.task_id}|loop", task.problem,
                              humaneval_program_middle("    while True: pass", task.suffix)))
    results = score_humaneval(items, timeout=1.0)
    for task in tasks:
        assert results[f"{task.task_id}|ref"].passed, results[f"{task.task_id}|ref"]
        assert not results[f"{task.task_id}|junk"].passed
        assert "compile" in results[f"{task.task_id}|junk"].result
        assert not results[f"{task.task_id}|loop"].passed
