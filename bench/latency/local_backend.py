"""Speed of the local backend: llama-server started by Infill's supervisor, for the default model (Gemma 3 270M) and
the tiny random-weight test model.

For each model: time from launch to a healthy `/health`, then for a short (~120-token) and a long (~1000-token)
prompt, `--runs` streamed completions of `--n-predict` tokens each (prompt cache off, so every run pays the full
prefill): time to first token, and prompt / generation tokens per second as llama-server reports them in `timings`.
Medians are reported. The server's peak resident memory comes from /proc/PID/status (VmHWM), polled while it runs.

Run: python3 -m bench.latency.local_backend [--models default,tiny] [--runs 3] [--n-predict 64].
Prints a table and writes bench/results/local_backend.json. Needs llama-server (see scripts/setup.sh)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from engine.config import EngineConfig, LocalServerSettings, ModelConfig
from engine.local.binary import binary_version, require_llama_server
from engine.local.supervisor import LlamaServerSupervisor
from engine.models import resolve_model
from lsp_server.commands.doctor import measure_completion

from ..common.paths import REPO_ROOT, RESULTS_DIR

RESULTS = RESULTS_DIR / "local_backend.json"
#: Code to complete: the start of a real source file of this repository, cut at a line end.
SOURCE = REPO_ROOT / "engine" / "config.py"
PROMPTS = {"short": 400, "long": 3600}  # characters of prefix, about 120 and 1000 tokens
SUFFIX = "\n\n# end of module\n"


def _prefix(chars: int) -> str:
    text = SOURCE.read_text(encoding="utf-8")[:chars]
    return text[: text.rfind("\n") + 1] + "    "


class PeakRss:
    """Polls VmHWM (the kernel's own high-water mark of resident memory) of one process."""

    def __init__(self, pid: int, interval: float = 0.05):
        self.pid = pid
        self.interval = interval
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _read(self) -> None:
        try:
            with open(f"/proc/{self.pid}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))
        except (OSError, ValueError):
            pass

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self._read()

    def __enter__(self) -> "PeakRss":
        self._read()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._read()
        self._stop.set()
        self._thread.join()


def _model_path(name: str, workdir: Path) -> tuple[Path, bool, str | None]:
    """(file, use /infill, prompt template) for a benchmark model name."""
    if name == "default":
        resolved = resolve_model(ModelConfig(), EngineConfig())
        return resolved.path, resolved.has_fim and not resolved.prompt_template, resolved.prompt_template
    if name == "tiny":
        from tests.fixtures.tiny_model import build_tiny_model

        return build_tiny_model(workdir / "tiny-fim.gguf"), True, None
    resolved = resolve_model(ModelConfig(model=name), EngineConfig())
    return resolved.path, resolved.has_fim and not resolved.prompt_template, resolved.prompt_template


def bench_model(name: str, binary: str, workdir: Path, runs: int, n_predict: int) -> dict:
    path, fim, template = _model_path(name, workdir)
    settings = LocalServerSettings(parallel=1, ctx_size=4096, start_timeout=120.0)
    supervisor = LlamaServerSupervisor(binary, path, settings)
    started = time.perf_counter()
    try:
        base_url = supervisor.start_blocking()
        healthy = time.perf_counter() - started
        row = {"model": name, "file": path.name, "size_mb": round(path.stat().st_size / 1e6, 1),
               "endpoint": "/infill" if fim else "/completion", "healthy_s": round(healthy, 3), "cases": {}}
        with PeakRss(supervisor.pid) as rss:
            measure_completion(base_url, fim=fim, prompt_template=template, n_predict=4)  # warm-up
            for case, chars in PROMPTS.items():
                results = [measure_completion(base_url, fim=fim, prompt_template=template, prefix=_prefix(chars),
                                              suffix=SUFFIX, n_predict=n_predict) for _ in range(runs)]
                row["cases"][case] = {
                    "prompt_tokens": results[0].prompt_tokens,
                    "generated_tokens": results[0].generated_tokens,
                    "first_token_s": round(statistics.median(r.first_token_seconds or r.total_seconds
                                                             for r in results), 3),
                    "prompt_tok_per_s": round(statistics.median(r.prompt_per_second for r in results), 1),
                    "generated_tok_per_s": round(statistics.median(r.generated_per_second for r in results), 1),
                }
        row["peak_rss_mb"] = round(rss.peak_kb / 1024, 1)
        return row
    finally:
        supervisor.stop_blocking()


def _table(rows: list[dict]) -> str:
    header = ("model", "prompt", "healthy s", "1st token s", "prompt tok", "prompt tok/s", "gen tok", "gen tok/s",
              "peak RSS MB")
    lines = [header]
    for row in rows:
        for case, c in row["cases"].items():
            lines.append((row["model"], case, f"{row['healthy_s']:.2f}", f"{c['first_token_s']:.3f}",
                          str(c["prompt_tokens"]), f"{c['prompt_tok_per_s']:.1f}", str(c["generated_tokens"]),
                          f"{c['generated_tok_per_s']:.1f}", f"{row['peak_rss_mb']:.0f}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.rjust(w) if i > 1 else cell.ljust(w) for i, (cell, w) in
                               enumerate(zip(line, widths))) for line in lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="default,tiny", help="comma-separated: default, tiny, or a model setting")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--n-predict", type=int, default=64)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    binary = require_llama_server(None)
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="infill-bench-") as tmp:
        for name in args.models.split(","):
            print(f"benchmarking {name}…", file=sys.stderr, flush=True)
            rows.append(bench_model(name.strip(), binary, Path(tmp), args.runs, args.n_predict))
    print(_table(rows))
    print(f"(1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on "
          f"{os.cpu_count()} CPUs: other work on the machine slows every figure)")
    result = {
        "benchmark": "local_backend", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "llama_server": binary_version(binary), "cpu_count": os.cpu_count(), "machine": platform.machine(),
        "python": platform.python_version(), "runs": args.runs, "n_predict": args.n_predict,
        "load_average_1min": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "note": "medians; prompt cache off; parallel=1, ctx 4096; the machine may be shared, so figures are noisy",
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
