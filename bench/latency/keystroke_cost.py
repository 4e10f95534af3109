"""Keystroke cost against file size: one incremental one-character `didChange` plus an automatic inline request,
through the real server over stdio, in documents of 5 KB, 0.3 MB and 2 MB and in a minified file of one 5 MB line
(`--minified`: ASCII, non-ASCII and with emoji); the server's CPU for one `didChange` of 10,000 changes
(`--batch-changes`); and the server's memory with ten 2 MB documents open. Targets (issue 18): median at 2 MB ≤ 1.5 ×
the 5 KB figure and ≤ 5 ms; RSS ≤ 150 MB.

The model is an in-process loopback llama.cpp `/infill` endpoint that answers at once with a fixed suggestion, so
the figures are the server's own cost. The cursor sits on a new line in the middle of the document; each keystroke
types the next character of the suggestion shown, so most requests are answered by typing-through (cache) and one
in every len(suggestion) goes to the loopback model (reported apart: in a big file it also asks `/tokenize` to fit
the prompt budget, which a small file does not need).

Run: python3 -m bench.latency.keystroke_cost [--keystrokes 120] [--sizes 5000,300000,2000000] [--minified 5000000]
[--minified-variants ascii,bmp,astral] [--batch-changes 10000] [--server-root PATH]
`--server-root` runs the server from another checkout (e.g. /work/main) for a before/after comparison.
Prints a table and writes bench/results/keystroke_cost.json (note the load average it records: a busy machine
inflates every figure)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from ..common import lsp_support
from ..common.lsp_support import lsp_server, summary, write_results

SUGGESTION = "compute_total(values, factor=2) + offset_value  # typed through"
LINE = "    result = "


def python_source(size: int) -> str:
    """Plausible Python of about `size` characters (varied names, so no two functions are alike)."""
    parts, total, k = [], 0, 0
    while total < size:
        block = (f"def helper_{k}(values, factor={k % 7}):\n"
                 f"    \"\"\"Scale and sum the values ({k}).\"\"\"\n"
                 f"    total_{k} = 0\n"
                 f"    for index, value in enumerate(values):\n"
                 f"        if index % {k % 5 + 2} == 0:\n"
                 f"            total_{k} += value * factor\n"
                 f"    return total_{k}\n\n\n")
        parts.append(block)
        total += len(block)
        k += 1
    return "".join(parts)


def document(size: int) -> tuple[str, int]:
    """The source with an empty statement line in its middle; returns the text and the cursor's line."""
    source = python_source(size)
    middle = source.rfind("\n\n\n", 0, len(source) // 2) + 3
    head, tail = source[:middle], source[middle:]
    head += "def target(values, offset_value):\n" + LINE
    return head + "\n    return result\n\n\n" + tail, head.count("\n")


#: The repeated statement of each minified variant: ASCII only; non-ASCII of the Basic Multilingual Plane (one UTF-16
#: unit each, as in a bundle's translated strings); and with an emoji (two UTF-16 units: columns ≠ characters).
MINIFIED_UNITS = {"ascii": "var a=1;", "bmp": 'var é="中";', "astral": 'var a="😀";'}


def minified(size: int, variant: str = "ascii") -> tuple[str, int]:
    """One line of about `size` characters (a minified bundle) with `LINE` in its middle; returns the text and the
    cursor's column in UTF-16 units."""
    unit = MINIFIED_UNITS[variant]
    half = unit * (size // (2 * len(unit)))
    head = half + LINE
    return head + half + "\n", len(head.encode("utf-16-le")) // 2


async def start_loopback() -> tuple[asyncio.AbstractServer, str, dict[str, int]]:
    """llama-server's `/infill` (one SSE event with the suggestion, then the stop event) and `/tokenize`."""
    counts = {"infill": 0, "tokenize": 0}

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode()
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length")), 0)
                body = json.loads(await reader.readexactly(length)) if length else {}
                if path == "/tokenize":
                    counts["tokenize"] += 1
                    data = json.dumps({"tokens": [0] * (len(body.get("content", "")) // 4)}).encode()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                                 % (len(data), data))
                elif path == "/infill":
                    counts["infill"] += 1
                    events = [{"content": SUGGESTION, "stop": False, "tokens_predicted": 1},
                              {"content": "", "stop": True, "stop_type": "eos", "tokens_predicted": 1}]
                    data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
                                 % (len(data), data))
                else:
                    data = b'{"status":"ok"}'
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                                 % (len(data), data))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", counts


def options(base_url: str) -> dict[str, Any]:
    return {"completion": {"kind": "llama.cpp/infill", "api_endpoint": base_url,
                           "prompt_template": "{prefix}<fill>{suffix}"},
            "debounce": {"mode": "fixed", "fixed_ms": 0}, "max_tokens": 32, "multiline": "never"}


async def type_through(lsp: lsp_support.Lsp, uri: str, line: int, keystrokes: int, column: int = len(LINE)
                       ) -> dict[str, list[float]]:
    """Round trips (ms) of keystroke = one-character didChange + automatic inline request, split by who answered."""
    times: dict[str, list[float]] = {"typing-through": [], "model": []}
    result = await lsp.request(uri, line, column, invoked=False)  # warm-up: the first suggestion
    shown = result.items[0].insert_text if result.items else ""
    for _ in range(keystrokes):
        char = shown[0] if shown else "x"
        started = time.perf_counter()
        lsp.insert(uri, line, column, char)
        column += 1
        result = await lsp.request(uri, line, column, invoked=False)
        elapsed = (time.perf_counter() - started) * 1000
        times["typing-through" if shown[1:] else "model"].append(elapsed)
        shown = shown[1:] or (result.items[0].insert_text if result.items else "")
    return times


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) the process has used: unlike a round trip, not inflated by waiting for a core."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def synced(lsp: lsp_support.Lsp) -> dict[str, Any]:
    """A request after notifications: its answer means the server has handled them."""
    stats = await lsp.stats()
    return stats if isinstance(stats, dict) else stats._asdict()


async def measure_size(base_url: str, size: int, keystrokes: int, one_line: str = "") -> dict[str, Any]:
    """`one_line`: the minified file (one line of `size` characters, this variant of MINIFIED_UNITS) instead of the
    Python source."""
    if one_line:
        text, column = minified(size, one_line)
        line = 0
    else:
        text, line = document(size)
        column = len(LINE)
    async with lsp_server(options(base_url)) as lsp:
        uri = f"file:///bench/keystroke_{f'minified_{one_line}_' if one_line else ''}{size}.py"
        rss_before = lsp.rss_kb() / 1024
        started = time.perf_counter()
        lsp.open(uri, text)
        await synced(lsp)
        open_ms = (time.perf_counter() - started) * 1000
        cpu_before = cpu_ms(lsp.pid)
        times = await type_through(lsp, uri, line, keystrokes, column)
        stats = await synced(lsp)
        cpu = (cpu_ms(lsp.pid) - cpu_before) / (keystrokes + 1)
        handler = [ms for source, ms in stats["timings"]][1:]
        return {"variant": one_line or "python", "chars": len(text), "lines": text.count("\n") + 1,
                "open_ms": round(open_ms, 1),
                "rss_mb_before_open": round(rss_before, 1), "rss_mb": round(lsp.rss_kb() / 1024, 1),
                "round_trip_ms": summary(times["typing-through"] + times["model"]),
                "typing_through_ms": summary(times["typing-through"]),
                "model_ms": summary(times["model"]) if times["model"] else None,
                "server_handler_ms": summary(handler), "server_cpu_ms_per_keystroke": round(cpu, 3)}


async def measure_batch(base_url: str, changes: int) -> dict[str, Any]:
    """One `didChange` carrying `changes` incremental changes (each a new line typed below the last, as a client
    batching keystrokes or a macro sends them) in a 6 KB document: the server's CPU for the whole notification."""
    async with lsp_server(options(base_url)) as lsp:
        uri = "file:///bench/batch.py"
        lsp.open(uri, "x = 1\n" * 1000)
        await synced(lsp)
        edits = [types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=500 + k, character=0),
                              end=types.Position(line=500 + k, character=0)), text="b\n") for k in range(changes)]
        cpu_before = cpu_ms(lsp.pid)
        lsp.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2), content_changes=edits))
        await synced(lsp)
        cpu = cpu_ms(lsp.pid) - cpu_before
        return {"changes": changes, "server_cpu_ms": round(cpu, 1),
                "server_cpu_us_per_change": round(cpu * 1000 / changes, 1)}


