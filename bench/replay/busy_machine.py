"""A busy machine: the model server's speed and the typing replay beside CPU-heavy work, for several thread policies of
the supervised llama-server, so that the policy Infill ships is chosen by measurement.

Why: a developer's machine compiles, tests and indexes while they type. llama.cpp's generation threads meet at a
barrier after every layer; when another process holds a core, a thread that lost its core holds up the others, and
spinning while waiting (`--poll`) takes CPU the late thread needs. The issue measured 60 tokens/s idle with two
threads, 24 beside one busy process, 15 beside two; with one thread 40 / 41 / 23.

Loads: `idle`, `busy1` (one busy loop: a job that keeps one core busy), `busy2` (one per core of a 2-core machine),
`compile` (the C compiler in a loop on a generated file, two jobs). Policies are llama-server flags given through
`completion.local.extra_args`; `infill` is what the supervisor picks itself (engine/local/supervisor.py
`thread_args`), so the shipped policy is measured beside the alternatives.

Two parts:
- speed: for each load and policy, a fresh llama-server and --speed-runs completions of 64 tokens (not cached):
  median generation and prompt tokens/s (as the issue measured);
- replay: for each load and --replay-policy, the typing replay (passive user, ours) through `infill serve --stdio`
  with its own supervised llama-server: keystroke → suggestion p50/p95, suggestions shown, answered.

    python3 -m bench.replay.busy_machine                         # both parts, idle / busy1 / busy2
    python3 -m bench.replay.busy_machine --part speed --load idle --load busy1 --policy t1 --policy t2
    python3 -m bench.replay.busy_machine --smoke                 # tiny model, a few keystrokes

Busy loops and compilers are started and stopped by this command; every timing run should hold
`flock /tmp/infill-bench.lock` (the machine is shared: other load adds to the one measured)."""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from bench.common.paths import scratch_dir, write_report

#: llama-server flags per policy name. `infill`: none (the supervisor's own choice).
POLICIES: dict[str, list[str]] = {
    "infill": [],
    "default": ["--threads", "-1"],  # llama-server's own default: as many threads as cores
    "t2": ["--threads", "2"],
    "t1": ["--threads", "1"],
    "t1b2": ["--threads", "1", "--threads-batch", "2"],
    "t2poll0": ["--threads", "2", "--poll", "0"],
    "t1b2poll0": ["--threads", "1", "--threads-batch", "2", "--poll", "0"],
}
LOADS = ("idle", "busy1", "busy2", "compile")
BUSY_LOOP = "while True:\n    pass\n"


# ---------------------------------------------------------------------------------------------------------------------
# Load generators (started and stopped here; never left running)


def _compile_source(directory: Path) -> Path:
    """A C file that takes the compiler a few seconds at -O2 (many small functions)."""
    path = directory / "busy.c"
    body = "\n".join(f"int f{i}(int x) {{ int s = 0; for (int j = 0; j < x; j++) s += (j * {i}) ^ (s >> 3); "
                     f"return s; }}" for i in range(3000))
    path.write_text(body + "\nint main(void) { return f1(3); }\n")
    return path


@contextmanager
def load(kind: str) -> Iterator[list[subprocess.Popen]]:
    procs: list[subprocess.Popen] = []
    scratch = Path(scratch_dir("infill-busy-"))
    try:
        if kind in ("busy1", "busy2"):
            for _ in range(1 if kind == "busy1" else 2):
                procs.append(subprocess.Popen([sys.executable, "-c", BUSY_LOOP]))
        elif kind == "compile":
            source = _compile_source(scratch)
            loop = f"while :; do cc -O2 -c {source} -o {scratch}/busy.o 2>/dev/null || exit 1; done"
            for _ in range(2):
                procs.append(subprocess.Popen(["sh", "-c", loop], start_new_session=True))
        elif kind != "idle":
            raise ValueError(f"unknown load {kind!r} (one of {', '.join(LOADS)})")
        time.sleep(0.5 if procs else 0.0)  # let the load take its cores
        yield procs
    finally:
        for proc in procs:
            if kind == "compile":
                try:
                    os.killpg(proc.pid, 15)
                except ProcessLookupError:
                    pass
            else:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


