"""Overhead of the LSP path: median latency of an inline request through the server (JSON-RPC over stdio,
documents, context, engine, post-processing) vs the same prompt sent straight to llama-server's `/infill`, same model,
same `n_predict`, both streamed. Target: ratio ≤ 1.05.

Each iteration uses a new cursor context (so the LSP cache cannot answer) and the two paths alternate, so
llama-server's prompt cache helps both alike. With the tiny model every request yields exactly `n_predict` tokens
(its control tokens never win and it emits no newlines), so both paths generate the same amount.

Run: python3 -m bench.latency.lsp_overhead [--model PATH.gguf|default] [--n-predict 32] [--iterations 30]
Prints a table and writes bench/results/lsp_overhead.json."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

import httpx

from ..common.lsp_support import llama_server, lsp_server, summary, tiny_model_path, write_results

BASE = ("import math\n\n\ndef area(radius):\n    return math.pi * radius ** 2\n\n\n"
        "def run_{i}(values):\n    total_{i} = ")
SUFFIX = "\n    return total_{i}\n"


async def direct(http: httpx.AsyncClient, prefix: str, suffix: str, n_predict: int,
                 stop: list[str] | None = None) -> tuple[float, int]:
    """Straight to llama-server: `/infill` for a FIM model; for a prefix-only model (the default Gemma) the same
    prompt Infill sends (the prefix) to `/completion`, with Infill's stop words applied server-side so that both
    paths generate the same tokens."""
    if stop is None:
        path = "/infill"
        body = {"input_prefix": prefix, "input_suffix": suffix}
    else:
        path = "/completion"
        body = {"prompt": prefix, "stop": stop}
    body.update({"n_predict": n_predict, "temperature": 0.0, "stream": True, "cache_prompt": True})
    started = time.perf_counter()
    tokens = 0
    async with http.stream("POST", path, json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                tokens = event.get("tokens_predicted", tokens)
                if event.get("stop"):
                    break
    return (time.perf_counter() - started) * 1000, tokens


async def main(args: argparse.Namespace) -> None:
    stop: list[str] | None = None
    if args.model == "default":
        from engine.languages import default_table
        from engine.models.default import default_model_path
        from engine.models.registry import model_cache_dir

        model = default_model_path(model_cache_dir(None))
        kind = "llama.cpp/completion"  # no FIM tokens: prefix-only, as Infill runs the default model
        stop = list(default_table().lookup("python").stop_words())
    else:
        model = Path(args.model) if args.model else tiny_model_path()
        kind = "llama.cpp/infill"
    async with llama_server(model) as server:
        options = {"completion": {"kind": kind, "api_endpoint": server.base_url},
                   "max_tokens": args.n_predict, "temperature": 0.0, "multiline": "always"}
        async with lsp_server(options) as lsp, httpx.AsyncClient(base_url=server.base_url, timeout=120) as http:
            lsp_ms: list[float] = []
            empty = 0
            direct_ms: list[float] = []
            for i in range(args.iterations + args.warmup):
                prefix, suffix = BASE.format(i=i), SUFFIX.format(i=i)
                uri = f"file:///bench/overhead_{i}.py"
                lsp.open(uri, prefix + suffix)
                line = prefix.count("\n")
                column = len(prefix.rsplit("\n", 1)[-1])
                order = ("lsp", "direct") if i % 2 == 0 else ("direct", "lsp")
                for which in order:
                    if which == "lsp":
                        started = time.perf_counter()
                        result = await lsp.request(uri, line, column)
                        elapsed = (time.perf_counter() - started) * 1000
                        if i >= args.warmup:
                            lsp_ms.append(elapsed)
                        # Each iteration is a fresh context, so this was a model call even when the clean-up
                        # dropped the suggestion (the default model's text sometimes is).
                        empty += 0 if result.items else 1
                    else:
                        elapsed, tokens = await direct(http, prefix, suffix, args.n_predict, stop)
                        if i >= args.warmup:
                            direct_ms.append(elapsed)
                lsp.close(uri)
            stats = await lsp.stats()
    handler_ms = [ms for source, ms in getattr(stats, "timings", []) if source == "model"][-len(lsp_ms):]
    ratio = statistics.median(lsp_ms) / statistics.median(direct_ms)
    # Paired by iteration (same prompt, adjacent in time), so drifts in machine load cancel out.
    paired = statistics.median(a - b for a, b in zip(lsp_ms, direct_ms))
    paired_ratio = statistics.median(a / b for a, b in zip(lsp_ms, direct_ms))
    print(f"model: {model.name}, n_predict {args.n_predict}, {args.iterations} iterations")
    print(f"{'path':<10}{'median ms':>12}{'p90 ms':>10}{'min ms':>10}")
    for name, values in (("LSP", lsp_ms), ("direct", direct_ms)):
        s = summary(values)
        print(f"{name:<10}{s['median']:>12.1f}{s['p90']:>10.1f}{s['min']:>10.1f}")
    if handler_ms:
        print(f"time inside the server's handler (engine, context, post-processing): median "
              f"{statistics.median(handler_ms):.1f} ms; the rest of the LSP path is JSON-RPC over stdio")
    if empty:
        print(f"{empty} LSP answers were empty after post-processing (the model was called all the same)")
    print(f"ratio of medians (LSP / direct): {ratio:.3f}  (target ≤ 1.05)")
    print(f"paired per iteration: median ratio {paired_ratio:.3f}, median extra {paired:+.1f} ms")
    path = write_results("lsp_overhead", {"model": str(model), "n_predict": args.n_predict,
                                          "lsp_ms": summary(lsp_ms), "direct_ms": summary(direct_ms),
                                          "ratio": ratio, "paired_median_ratio": paired_ratio,
                                          "paired_median_extra_ms": paired, "target_ratio": 1.05,
                                          "handler_ms": summary(handler_ms) if handler_ms else None})
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a .gguf with FIM tokens, or `default` for the embedded Gemma 3 270M "
                        "(prefix-only; default: the tiny test model)")
    parser.add_argument("--n-predict", type=int, default=32)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