async def measure_memory(base_url: str, size: int, documents: int) -> dict[str, Any]:
    async with lsp_server(options(base_url)) as lsp:
        baseline = lsp.rss_kb() / 1024
        for n in range(documents):
            text, line = document(size)
            uri = f"file:///bench/memory_{n}.py"
            lsp.open(uri, text.replace("helper_", f"helper{n}_"))
            await synced(lsp)
            await type_through(lsp, uri, line, 5)
        await synced(lsp)
        return {"documents": documents, "chars_each": size, "rss_mb_baseline": round(baseline, 1),
                "rss_mb": round(lsp.rss_kb() / 1024, 1)}


async def main(args: argparse.Namespace) -> None:
    if args.server_root:  # `python -m lsp_server` finds the package in the working directory first
        root = str(Path(args.server_root).resolve())
        plain_env = lsp_support.server_env

        def env() -> dict[str, str]:
            return {**plain_env(), "PYTHONPATH": root}
        lsp_support.server_env = env
        os.chdir(root)
    loopback, base_url, counts = await start_loopback()
    results: dict[str, Any] = {"server_root": args.server_root or str(lsp_support.REPO_ROOT),
                               "keystrokes": args.keystrokes, "suggestion_chars": len(SUGGESTION), "sizes": {}}
    try:
        for size in args.sizes:
            results["sizes"][str(size)] = await measure_size(base_url, size, args.keystrokes)
        if args.minified:
            results["minified"] = {variant: await measure_size(base_url, args.minified, args.keystrokes, variant)
                                   for variant in args.minified_variants}
        if args.batch_changes:
            results["batch"] = await measure_batch(base_url, args.batch_changes)
        if args.memory_documents:
            results["memory"] = await measure_memory(base_url, max(args.sizes), args.memory_documents)
    finally:
        loopback.close()
        await loopback.wait_closed()
    results["loopback_requests"] = counts
    sizes = results["sizes"]
    small, big = sizes[str(min(args.sizes))], sizes[str(max(args.sizes))]
    ratio = big["round_trip_ms"]["median"] / small["round_trip_ms"]["median"]
    cpu_ratio = big["server_cpu_ms_per_keystroke"] / max(small["server_cpu_ms_per_keystroke"], 1e-9)
    results["targets"] = {"ratio_big_to_small": round(ratio, 2), "ratio_ok": ratio <= 1.5,
                          "big_median_ok": big["round_trip_ms"]["median"] <= 5.0,
                          "cpu_ratio_big_to_small": round(cpu_ratio, 2)}
    if "memory" in results:
        results["targets"]["rss_ok"] = results["memory"]["rss_mb"] <= 150
    path = write_results("keystroke_cost", results)

    print(f"keystroke = 1-char didChange + automatic inline request, {args.keystrokes} per size "
          f"(server: {results['server_root']})")
    print(f"{'document':>29} | {'round trip median':>17} | {'p90':>7} | {'typing-through med':>18} | "
          f"{'model med':>9} | {'handler med':>11} | {'server CPU':>10} | {'open':>8} | {'RSS':>8}")
    for row in [*sizes.values(), *results.get("minified", {}).values()]:
        model = f"{row['model_ms']['median']:.2f}" if row["model_ms"] else "-"
        print(f"{row['variant']:>6} {row['chars'] / 1e6:>8.3f} MB {row['lines']:>7} ln | "
              f"{row['round_trip_ms']['median']:>14.2f} ms | "
              f"{row['round_trip_ms']['p90']:>7.2f} | {row['typing_through_ms']['median']:>18.2f} | {model:>9} | "
              f"{row['server_handler_ms']['median']:>11.3f} | {row['server_cpu_ms_per_keystroke']:>7.2f} ms | "
              f"{row['open_ms']:>5.0f} ms | {row['rss_mb']:>5.1f} MB")
    print(f"2 MB / 5 KB median round trip: {ratio:.2f} (target ≤ 1.5), server CPU per keystroke: {cpu_ratio:.2f}; "
          f"2 MB median {big['round_trip_ms']['median']:.2f} ms (target ≤ 5 ms)")
    if "batch" in results:
        b = results["batch"]
        print(f"one didChange with {b['changes']} changes: server CPU {b['server_cpu_ms']:.0f} ms "
              f"({b['server_cpu_us_per_change']:.0f} µs a change)")
    if "memory" in results:
        m = results["memory"]
        print(f"RSS with {m['documents']} documents of {m['chars_each'] / 1e6:.1f} MB open: {m['rss_mb']:.1f} MB "
              f"(baseline {m['rss_mb_baseline']:.1f} MB; target ≤ 150 MB)")
    print(f"load average {results_load()}; wrote {path}")


def results_load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keystrokes", type=int, default=120)
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[5000, 300000, 2000000])
    parser.add_argument("--minified", type=int, default=5_000_000,
                        help="characters of the one-line (minified) file; 0 leaves it out")
    parser.add_argument("--minified-variants", type=lambda s: s.split(","), default=list(MINIFIED_UNITS),
                        help=f"which minified files, comma-separated, of {','.join(MINIFIED_UNITS)}")
    parser.add_argument("--batch-changes", type=int, default=10_000,
                        help="changes in one didChange (a new line each, a 6 KB document); 0 leaves it out")
    parser.add_argument("--memory-documents", type=int, default=10, help="documents of the largest size kept open")
    parser.add_argument("--server-root", help="run the server from this checkout instead of this one")
    asyncio.run(main(parser.parse_args()))
