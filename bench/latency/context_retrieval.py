"""Workspace context at scale: index memory and retrieval time on a 2,000-file workspace.

The workspace is the installed Python packages (site-packages: real code, thousands of files), scanned exactly as
the server scans a workspace folder, capped at --files files. Memory is what the indexes keep (tracemalloc, after
the scan, with the file-read cache emptied); retrieval is `WorkspaceContext.select` at random cursor positions of
indexed files opened as documents, timed as wall time and as CPU time (the machine may be loaded).

    python3 -m bench.latency.context_retrieval                 # 2,000 files, 500 requests
    python3 -m bench.latency.context_retrieval --files 500 --requests 100
Prints a table and writes JSON under bench/results/."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import sysconfig
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

from ..common.paths import RESULTS_DIR
from ..common.stats import percentile, table


@dataclass
class Doc:
    text: str
    language_id: str


async def run(files: int, requests: int, ranking: str, folder: str) -> dict:
    from lsp_server.workspace import ContextSettings
    from lsp_server.workspace.provider import CursorInfo, WorkspaceContext
    from lsp_server.workspace import provider
    from lsp_server.workspace.requests import prompt_lines

    docs: dict[str, Doc] = {}
    gc.collect()
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    # retrieval alone: the "after the cursor" block (next_lines, on by default) is a copy, not a search
    ws = WorkspaceContext(ContextSettings(max_files=files, ranking=ranking, next_lines=0), docs)
    started = time.perf_counter()
    ws.set_folders([folder])
    await ws.wait_scanned()
    scan_s = time.perf_counter() - started
    provider._FILES.clear()
    gc.collect()
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    retained -= baseline
    peak -= baseline

    rng = random.Random(1234)
    keys = sorted(ws.index.keys())
    wall, cpu = [], []
    for _ in range(requests):
        path = rng.choice(keys)
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        lines = text.split("\n")
        line = rng.randrange(len(lines))
        uri = Path(path).as_uri()
        docs[uri] = Doc(text, "python")
        ws.opened(uri)
        ws.tick()
        prefix = "\n".join(lines[:line]) + "\n"
        suffix = "\n".join(lines[line:])
        selection = await ws.select(CursorInfo(uri, prefix, suffix, line, "python"),
                                    prompt_lines=prompt_lines(prefix, suffix, line, 1024, 256, True), prefix_only=True)
        wall.append(selection.elapsed_ms)
        cpu.append(selection.cpu_ms)
        ws.closed(uri)
        docs.pop(uri)
    await ws.close()
    return {"files": len(ws._disk_keys), "files_with_code": len(keys), "windows": len(ws.index),
            "definitions": len(ws.tags), "scan_s": scan_s,
            "index_mb": retained / 2**20, "peak_mb": peak / 2**20, "requests": requests, "ranking": ranking,
            "p50_ms": percentile(wall, 0.5), "p99_ms": percentile(wall, 0.99),
            "cpu_p50_ms": percentile(cpu, 0.5), "cpu_p99_ms": percentile(cpu, 0.99)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--ranking", default="bm25")
    parser.add_argument("--folder", default=sysconfig.get_paths()["purelib"])
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.files, args.requests, args.ranking, args.folder))
    result["load_average"] = os.getloadavg()
    print(table([result], ["files", "windows", "definitions", "scan_s", "index_mb", "peak_mb", "requests", "p50_ms",
                           "p99_ms", "cpu_p50_ms", "cpu_p99_ms"]))
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"context-retrieval-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
