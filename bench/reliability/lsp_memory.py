"""Memory of the LSP process (llama-server not counted: it is another process): resident set size after 1,000
inline requests over many documents, sampled every 100 requests. Target: ≤ 100 MB and no growth after warm-up.

The requests mix model calls on new cursor contexts (which fill the LRU cache up to its bound), cache hits and
typing-through, on documents that are opened, edited and closed, so every per-document structure is exercised.

Run: python3 -m bench.reliability.lsp_memory [--requests 1000]
Prints a table and writes bench/results/lsp_memory.json."""

from __future__ import annotations

import argparse
import asyncio

from ..common.lsp_support import llama_server, lsp_server, tiny_model_path, write_results

WARMUP = 200


async def main(args: argparse.Namespace) -> None:
    samples: list[tuple[int, float]] = []
    async with llama_server(tiny_model_path()) as server:
        options = {"completion": {"kind": "llama.cpp/infill", "api_endpoint": server.base_url},
                   "max_tokens": 8, "temperature": 0.0, "multiline": "never"}
        async with lsp_server(options) as lsp:
            samples.append((0, lsp.rss_kb() / 1024))
            done = 0
            doc = 0
            while done < args.requests:
                doc += 1
                uri = f"file:///bench/memory_{doc % 40}.py"
                body = "".join(f"def helper_{doc}_{k}(value):\n    return value * {k}\n\n" for k in range(30))
                prefix = body + f"def target_{doc}(x):\n    result = "
                lsp.open(uri, prefix + "\n")
                line, column = prefix.count("\n"), len("    result = ")
                for step in range(5):
                    if done >= args.requests:
                        break
                    if step == 0 or step == 3:  # a model call, then the same context again (cache)
                        result = await lsp.request(uri, line, column)
                        text = result.items[0].insert_text if result.items else ""
                    elif text:  # typing through the suggestion
                        lsp.insert(uri, line, column, text[0])
                        column += 1
                        text = text[1:]
                        await lsp.request(uri, line, column, invoked=False)
                    else:
                        await lsp.request(uri, line, column)
                    done += 1
                    if done % 100 == 0:
                        samples.append((done, lsp.rss_kb() / 1024))
                lsp.close(uri)
            stats = await lsp.stats()
    print(f"{'requests':>10}{'RSS MB':>10}")
    for n, mb in samples:
        print(f"{n:>10}{mb:>10.1f}")
    warm = [mb for n, mb in samples if n >= WARMUP]
    growth = warm[-1] - warm[0]
    final = samples[-1][1]
    print(f"final RSS {final:.1f} MB (target ≤ 100), growth after {WARMUP} requests: {growth:+.1f} MB")
    model_calls = stats["model_calls"] if isinstance(stats, dict) else stats.model_calls
    print(f"model calls: {model_calls} of {args.requests} requests")
    path = write_results("lsp_memory", {"requests": args.requests, "samples_mb": samples, "final_mb": final,
                                        "growth_after_warmup_mb": growth, "warmup_requests": WARMUP,
                                        "model_calls": model_calls, "target_mb": 100.0})
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    asyncio.run(main(parser.parse_args()))
