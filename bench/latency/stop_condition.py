"""Per-character cost of the stop-word check as a completion grows: ours (engine.decoding.StopCondition) against the
naive approach (prepend each reversed chunk to the whole reversed text, then look the stop-word trie up from its start,
as Tabby does).

Run: python3 -m bench.latency.stop_condition [--repeats N]. Prints a table and writes bench/results/stop_condition.json.
Target: ours flat (20,000 vs 100 characters within 1.5x) and at least 10x faster than naive at 20,000.

Also the cost of a new place to type at: every request adds the line of code below the cursor to its stop words (the
rejoin word), so a new line below means a new word set. Measured: building the condition and feeding its first chunk
for a new rejoin word, with the language's words in one matcher together with it (`union`) and in their own, already
built matcher (`sets`, what the engine does)."""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

from engine.decoding import StopCondition, stop_condition, stop_trie
from engine.languages import default_table

from ..common.paths import REPO_ROOT, RESULTS_DIR

SIZES = (100, 1_000, 20_000, 200_000)  # the targets are judged at 100 and 20,000; 200,000 shows the trend
CHUNK = 4  # characters per streamed token, about what code models produce
MEASURED = 400  # characters fed (and timed) after reaching each size
PREFIX = "def f(values):\n"  # the end of the document before the completion

_LINES = [
    "    total = compute(values[i], weights[i]) + offset",
    "    if total > limit: break",
    "        result.append(transform(item, scale=2.5))",
    "    for key, value in mapping.items():",
    "        logger.debug('value %s for %s', value, key)",
    "    return sum(x * x for x in values) / len(values)",
    "    name = f\"{prefix}_{index:04d}\"  # label",
]


class NaiveStop:
    """Tabby's check: reverse each chunk, prepend it to the reversed text, look up the longest stop word."""

    def __init__(self, words, prefix_tail: str = ""):
        self.trie = stop_trie(words)
        self.reversed_text = prefix_tail[::-1]
        self.stopped = False

    def feed(self, chunk: str) -> str:
        self.reversed_text = chunk[::-1] + self.reversed_text
        if self.trie.longest_prefix(self.reversed_text):
            self.stopped = True
        return chunk


def code_text(n_chars: int, seed: int = 7) -> str:
    """Python-looking text without stop words (no blank lines, nothing at column 0), so nothing stops early."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < n_chars:
        line = rng.choice(_LINES) + "\n"
        parts.append(line)
        size += len(line)
    return "".join(parts)[:n_chars]


def chunks_of(text: str) -> list[str]:
    return [text[i:i + CHUNK] for i in range(0, len(text), CHUNK)]


def per_char_ns(make, words, text: str, size: int, repeats: int) -> float:
    """Median over `repeats` of the time to feed MEASURED characters once `size` characters were generated.

    Each repeat needs the state after `size` characters. Ours is rebuilt by feeding them to a fresh StopCondition,
    as the engine makes one (a deep copy would do, but Python's attribute access on deep-copied objects is ~3x slower,
    which measured the copy, not the matcher). The naive state is copied field by field: rebuilding it would take
    minutes at 200,000 characters, since every chunk copies the whole text."""
    warm_chunks = chunks_of(text[:size])
    measured = chunks_of(text[size:size + MEASURED])
    naive_warm = None
    if make is NaiveStop:
        naive_warm = make(words, PREFIX)
        for chunk in warm_chunks:
            naive_warm.feed(chunk)
    samples = []
    for _ in range(repeats):
        if naive_warm is not None:
            state = _naive_copy(naive_warm)
        else:
            state = make(words, PREFIX)
            for chunk in warm_chunks:
                state.feed(chunk)
        start = time.perf_counter_ns()
        for chunk in measured:
            state.feed(chunk)
        samples.append((time.perf_counter_ns() - start) / MEASURED)
        assert not state.stopped, "the benchmark text must not contain a stop word"
    return statistics.median(samples)


def _naive_copy(state: NaiveStop) -> NaiveStop:
    out = NaiveStop.__new__(NaiveStop)
    out.trie, out.reversed_text, out.stopped = state.trie, state.reversed_text, state.stopped
    return out


def new_place_ms(words: tuple[str, ...], places: int) -> dict[str, float]:
    """Median ms to build a stop condition for a new rejoin word and feed it one chunk: one matcher over the union,
    or the language's matcher (built once, as in a running server) beside one for the request's words."""
    import re

    out = {}
    for kind in ("union", "sets"):
        times = []
        for i in range(places):
            rejoin = f"\n    {kind}_{i} = compute(values, {i})\n"
            re.purge()  # each new place is new to `re`'s cache too
            started = time.perf_counter()
            if kind == "union":
                StopCondition((*words, rejoin), PREFIX).feed("    x")
            else:
                stop_condition((words, (rejoin,)), PREFIX).feed("    x")
            times.append((time.perf_counter() - started) * 1000.0)
        out[kind] = round(statistics.median(times), 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "stop_condition.json")
    args = parser.parse_args(argv)

    words = default_table().lookup("python").stop_words()
    text = code_text(max(SIZES) + MEASURED)
    rows = []
    for size in SIZES:
        ours = per_char_ns(StopCondition, words, text, size, args.repeats)
        naive = per_char_ns(NaiveStop, words, text, size, args.repeats)
        rows.append({"generated_chars": size, "ours_ns_per_char": round(ours, 1),
                     "naive_ns_per_char": round(naive, 1), "speedup": round(naive / ours, 1)})

    at = {row["generated_chars"]: row for row in rows}
    flatness = at[20_000]["ours_ns_per_char"] / at[100]["ours_ns_per_char"]
    speedup = at[20_000]["speedup"]
    print(f"stop-word check, {len(words)} python stop words, {CHUNK}-char chunks, median of {args.repeats} runs")
    print(f"{'generated':>10} | {'ours ns/char':>12} | {'naive ns/char':>13} | {'naive/ours':>10}")
    print("-" * 55)
    for row in rows:
        print(f"{row['generated_chars']:>10,} | {row['ours_ns_per_char']:>12.1f} | {row['naive_ns_per_char']:>13.1f} |"
              f" {row['speedup']:>9.1f}x")
    place = new_place_ms(words, max(20, min(args.repeats, 200)))
    print(f"a new place to type at (a new rejoin word): {place['union']:.2f} ms with one matcher over the union, "
          f"{place['sets']:.2f} ms with the language's matcher kept apart")
    flat_ok, fast_ok = flatness <= 1.5, speedup >= 10
    print(f"ours at 20,000 vs 100: {flatness:.2f}x (target <= 1.5: {'met' if flat_ok else 'NOT met'});"
          f" naive/ours at 20,000: {speedup:.1f}x (target >= 10: {'met' if fast_ok else 'NOT met'})")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "benchmark": "stop_condition", "chunk_chars": CHUNK, "measured_chars": MEASURED, "repeats": args.repeats,
        "stop_words": len(words), "python": platform.python_version(), "machine": platform.machine(),
        "rows": rows, "ours_20000_vs_100": round(flatness, 2), "speedup_at_20000": speedup,
        "new_place_ms": place,
        "targets_met": flat_ok and fast_ok,
    }, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(REPO_ROOT) if args.out.is_relative_to(REPO_ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
