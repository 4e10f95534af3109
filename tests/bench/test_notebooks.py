import json
from pathlib import Path

from bench.quality.notebooks import load_tasks, read_cells, summarise, table


def _notebook(path: Path, language: str = "python") -> Path:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["import numpy as np\n", "x = np.arange(10)"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["%matplotlib inline\n", "# a comment\n",
                                                                         "for v in x:\n", "    print(v * 2)"]},
        {"cell_type": "raw", "metadata": {}, "source": ["raw text"]},
    ]
    path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {"language": language}},
                                "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_tasks_are_statement_lines_of_a_code_cell_after_another(tmp_path: Path):
    path = _notebook(tmp_path / "demo.ipynb")
    assert [c.kind for c in read_cells(path)] == ["markdown", "code", "code"]  # the raw cell dropped
    tasks = load_tasks([path], 10, seed=1)
    assert len(tasks) == 1  # one per cell; the first code cell has no code cell before it
    task = tasks[0]
    assert task.index == 2 and (task.line, task.middle) in {(2, "for v in x:"), (3, "print(v * 2)")}
    holed = task.cells[2].text.split("\n")[task.line]
    assert holed == " " * task.character and task.character == (4 if task.line == 3 else 0)
    assert task.cells[1].text == "import numpy as np\nx = np.arange(10)"  # the other cells as they are
    assert load_tasks([_notebook(tmp_path / "r.ipynb", "R")], 10, seed=1) == []


def test_the_summary_compares_the_two_prompts_task_by_task():
    rows = [{"middle": "y = 2", "suggestions": {"cell alone": "", "notebook": "y = 2"}},
            {"middle": "print(v)", "suggestions": {"cell alone": "print(v)", "notebook": "pass"}},
            {"middle": "z", "suggestions": {"cell alone": "z", "notebook": "z"}}]
    summary = summarise(rows)
    assert summary["cell alone"]["exact_match"] == 66.7 and summary["notebook"]["exact_match"] == 66.7
    assert summary["cell alone"]["empty"] == 33.3 and summary["notebook"]["empty"] == 0.0
    assert summary["notebook against the cell alone"] == {"better": 1, "worse": 1, "same": 1}
    assert "| notebook | 3 | 66.7 |" in table(summary)
