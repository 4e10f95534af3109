"""Builds the committed task files: downloads the releases named in packages.toml (cached), diffs every source file
present in two consecutive releases, groups hunks into edit sequences (bench.next_edit.tasks) and writes one JSON
line per file, gzip, to bench/next_edit/data/{split}.jsonl.gz. Deterministic: the same packages.toml gives the same
bytes (no random seeds, gzip without a timestamp)."""

from __future__ import annotations

import gzip
import json
import sys
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

from . import sources
from .tasks import expand, file_record, stable_fraction

HERE = Path(__file__).resolve().parent
PACKAGES = HERE / "packages.toml"
DATA = HERE / "data"
#: Tasks kept per language (sampled file by file, deterministically).
TARGET = {"dev": 13749, "heldout": 150}
#: The share of edit sequences that also give a "no next edit" task (the sequence replayed whole).
NO_EDIT_RATE = 0.2


def load_packages(path: Path = PACKAGES) -> dict[str, dict[str, list[dict[str, Any]]]]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def package_records(language: str, name: str, versions: list[str], log=print) -> list[dict[str, Any]]:
    records = []
    files = [sources.source_files(language, sources.archive(language, name, v)) for v in versions]
    for (v0, f0), (v1, f1) in zip(zip(versions, files), zip(versions[1:], files[1:])):
        for path in sorted(set(f0) & set(f1)):
            record = file_record(language, name, (v0, v1), path, f0[path], f1[path], NO_EDIT_RATE)
            if record is not None:
                records.append(record)
    log(f"  {language:<10} {name:<14} {len(versions) - 1} release pairs, {len(records)} changed files")
    return records


def sample(records: list[dict[str, Any]], target: int) -> list[dict[str, Any]]:
    """Files in a stable pseudo-random order, one package at a time in turn, until `target` tasks."""
    by_package: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(records, key=lambda r: stable_fraction(r["package"], r["to"], r["path"])):
        by_package.setdefault(r["package"], []).append(r)
    chosen: list[dict[str, Any]] = []
    count = 0
    queues = [by_package[p] for p in sorted(by_package)]
    while count < target and any(queues):
        for queue in queues:
            if queue and count < target:
                record = queue.pop(0)
                chosen.append(record)
                count += len(record["tasks"])
    return sorted(chosen, key=lambda r: (r["package"], r["to"], r["path"]))


def build(splits: list[str], languages: list[str] | None, log=print) -> dict[str, Path]:
    config = load_packages()
    DATA.mkdir(parents=True, exist_ok=True)
    written = {}
    for split in splits:
        lines = []
        # a rebuild of some languages keeps the others' records as committed (no download for them)
        kept = [r for r in load_records(split, DATA) if r["language"] not in languages] \
            if languages and (DATA / f"{split}.jsonl.gz").exists() else []
        for language, packages in config[split].items():
            if languages and language not in languages:
                lines += [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in kept if r["language"] == language]
                continue
            records = [r for p in packages for r in package_records(language, p["name"], p["versions"], log)]
            chosen = sample(records, TARGET[split])
            tasks = [t for r in chosen for t in expand(r, split)]
            none = sum(t.expected is None for t in tasks)
            log(f"{split} {language}: {len(chosen)} files, {len(tasks)} tasks ({none} without a next edit, "
                f"{sum(t.substitution_like for t in tasks)} substitution-like)")
            lines += [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in chosen]
        target = DATA / f"{split}.jsonl.gz"
        with open(target, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
            out.write(("\n".join(lines) + "\n").encode("utf-8"))
        written[split] = target
        log(f"wrote {target} ({target.stat().st_size // 1024} KiB)")
    return written


def load_records(split: str, data: Path = DATA) -> list[dict[str, Any]]:
    with gzip.open(data / f"{split}.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def describe(split: str) -> str:
    records = load_records(split)
    tasks = [t for r in records for t in expand(r, split)]
    by_language = Counter(t.language for t in tasks)
    packages = sorted({f"{r['language']}:{r['package']}" for r in records})
    return (f"{split}: {len(tasks)} tasks " + ", ".join(f"{k} {v}" for k, v in sorted(by_language.items()))
            + f"; packages {', '.join(packages)}")


if __name__ == "__main__":  # pragma: no cover - `python -m bench.next_edit build` is the entry
    build(sys.argv[1:] or ["dev", "heldout"], None)
