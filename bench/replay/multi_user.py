"""Several users on one shared model server: N accepting-user typing replays at the same time, each through its own
`infill serve --stdio`, all against ONE llama-server over HTTP (the `llama.cpp/*` kinds, as a team would point every
developer's Infill at one server), each user on a different file.

Why: speculation multiplies requests (prefetch, warm-ups). On a server of one's own that is free; on a shared one
every guess may take the slot another user's keystroke needs. This measures what each user gets and what the
server sees, for our pipeline (`ours`, whose speculation asks the server first and yields:
engine/backends/shared_server.py), the pipeline without speculation (`nospec`) and the naive one (`naive`).

Per user and overall: keystrokes saved, keystroke → suggestion p50/p95, whole accept → next suggestion, model calls
and prefilled tokens per shown suggestion, requests answered. Server side, sampled every --sample-ms from `/slots`
and `/metrics`: slot occupancy, deferred (queued) requests, and how often a request was deferred while a slot ran a
speculative request (marked by its seed, engine.backends.llama_cpp.SPECULATIVE_SEED): "a user request waits
behind a guess". Sampling can miss short events; the counts are lower bounds.

    python3 -m bench.replay.multi_user                         # N = 1, 2, 4, 8; ours, nospec, naive
    python3 -m bench.replay.multi_user --users 1 --users 4 --variant ours --variant nospec --max-keystrokes 80
    python3 -m bench.replay.multi_user --max-keystrokes 600 --repeat 2    # two runs a cell, pooled
    python3 -m bench.replay.multi_user --smoke                 # tiny model, 2 users, a few keystrokes

The user and its timing are the accepting user's (bench/accepting_user.py); the replay code is imported, not
copied. `--parallel` is llama-server's slot count (default: one per user, as a team sizing its server would set it;
each slot gets --slot-ctx tokens)."""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.replay.accepting_user import AcceptRun, replay_file_accepting, summarise_accepting
from bench.replay.editing import _percentile
from bench.replay.typing_replay import VARIANTS, ReplayClient, default_files, warm_up

from bench.common.paths import write_report
SMOKE_KEYSTROKES = 10
#: p95 keystroke → suggestion above this is where a team has outgrown the server (the issue's line).
P95_LIMIT_MS = 1000.0
#: Samples behind a guess whose slot details are kept.
DETAIL_KEPT = 50


# ---------------------------------------------------------------------------------------------------------------------
# The server side


