"""Cost of post-processing per keystroke: `before_cache` + `after_cache` + `replace_range_end` on items of growing
size and shape, in a 40,000-line document (the filters must only look near the cursor).

Run: python3 -m bench.latency.postprocess_speed [--repeats N]. Prints a table and writes
bench/results/postprocess_speed.json.
Target: a typical item (a few lines) well under 1 ms; any item bounded (no quadratic growth with its length)."""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time

from lsp_server.postprocess import PostprocessContext, after_cache, before_cache, replace_range_end

from ..common.paths import REPO_ROOT, RESULTS_DIR


def _items(rng: random.Random) -> dict[str, str]:
    base = [rng.choice("abcdefghij ") for _ in range(400)]
    noisy = []
    for _ in range(200):
        line = base[:]
        for _ in range(15):
            line[rng.randrange(400)] = rng.choice("abcdefghij ")
        noisy.append("    " + "".join(line))
    return {
        "typical 3 lines": "if x > 0:\n        return x * 2\n    return -x",
        "200 distinct lines": "\n".join(f"    v{i} = h({i}) + {rng.random()}" for i in range(200)),
        "200 identical-ish lines": "\n".join(f"    value = compute(alpha, beta, gamma, {i})" for i in range(200)),
        "60 repeated blocks": "\n\n".join(f"def t{i}():\n    assert f({i}) == {i}" for i in range(60)),
        "one 20k-char line": "x = " + "".join(rng.choice("abc(),;' ") for _ in range(20_000)),
        "adversarial 200x400 near-same": "\n".join(noisy),
    }


def measure(text: str, repeats: int) -> dict[str, float]:
    prefix = "".join(f"    line_{i} = compute({i}, value_{i % 7})\n" for i in range(20_000)) + "def f(x):\n    "
    suffix = ")\n" + "".join(f"    other_{i} = g({i})\n" for i in range(20_000))
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        ctx = PostprocessContext(prefix, suffix, "python")  # fresh: derived views are computed per keystroke
        kept = before_cache(text, ctx)
        if kept is not None:
            kept = after_cache(kept, ctx)
            if kept is not None:
                replace_range_end(kept, ctx)
        timings.append((time.perf_counter() - start) * 1000)
    timings.sort()
    return {"median_ms": statistics.median(timings), "max_ms": timings[-1], "chars": len(text)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    rng = random.Random(7)
    results = {name: measure(text, args.repeats) for name, text in _items(rng).items()}
    print(f"{'item':32} {'chars':>7} {'median ms':>10} {'max ms':>8}")
    for name, row in results.items():
        print(f"{name:32} {row['chars']:7} {row['median_ms']:10.2f} {row['max_ms']:8.2f}")
    out = RESULTS_DIR / "postprocess_speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"python": platform.python_version(), "repeats": args.repeats, "results": results},
                              indent=2))
    print(f"wrote {out.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
