"""Cancellation reaches the model: time from a superseding request (same document) to the older generation stopping
on llama-server, observed by polling its `/slots` endpoint. Target: ≤ 100 ms.

Each round starts a long generation (several hundred tokens on the tiny model), waits until llama-server has produced a
few tokens, then sends a newer request for the same document answered from the cache, so the only generation that
should still run is the superseded one; the time until its slot is idle is the figure.

Run: python3 -m bench.reliability.lsp_cancellation [--rounds 20]
Prints a table and writes bench/results/lsp_cancellation.json."""

from __future__ import annotations

import argparse
import asyncio
import time

import httpx

from ..common.lsp_support import llama_server, lsp_server, summary, tiny_model_path, write_results

BUDGET = 1500
#: With the tiny model at temperature 0 this line's completion runs for several hundred tokens before a stop word.
LONG_TEXT = "def job_2(x):\n    y = \n"
#: (how long exactly depends a little on llama-server's cache state; rounds where it ends first are not counted)


def processing(slots: list[dict]) -> list[dict]:
    return [s for s in slots if s.get("is_processing")]


async def main(args: argparse.Namespace) -> None:
    stop_ms: list[float] = []
    answer_ms: list[float] = []
    decoded_at_stop: list[int] = []
    inconclusive = 0
    async with llama_server(tiny_model_path()) as server:
        options = {"completion": {"kind": "llama.cpp/infill", "api_endpoint": server.base_url},
                   "max_tokens": BUDGET, "temperature": 0.0, "multiline": "never"}
        async with lsp_server(options) as lsp, httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
            for r in range(args.rounds):
                uri = f"file:///bench/cancel_{r}.py"
                lsp.open(uri, LONG_TEXT)
                await lsp.request(uri, 0, 4)  # cache an answer at 0:4 (a short line rest: a quick generation)
                older = asyncio.ensure_future(lsp.request(uri, 1, 8))
                busy = []
                while not older.done():  # wait until the older request is generating
                    busy = processing((await http.get("/slots")).json())
                    if busy and busy[0].get("next_token", [{}])[0].get("n_decoded", 0) >= 5:
                        break
                    await asyncio.sleep(0.002)
                if not busy or older.done():
                    inconclusive += 1  # the generation ended (stop word) before it could be superseded
                    await older
                    lsp.close(uri)
                    continue
                slot = busy[0]["id"]
                decoded = busy[0].get("next_token", [{}])[0].get("n_decoded", 0)
                started = time.perf_counter()
                await lsp.request(uri, 0, 4)  # superseding request, served from the cache
                while True:
                    slots = {s["id"]: s for s in (await http.get("/slots")).json()}
                    if not slots[slot].get("is_processing"):
                        break
                    decoded = slots[slot].get("next_token", [{}])[0].get("n_decoded", 0)
                    await asyncio.sleep(0.002)
                stopped = (time.perf_counter() - started) * 1000
                result = await older
                if result.items:  # it had finished before the newer request was read
                    inconclusive += 1
                    lsp.close(uri)
                    continue
                answer_ms.append((time.perf_counter() - started) * 1000)
                stop_ms.append(stopped)
                decoded_at_stop.append(decoded)
                lsp.close(uri)
    s, a = summary(stop_ms), summary(answer_ms)
    print(f"{args.rounds} rounds ({inconclusive} inconclusive: the generation ended before it was superseded)")
    print(f"{'':<36}{'median ms':>10}{'p90 ms':>10}{'max ms':>10}")
    print(f"{'superseded → slot idle on server':<36}{s['median']:>10.1f}{s['p90']:>10.1f}{s['max']:>10.1f}")
    print(f"{'superseded → old request answered':<36}{a['median']:>10.1f}{a['p90']:>10.1f}{a['max']:>10.1f}")
    print(f"tokens the old slot had decoded when last seen: max {max(decoded_at_stop)}")
    print("target: slot idle ≤ 100 ms")
    path = write_results("lsp_cancellation", {"rounds": args.rounds, "budget_tokens": BUDGET, "stop_ms": s,
                                              "old_answered_ms": a, "max_decoded_when_stopped": max(decoded_at_stop),
                                              "inconclusive_rounds": inconclusive,
                                              "target_ms": 100.0})
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    asyncio.run(main(parser.parse_args()))