# ---------------------------------------------------------------------------------------------------------------------
# Part 1: the server's speed


def measure_speed(binary: str, model: Path, policy: list[str], runs: int, n_predict: int = 64) -> dict[str, Any]:
    from engine.config import LocalServerSettings
    from engine.local.supervisor import LlamaServerSupervisor
    from lsp_server.commands.doctor import measure_completion

    supervisor = LlamaServerSupervisor(binary, model, LocalServerSettings(parallel=1, extra_args=tuple(policy)))
    url = supervisor.start_blocking()
    try:
        results = [measure_completion(url, fim=False, prompt_template=None, n_predict=n_predict)
                   for _ in range(runs)]
    finally:
        supervisor.stop_blocking()
    gen = [r.generated_per_second for r in results if r.generated_per_second]
    prompt = [r.prompt_per_second for r in results if r.prompt_per_second]
    return {"generated_tok_s": statistics.median(gen) if gen else None,
            "prompt_tok_s": statistics.median(prompt) if prompt else None,
            "first_token_s": statistics.median([r.first_token_seconds for r in results
                                                if r.first_token_seconds is not None] or [0.0]),
            "server_args": policy}


# ---------------------------------------------------------------------------------------------------------------------
# Part 2: the typing replay


async def measure_replay(files: list[Path], policy: list[str], args: argparse.Namespace) -> dict[str, Any]:
    from bench.replay import typing_replay

    replay_args = typing_replay.build_parser().parse_args(
        [str(f) for f in files] + ["--max-keystrokes", str(args.max_keystrokes), "--quiet"]
        + (["--model", args.model] if args.model else []) + (["--binary", args.binary] if args.binary else [])
        + [f"--server-arg={a}" for a in policy])
    result = await typing_replay.run_variant("ours", files, replay_args, typing_replay.model_settings(replay_args))
    summary = typing_replay.summarise(result)
    return {key: summary[key] for key in ("latency_ms_median", "latency_ms_p95", "shown_per_100_keystrokes",
                                          "answered_share", "keystrokes", "model_calls_per_100_keystrokes")}


# ---------------------------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    from engine.config import EngineConfig, ModelConfig
    from engine.local.binary import require_llama_server
    from engine.models import resolve_model

    if args.smoke:
        from bench.quality.suites import smoke_model_path

        args.model = args.model or str(smoke_model_path())
    cfg = ModelConfig(model=args.model)
    model = resolve_model(cfg, EngineConfig(completion=cfg)).path
    binary = require_llama_server(args.binary)
    from bench.replay.typing_replay import default_files

    files = [Path(f) for f in args.files] or default_files()[:args.replay_files]
    speed: dict[str, dict[str, Any]] = {}
    replay: dict[str, dict[str, Any]] = {}
    for kind in args.load:
        with load(kind):
            started = os.getloadavg()[0]
            if args.part in ("both", "speed"):
                for name in args.policy:
                    speed[f"{kind}/{name}"] = {**measure_speed(binary, model, POLICIES[name], args.speed_runs,
                                                               args.n_predict),
                                               "load": kind, "policy": name, "loadavg_at_start": started}
                    if not args.quiet:
                        row = speed[f"{kind}/{name}"]
                        print(f"speed {kind:8} {name:10} gen {row['generated_tok_s']:.1f} tok/s, prompt "
                              f"{row['prompt_tok_s']:.1f} tok/s", file=sys.stderr, flush=True)
            if args.part in ("both", "replay"):
                for name in args.replay_policy:
                    replay[f"{kind}/{name}"] = {**asyncio.run(measure_replay(files, POLICIES[name], args)),
                                                "load": kind, "policy": name, "loadavg_at_start": started}
                    if not args.quiet:
                        row = replay[f"{kind}/{name}"]
                        print(f"replay {kind:8} {name:10} p50 {row['latency_ms_median']} p95 "
                              f"{row['latency_ms_p95']}", file=sys.stderr, flush=True)
    return {"benchmark": "busy_machine", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "cpus": os.cpu_count(), "loadavg_end": os.getloadavg()},
            "config": {"model": str(model), "loads": args.load, "policies": args.policy,
                       "replay_policies": args.replay_policy, "files": [str(f) for f in files],
                       "max_keystrokes": args.max_keystrokes, "speed_runs": args.speed_runs,
                       "n_predict": args.n_predict,
                       "smoke": bool(args.smoke)},
            "speed": speed, "replay": replay, "ratios": ratios(replay)}


