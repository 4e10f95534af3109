"""Typing through a shown suggestion: the user types the characters the ghost text shows, one at a time, and each
keystroke's automatic request must be answered from the suggestion (no model call). Reports the latency of those
answers. Target: p99 ≤ 5 ms.

The latency is measured at the client as the round trip of the request over stdio (request sent → response parsed),
which bounds the server-side time from above; every answer is checked to be the rest of the suggestion.

Run: python3 -m bench.latency.lsp_typing_through [--documents 20] [--chars 40]
Prints a table and writes bench/results/lsp_typing_through.json."""

from __future__ import annotations

import argparse
import asyncio
import time

from ..common.lsp_support import llama_server, lsp_server, summary, tiny_model_path, write_results


def _field(obj, name):
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


async def main(args: argparse.Namespace) -> None:
    async with llama_server(tiny_model_path()) as server:
        options = {"completion": {"kind": "llama.cpp/infill", "api_endpoint": server.base_url},
                   "max_tokens": 24, "temperature": 0.0, "multiline": "never"}
        async with lsp_server(options) as lsp:
            latencies: list[float] = []
            misses = 0
            for d in range(args.documents):
                uri = f"file:///bench/typing_{d}.py"
                prefix = f"def handler_{d}(event):\n    message = "
                lsp.open(uri, prefix + "\n")
                line, column = 1, len("    message = ")
                shown = await lsp.request(uri, line, column)
                if not shown.items:
                    continue
                suggestion = shown.items[0].insert_text
                for k, ch in enumerate(suggestion[: args.chars]):
                    lsp.insert(uri, line, column + k, ch)
                    started = time.perf_counter()
                    result = await lsp.request(uri, line, column + k + 1, invoked=False)
                    elapsed = (time.perf_counter() - started) * 1000
                    rest = suggestion[k + 1:]
                    if not rest:
                        break
                    if result.items and result.items[0].insert_text == rest:
                        latencies.append(elapsed)
                    else:
                        misses += 1
                lsp.close(uri)
            stats = await lsp.stats()
    server_side = [ms for source, ms in _field(stats, "timings") if source == "typing-through"]
    s = summary(latencies)
    ss = summary(server_side)
    print(f"typing-through answers: {s['n']} (misses: {misses})")
    print(f"{'measured at':<28}{'median ms':>10}{'p90 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, v in (("server (handler)", ss), ("client round trip (stdio)", s)):
        print(f"{name:<28}{v['median']:>10.2f}{v['p90']:>10.2f}{v['p99']:>10.2f}{v['max']:>10.2f}")
    print("target: server-side p99 ≤ 5 ms")
    path = write_results("lsp_typing_through", {"server_ms": ss, "round_trip_ms": s, "misses": misses,
                                                "target_p99_ms": 5.0})
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--chars", type=int, default=40)
    asyncio.run(main(parser.parse_args()))
