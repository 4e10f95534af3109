"""Benchmark tasks for `bench/quality/suites.py`: HumanEval infilling and the SantaCoder FIM set, as editor cursors.

Both data sets cut one or more whole lines out of a file. An editor user who writes those lines sits on an empty line
between the code above and the code below, so every task is turned into that document: `prefix` ends with a newline,
`suffix` starts with one, and accepting a completion gives ``prefix + completion + suffix``. (SantaCoder stores its
prompts without the newlines around the middle line; HumanEval's `suffix` starts at the next line.)

Samples are fixed: a seeded `random.Random` picks task indices once, and `--limit` takes the first N of that order,
so a shorter run is always a subset of a longer one."""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from engine.types import ContextSnippet

from ..common.paths import REPO_ROOT

#: Where the coordinator copied the data sets; `--data-dir` overrides it.
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"

HUMANEVAL_SINGLE = "humaneval-single"
HUMANEVAL_MULTI = "humaneval-multi"
SANTACODER = "santacoder"
SUITES: tuple[str, ...] = (HUMANEVAL_SINGLE, HUMANEVAL_MULTI, SANTACODER)

#: Data set language tag → LSP languageId.
SANTACODER_LANGUAGES: dict[str, str] = {"py": "python", "java": "java", "js": "javascript"}

DEFAULT_SEED = 1234
DEFAULT_MULTI_SAMPLE = 500
DEFAULT_SANTACODER_SAMPLE = 200  # per language


@dataclass(frozen=True)
class Task:
    """One cursor to complete. `reference` is the text the data set cut out (without the surrounding newlines)."""

    suite: str
    task_id: str
    language: str
    prefix: str
    suffix: str
    reference: str
    #: The HumanEval problem record, for execution-based scoring; None for exact-match suites.
    problem: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    #: Snippets the server's workspace context would add (the real-code suite's "after the cursor" block), and the
    #: file's workspace-relative label that goes with them; the data-set suites have none.
    context: tuple[ContextSnippet, ...] = field(default=(), compare=False, repr=False)
    relative_path: str | None = None

    @property
    def executable(self) -> bool:
        return self.problem is not None


def _read_jsonl_gz(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"benchmark data file not found: {path} (set --data-dir to the folder holding "
                                f"human-eval-infilling/ and santacoder-fim/)")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def on_empty_line(prompt: str, suffix: str) -> tuple[str, str]:
    """The prefix/suffix of a cursor on an empty line between `prompt` and `suffix`."""
    prefix = prompt if prompt.endswith("\n") or not prompt else prompt + "\n"
    return prefix, "\n" + suffix


def humaneval_task(suite: str, record: dict[str, Any]) -> Task:
    prefix, suffix = on_empty_line(record["prompt"], record["suffix"])
    middle = record["canonical_solution"]
    reference = middle[:-1] if middle.endswith("\n") else middle
    return Task(suite=suite, task_id=record["task_id"], language="python", prefix=prefix, suffix=suffix,
                reference=reference, problem=record)


def santacoder_task(record: dict[str, Any]) -> Task:
    prefix, suffix = on_empty_line(record["prompt"], record["suffix"])
    language = SANTACODER_LANGUAGES[record["language"]]
    return Task(suite=SANTACODER, task_id=record["name"], language=language, prefix=prefix, suffix=suffix,
                reference=record["canonical_solution"])


def fixed_sample(count: int, size: int | None, seed: int) -> list[int]:
    """`size` indices out of `count`, in a seeded random order (all of them, in file order, when size is None)."""
    if size is None or size >= count:
        return list(range(count))
    return random.Random(seed).sample(range(count), size)


def _take(items: Iterable[Task], limit: int | None) -> list[Task]:
    items = list(items)
    return items if limit is None else items[:limit]


def load_suite(suite: str, data_dir: Path = DEFAULT_DATA_DIR, *, limit: int | None = None,
               multi_sample: int | None = DEFAULT_MULTI_SAMPLE,
               santacoder_sample: int | None = DEFAULT_SANTACODER_SAMPLE, seed: int = DEFAULT_SEED) -> list[Task]:
    """The tasks of one suite. For SantaCoder, `santacoder_sample` and `limit` apply per language."""
    data_dir = Path(data_dir)
    if suite == HUMANEVAL_SINGLE:
        records = _read_jsonl_gz(data_dir / "human-eval-infilling" / "HumanEval-SingleLineInfilling.jsonl.gz")
        return _take((humaneval_task(suite, r) for r in records), limit)
    if suite == HUMANEVAL_MULTI:
        records = _read_jsonl_gz(data_dir / "human-eval-infilling" / "HumanEval-MultiLineInfilling.jsonl.gz")
        order = fixed_sample(len(records), multi_sample, seed)
        return _take((humaneval_task(suite, records[i]) for i in order), limit)
    if suite == SANTACODER:
        records = _read_jsonl_gz(data_dir / "santacoder-fim" / "benchmark.jsonl.gz")
        tasks: list[Task] = []
        for tag in SANTACODER_LANGUAGES:
            of_language = [r for r in records if r["language"] == tag]
            order = fixed_sample(len(of_language), santacoder_sample, seed)
            tasks += _take((santacoder_task(of_language[i]) for i in order), limit)
        return tasks
    raise ValueError(f"unknown suite {suite!r} (valid suites: {', '.join(SUITES)})")