def ratios(replay: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """p95 beside each load against idle, per policy (the target: ≤ 2 beside one busy core)."""
    out: dict[str, Any] = {}
    for key, row in replay.items():
        idle = replay.get(f"idle/{row['policy']}")
        if idle is None or row["load"] == "idle" or not idle.get("latency_ms_p95") or row["latency_ms_p95"] is None:
            continue
        out[key] = row["latency_ms_p95"] / idle["latency_ms_p95"]
    return out


def _fmt(value: Any, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def format_tables(report: dict[str, Any]) -> str:
    lines = []
    if report["speed"]:
        lines += ["| load | policy | generation tok/s | prompt tok/s | first token (s) | load avg at start |",
                  "|---|---|---|---|---|---|"]
        for row in report["speed"].values():
            lines.append(f"| {row['load']} | {row['policy']} | {_fmt(row['generated_tok_s'], 1)} | "
                         f"{_fmt(row['prompt_tok_s'], 1)} | {_fmt(row['first_token_s'], 3)} | "
                         f"{row['loadavg_at_start']:.1f} |")
    if report["replay"]:
        lines += ["", "| load | policy | keystroke → suggestion p50 / p95 (ms) | p95 / idle p95 | shown / 100 | "
                      "answered % |", "|---|---|---|---|---|---|"]
        for key, row in report["replay"].items():
            ratio = report["ratios"].get(key)
            lines.append(f"| {row['load']} | {row['policy']} | {_fmt(row['latency_ms_median'])} / "
                         f"{_fmt(row['latency_ms_p95'])} | {_fmt(ratio, 2)} | "
                         f"{_fmt(row['shown_per_100_keystrokes'], 1)} | {_fmt(row['answered_share'], 1)} |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m bench.replay.busy_machine", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="files for the replay (default: the first --replay-files)")
    parser.add_argument("--part", choices=("both", "speed", "replay"), default="both")
    parser.add_argument("--load", action="append", choices=LOADS, help="default: idle, busy1, busy2")
    parser.add_argument("--policy", action="append", choices=list(POLICIES),
                        help="speed part (default: infill, t2, t1, t1b2, t2poll0, t1b2poll0)")
    parser.add_argument("--replay-policy", action="append", choices=list(POLICIES),
                        help="replay part (default: infill, t2)")
    parser.add_argument("--speed-runs", type=int, default=3, help="completions per speed cell (default 3)")
    parser.add_argument("--n-predict", type=int, default=64, help="tokens per speed completion (default 64)")
    parser.add_argument("--replay-files", type=int, default=2, help="default files replayed (default 2)")
    parser.add_argument("--max-keystrokes", type=int, default=100, help="per file (default 100)")
    parser.add_argument("--model", help="GGUF path or model id (default: the embedded Gemma 3 270M)")
    parser.add_argument("--binary", help="llama-server binary")
    parser.add_argument("--smoke", action="store_true", help="tiny model, idle and busy1, few keystrokes")
    parser.add_argument("--output", type=Path, help="JSON file (default bench/results/busy-machine-<time>.json)")
    parser.add_argument("--quiet", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.smoke:
        args.load = args.load or ["idle", "busy1"]
        args.policy = args.policy or ["infill", "t1"]
        args.replay_policy = args.replay_policy or ["infill"]
        args.max_keystrokes = min(args.max_keystrokes, 8)
        args.replay_files = 1
        args.speed_runs = 1
    args.load = args.load or ["idle", "busy1", "busy2"]
    args.policy = args.policy or ["infill", "t2", "t1", "t1b2", "t2poll0", "t1b2poll0"]
    args.replay_policy = args.replay_policy or ["infill", "t2"]
    report = run(args)
    output = write_report(report, args.output, "busy-machine")
    print(format_tables(report))
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} (the machine is shared); wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