@dataclass
class ServerSamples:
    """What the shared llama-server reported while the users typed."""

    slots: int = 0
    samples: int = 0
    busy_sum: int = 0
    all_busy: int = 0
    deferred_samples: int = 0
    deferred_max: int = 0
    #: Samples where a request was deferred while at least one slot ran a speculative request.
    deferred_behind_guess: int = 0
    guess_busy_sum: int = 0
    failed: int = 0
    #: The first samples behind a guess, with what each guess slot was doing (prefill or decoding): which kind of
    #: guess a rule has to hold.
    behind_guess_detail: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: ServerSamples) -> None:
        """Pool another run's samples into these (`--repeat`)."""
        self.slots = other.slots or self.slots
        self.deferred_max = max(self.deferred_max, other.deferred_max)
        for name in ("samples", "busy_sum", "all_busy", "deferred_samples", "deferred_behind_guess",
                     "guess_busy_sum", "failed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.behind_guess_detail += other.behind_guess_detail[:DETAIL_KEPT - len(self.behind_guess_detail)]

    def summary(self) -> dict[str, Any]:
        n = self.samples or 1
        return {"slots": self.slots, "samples": self.samples,
                "occupancy_share": 100.0 * self.busy_sum / (n * max(1, self.slots)),
                "all_slots_busy_share": 100.0 * self.all_busy / n,
                "deferred_share": 100.0 * self.deferred_samples / n, "deferred_max": self.deferred_max,
                "deferred_behind_guess_samples": self.deferred_behind_guess,
                "guess_slot_share": 100.0 * self.guess_busy_sum / (n * max(1, self.slots)),
                "failed_samples": self.failed, "behind_guess_detail": self.behind_guess_detail}


async def sample_server(url: str, stop: asyncio.Event, every_s: float, out: ServerSamples) -> None:
    import httpx

    from engine.backends.llama_cpp import SPECULATIVE_SEED
    from engine.backends.shared_server import parse_metrics

    async with httpx.AsyncClient(trust_env=False, timeout=2.0) as http:
        while not stop.is_set():
            try:
                slots = (await http.get(url + "/slots")).json()
                metrics = parse_metrics((await http.get(url + "/metrics")).text)
            except Exception:
                out.failed += 1
            else:
                busy = [s for s in slots if isinstance(s, dict) and s.get("is_processing")]
                guesses = sum(1 for s in busy if (s.get("params") or {}).get("seed") == SPECULATIVE_SEED)
                deferred = int(metrics.get("requests_deferred", 0))
                out.slots = len(slots)
                out.samples += 1
                out.busy_sum += len(busy)
                out.all_busy += len(busy) == len(slots)
                out.guess_busy_sum += guesses
                if deferred:
                    out.deferred_samples += 1
                    out.deferred_max = max(out.deferred_max, deferred)
                    out.deferred_behind_guess += guesses > 0
                    if guesses and len(out.behind_guess_detail) < DETAIL_KEPT:
                        out.behind_guess_detail.append(guess_detail(slots, deferred, SPECULATIVE_SEED))
            try:
                await asyncio.wait_for(stop.wait(), every_s)
            except asyncio.TimeoutError:
                pass


def guess_detail(slots: list[Any], deferred: int, seed: int) -> dict[str, Any]:
    """One sample behind a guess: each busy slot's prompt size, what of it was prefilled, tokens decoded."""
    busy = []
    for s in slots:
        if not isinstance(s, dict) or not s.get("is_processing"):
            continue
        decoded = [t.get("n_decoded") for t in s.get("next_token") or () if isinstance(t, dict)]
        busy.append({"guess": (s.get("params") or {}).get("seed") == seed, "prompt": s.get("n_prompt_tokens"),
                     "prefilled": s.get("n_prompt_tokens_processed"), "cached": s.get("n_prompt_tokens_cache"),
                     "decoded": decoded[0] if decoded else None})
    return {"at": time.monotonic(), "deferred": deferred, "busy": busy}


async def server_metrics(url: str) -> dict[str, float]:
    import httpx

    from engine.backends.shared_server import parse_metrics

    async with httpx.AsyncClient(trust_env=False, timeout=5.0) as http:
        return parse_metrics((await http.get(url + "/metrics")).text)


# ---------------------------------------------------------------------------------------------------------------------
# The users


@dataclass
class UserPlan:
    index: int
    path: Path
    start_fraction: float


def plan_users(files: list[Path], count: int, start_fraction: float) -> list[UserPlan]:
    """A different file per user; when there are more users than files, later users type another region of the same
    files (a team works on different parts of a code base)."""
    return [UserPlan(i, files[i % len(files)], min(0.9, start_fraction + 0.2 * (i // len(files))))
            for i in range(count)]


async def run_users(url: str, kind: str, variant: str, plans: list[UserPlan], args: argparse.Namespace
                    ) -> tuple[list[dict[str, Any]], ServerSamples, dict[str, float], dict[str, float]]:
    """All users of one (N, variant) cell, started together once every server has completed a warm-up request."""
    from engine.config import merge

    settings = merge({"completion": {"kind": kind, "apiEndpoint": url}}, VARIANTS[variant])
    clients = [ReplayClient(settings) for _ in plans]
    runs = [AcceptRun(variant=variant, settings=settings) for _ in plans]
    samples = ServerSamples()
    stop = asyncio.Event()
    try:
        await asyncio.gather(*(rc.start() for rc in clients))
        await asyncio.gather(*(warm_up(rc, args) for rc in clients))
        for rc, run in zip(clients, runs):
            run.stats_before = await rc.stats()
        before = await server_metrics(url)
        sampler = asyncio.ensure_future(sample_server(url, stop, args.sample_ms / 1000.0, samples))
        started = time.perf_counter()

        async def one(rc: ReplayClient, run: AcceptRun, plan: UserPlan) -> None:
            user_args = copy.copy(args)
            user_args.start_fraction = plan.start_fraction
            await replay_file_accepting(rc, plan.path, plan.index, user_args, run)
            run.seconds = time.perf_counter() - started

        await asyncio.gather(*(one(rc, run, plan) for rc, run, plan in zip(clients, runs, plans)))
        stop.set()
        await sampler
        after = await server_metrics(url)
        for rc, run in zip(clients, runs):
            run.stats_after = await rc.stats()
    finally:
        stop.set()
        await asyncio.gather(*(rc.stop() for rc in clients), return_exceptions=True)
    users = []
    for plan, run in zip(plans, runs):
        summary = summarise_accepting(run)
        server = (run.stats_after or {}).get("server") or {}
        server_before = (run.stats_before or {}).get("server") or {}
        for key in ("prefetch_held", "prefetch_yielded"):
            summary["prefetch"][key] = server.get(key, 0) - server_before.get(key, 0)
        calls = summary["model_calls_per_100_actions"]
        shown = summary["shown_per_100_actions"]
        summary["model_calls_per_shown"] = calls / shown if calls is not None and shown else None
        summary["file"] = plan.path.name
        summary["latencies_ms"] = [r.latency_ms for r in run.requests if r.text and r.latency_ms is not None]
        summary["accept_next_ms"] = [a.next_latency_ms for a in run.accepts
                                     if a.whole and a.next_latency_ms is not None]
        users.append(summary)
    return users, samples, before, after


def overall(users: list[dict[str, Any]], before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    latencies = [v for u in users for v in u["latencies_ms"]]
    next_ms = [v for u in users for v in u["accept_next_ms"]]
    saved = [u["keystrokes_saved_share"] for u in users if u["keystrokes_saved_share"] is not None]
    shown = sum(u["shown_per_100_actions"] * u["actions"] / 100.0 for u in users)
    calls = sum((u["model_calls_per_100_actions"] or 0.0) * u["actions"] / 100.0 for u in users)
    requests = sum(u["requests"] for u in users)
    answered = sum(u["requests"] * (u["answered_share"] or 0.0) / 100.0 for u in users)

    def delta(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    compute_s = delta("prompt_seconds_total") + delta("tokens_predicted_seconds_total")
    return {
        "users": len(users),
        "keystrokes_saved_share_mean": statistics.fmean(saved) if saved else None,
        "keystrokes_saved_share_min": min(saved) if saved else None,
        "latency_ms_median": statistics.median(latencies) if latencies else None,
        "latency_ms_p95": _percentile(latencies, 0.95),
        "accept_to_next_ms_median": statistics.median(next_ms) if next_ms else None,
        "accept_to_next_ms_p95": _percentile(next_ms, 0.95),
        "model_calls_per_shown": calls / shown if shown else None,
        "prefilled_tokens_total": delta("prompt_tokens_total"),
        "prefilled_tokens_per_shown": delta("prompt_tokens_total") / shown if shown else None,
        "generated_tokens_total": delta("tokens_predicted_total"),
        "model_calls": calls,
        "server_compute_s": compute_s,
        "server_compute_ms_per_call": 1000.0 * compute_s / calls if calls else None,
        "answered_share": 100.0 * answered / requests if requests else None,
        "prefetch_held": sum(u["prefetch"].get("prefetch_held") or 0 for u in users),
        "prefetch_yielded": sum(u["prefetch"].get("prefetch_yielded") or 0 for u in users),
        "prefetch_started": sum(u["prefetch"].get("prefetch_started") or 0 for u in users),
        "seconds": max((u["seconds"] for u in users), default=0.0),
        **demand(users, delta("prompt_tokens_total"), delta("tokens_predicted_total"), calls),
    }


def demand(users: list[dict[str, Any]], prompt_tokens: float, generated_tokens: float, calls: float
           ) -> dict[str, float | None]:
    """What one typing user asks of the server per minute: the measure that carries over to other hardware (a
    server's capacity in tokens per second divided by it is how many users it serves), unlike this CPU's
    milliseconds per call."""
    user_minutes = sum(u["seconds"] for u in users) / 60.0
    if user_minutes <= 0:
        return {"calls_per_user_minute": None, "prompt_tokens_per_user_minute": None,
                "generated_tokens_per_user_minute": None}
    return {"calls_per_user_minute": calls / user_minutes,
            "prompt_tokens_per_user_minute": prompt_tokens / user_minutes,
            "generated_tokens_per_user_minute": generated_tokens / user_minutes}


# ---------------------------------------------------------------------------------------------------------------------
# The whole run


def files_and_model(args: argparse.Namespace, smoke_keystrokes: int) -> tuple[list[Path], Any]:
    """The files the users type and the resolved model (`engine.models.ResolvedModel`) of a replay of several
    editors; `--smoke` takes the tiny test model (unless one is named) and at most `smoke_keystrokes`."""
    from engine.config import EngineConfig, ModelConfig
    from engine.models import resolve_model

    files = [Path(f) for f in args.files] or default_files()
    if args.smoke:
        from bench.quality.suites import smoke_model_path

        args.model = args.model or str(smoke_model_path())
        args.max_keystrokes = min(args.max_keystrokes, smoke_keystrokes)
    cfg = ModelConfig(model=args.model)
    return files, resolve_model(cfg, EngineConfig(completion=cfg))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from engine.backends.llama_cpp import supports_infill
    from engine.config import LocalServerSettings
    from engine.local.binary import require_llama_server
    from engine.local.supervisor import LlamaServerSupervisor

    files, model = files_and_model(args, SMOKE_KEYSTROKES)
    binary = require_llama_server(args.binary)
    cells: dict[str, dict[str, Any]] = {}
    pooled: dict[str, tuple[list[dict[str, Any]], ServerSamples, dict[str, float]]] = {}
    for count in args.users:
        parallel = args.parallel or max(2, count)
        # A fixed thread count: a team's server is not restarted by Infill's thread policy (which, counting the
        # users' own servers as other programs, restarted it mid-run, so that the users lost their server).
        settings = LocalServerSettings(parallel=parallel, ctx_size=parallel * args.slot_ctx,
                                       threads=args.threads or os.cpu_count() or 2,
                                       extra_args=("--metrics", *args.server_arg))
        plans = plan_users(files, count, args.start_fraction)
        for repeat in range(args.repeat):
            # Repeats alternate the variants' order, so a drift in the machine's load falls on each alike.
            for variant in (args.variant if repeat % 2 == 0 else list(reversed(args.variant))):
                # A fresh server per cell: the users type the same regions in every variant, so a variant run
                # after another found its prompts in the slots' cache already (nospec after ours: 77 prompt tokens
                # evaluated against ours' 6,089 at N = 4), which made the comparison one of cold against warm caches.
                supervisor = LlamaServerSupervisor(binary, model.path, settings)
                url = supervisor.start_blocking()
                try:
                    kind = "llama.cpp/infill" if await supports_infill(url) else "llama.cpp/completion"
                    if not args.quiet:
                        print(f"N={count} (--parallel {parallel}) {variant}, run {repeat + 1} of {args.repeat}: "
                              f"{len(plans)} user(s) typing…", file=sys.stderr, flush=True)
                    users, samples, before, after = await run_users(url, kind, variant, plans, args)
                finally:
                    supervisor.stop_blocking()
                key = f"{count}/{variant}"
                all_users, all_samples, deltas = pooled.setdefault(key, ([], ServerSamples(), {}))
                all_users.extend(users)
                all_samples.add(samples)
                for name in set(before) | set(after):
                    deltas[name] = deltas.get(name, 0.0) + after.get(name, 0.0) - before.get(name, 0.0)
                cells[key] = {"users_n": count, "variant": variant, "parallel": parallel, "kind": kind,
                              "runs": repeat + 1, "per_user": all_users, "overall": overall(all_users, {}, deltas),
                              "server": all_samples.summary()}
    return {"benchmark": "multi_user", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "cpus": os.cpu_count(), "loadavg_end": os.getloadavg()},
            "config": {"users": args.users, "variants": args.variant, "files": [str(f) for f in files],
                       "model": str(model.path), "max_keystrokes": args.max_keystrokes, "cps": args.cps,
                       "parallel": args.parallel, "slot_ctx": args.slot_ctx, "threads": args.threads,
                       "repeat": args.repeat,
                       "smoke": bool(args.smoke)},
            "cells": cells, "targets": targets(cells)}


def targets(cells: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The issue's targets, per N: ours ≥ nospec in keystrokes saved per user, ours ≤ nospec in p95; requests
    deferred behind a guess; the largest N whose p95 stays under P95_LIMIT_MS."""
    out: dict[str, Any] = {"per_n": {}, "largest_n_under_1s": None}
    counts = sorted({c["users_n"] for c in cells.values()})
    for n in counts:
        ours, nospec = cells.get(f"{n}/ours"), cells.get(f"{n}/nospec")
        row: dict[str, Any] = {}
        if ours is not None:
            row["ours_p95_ms"] = ours["overall"]["latency_ms_p95"]
            row["deferred_behind_guess_samples"] = ours["server"]["deferred_behind_guess_samples"]
            p95 = ours["overall"]["latency_ms_p95"]
            if p95 is not None and p95 <= P95_LIMIT_MS:
                out["largest_n_under_1s"] = n
        if ours is not None and nospec is not None:
            a, b = ours["overall"], nospec["overall"]
            row["saved_ours_ge_nospec"] = (a["keystrokes_saved_share_mean"] or 0) >= (
                b["keystrokes_saved_share_mean"] or 0)
            row["p95_ours_le_nospec"] = p95_not_worse(a["latency_ms_p95"], b["latency_ms_p95"])
        out["per_n"][str(n)] = row
    return out


def p95_not_worse(ours: float | None, nospec: float | None) -> bool | None:
    """Ours' p95 keystroke → suggestion against nospec's. A p95 is taken over the suggestions shown, so a variant
    that showed none has none: its users waited for ever, which no p95 of ours is worse than. None: neither
    showed anything, nothing to compare."""
    if nospec is None:
        return None if ours is None else True
    return ours is not None and ours <= nospec


def _fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def format_table(report: dict[str, Any]) -> str:
    head = ("| N | variant | saved % (mean / min) | p50 / p95 ms | accept → next p50 / p95 ms | calls / shown | "
            "prefill tok / shown | answered % | slot occupancy % | deferred % (max) | deferred behind a guess | "
            "held / yielded / started |")
    lines = [head, "|" + "---|" * 12]
    for cell in report["cells"].values():
        o, s = cell["overall"], cell["server"]
        lines.append(
            f"| {cell['users_n']} | {cell['variant']} | {_fmt(o['keystrokes_saved_share_mean'], 1)} / "
            f"{_fmt(o['keystrokes_saved_share_min'], 1)} | {_fmt(o['latency_ms_median'])} / "
            f"{_fmt(o['latency_ms_p95'])} | {_fmt(o['accept_to_next_ms_median'])} / "
            f"{_fmt(o['accept_to_next_ms_p95'])} | {_fmt(o['model_calls_per_shown'], 2)} | "
            f"{_fmt(o['prefilled_tokens_per_shown'], 1)} | {_fmt(o['answered_share'], 1)} | "
            f"{_fmt(s['occupancy_share'], 1)} | {_fmt(s['deferred_share'], 1)} ({s['deferred_max']}) | "
            f"{s['deferred_behind_guess_samples']} | {o['prefetch_held']} / {o['prefetch_yielded']} / "
            f"{o['prefetch_started']} |")
    lines.append("")
    lines.append("Per user and minute of typing (calls · prompt tokens evaluated · tokens generated):")
    for cell in report["cells"].values():
        o = cell["overall"]
        lines.append(f"  N={cell['users_n']} {cell['variant']}: {_fmt(o.get('calls_per_user_minute'), 1)} · "
                     f"{_fmt(o.get('prompt_tokens_per_user_minute'))} · "
                     f"{_fmt(o.get('generated_tokens_per_user_minute'))}")
    lines.append("")
    lines.append("Per user (saved % · p95 ms · file):")
    for cell in report["cells"].values():
        users = "; ".join(f"{u['file']} {_fmt(u['keystrokes_saved_share'], 1)} % · {_fmt(u['latency_ms_p95'])}"
                          for u in cell["per_user"])
        lines.append(f"  N={cell['users_n']} {cell['variant']}: {users}")
    t = report["targets"]
    lines.append("")
    lines.append(f"largest N with ours' p95 ≤ {P95_LIMIT_MS:.0f} ms: {t['largest_n_under_1s']}")
    for n, row in t["per_n"].items():
        lines.append(f"  N={n}: {row}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m bench.replay.multi_user", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="source files, one per user in turn (default: the replay files)")
    parser.add_argument("--users", type=int, action="append", help="users at once (repeatable; default 1 2 4 8)")
    parser.add_argument("--variant", action="append", choices=("ours", "nospec", "naive"),
                        help="default: ours, nospec, naive")
    parser.add_argument("--parallel", type=int, help="llama-server slots (default: one per user, at least 2)")
    parser.add_argument("--slot-ctx", type=int, default=2048, help="context tokens per slot (default 2048)")
    parser.add_argument("--threads", type=int, help="llama-server --threads (default: one per core)")
    parser.add_argument("--model", help="GGUF path or model id (default: the embedded Gemma 3 270M)")
    parser.add_argument("--binary", help="llama-server binary (default: Infill's discovery)")
    parser.add_argument("--server-arg", action="append", default=[], metavar="ARG", help="extra llama-server argument")
    parser.add_argument("--cps", type=float, default=10.0, help="typing speed per user (default 10)")
    parser.add_argument("--line-pause", type=float, default=1.0)
    parser.add_argument("--max-keystrokes", type=int, default=120, help="keystrokes per user (default 120)")
    parser.add_argument("--start-fraction", type=float, default=0.3)
    parser.add_argument("--accept-pause", type=float, default=0.5)
    parser.add_argument("--min-accept", type=int, default=2)
    parser.add_argument("--no-report-shown", dest="report_shown", action="store_false")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each cell, a fresh server each, the variants' order alternating; the figures "
                             "pool them (a p95 over more suggestions; default 1)")
    parser.add_argument("--sample-ms", type=float, default=50.0, help="server sampling interval (default 50 ms)")
    parser.add_argument("--ready-timeout", type=float, default=300.0)
    parser.add_argument("--answer-timeout", type=float, default=60.0)
    parser.add_argument("--smoke", action="store_true", help="tiny model, 1 and 2 users, ours and nospec")
    parser.add_argument("--output", type=Path, help="JSON file (default bench/results/multi-user-<time>.json)")
    parser.add_argument("--quiet", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.smoke:
        args.users = args.users or [1, 2]
        args.variant = args.variant or ["ours", "nospec"]
    args.users = args.users or [1, 2, 4, 8]
    args.variant = args.variant or ["ours", "nospec", "naive"]
    report = asyncio.run(run(args))
    output = write_report(report, args.output, "multi-user")
    print(format_table(report))
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}; wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
