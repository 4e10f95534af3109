"""Several editors on one machine: N `infill serve --stdio` processes (one per editor window) with `kind = "local"`
and the same model, with `completion.local.share` on (one llama-server for all: engine/local/shared.py) against off
(each process runs its own).

Why: every editor window is an `infill serve` process. Without sharing each starts its own llama-server, a copy of
the model and of its caches in memory and one more server taking the same cores; with sharing the first runs it and
the others use it. This measures what that costs and saves.

Scenarios:
- `one-typing` (default): editor 1 types (the accepting user of bench/replay/accepting_user.py on its own file); the
  others are idle windows: initialized, each with another file open;
- `all-typing`: every editor types its own file at the same time.

Per cell (scenario, N, share on/off), all processes fresh and one fresh run directory (`INFILL_RUN_DIR`) for the
cell's editors: the editors are started one after another, each once the previous one is ready (as a user opens a
second window), then the typing starts. Measured:
- llama-server processes: children of the cell's editors whose command line names the model (from /proc), while
  all editors run, and how many were seen in all (a thread-policy restart starts a new one);
- their resident memory, sampled every --sample-s (0.5 s) in a thread of its own: the peak of the sum of VmRSS, and
  of the sum of Pss (/proc/PID/smaps_rollup). The model file is mapped, so two servers of one model share its pages
  in the page cache: VmRSS counts them in each server, Pss divides them between them (the memory really used). The
  editors' own VmRSS is sampled too;
- spawn → `ready` status (infill/didChangeStatus) of every editor, the 2nd..Nth being what sharing changes;
- for the typing editor(s): keystroke → suggestion p50/p95, keystrokes saved, suggestions shown, requests
  answered, model calls (the counters of bench/replay/typing_replay_server.py, which is `infill serve --stdio` plus
  a read-only stats request);
- the machine's load average at the cell's start and end.

Each cell runs --repeat times and the runs are pooled; share on and off alternate which goes first, per N and per
repeat, so that a drift in the machine's load falls on both alike.

    python3 -m bench.replay.several_editors                                   # N = 1 2 3, one-typing
    python3 -m bench.replay.several_editors --editors 2 --scenario all-typing
    python3 -m bench.replay.several_editors --max-keystrokes 150 --repeat 2
    python3 -m bench.replay.several_editors --smoke                           # tiny model, N = 1 2, few keystrokes

A timing benchmark: run it alone on the machine, under `flock /tmp/infill-bench.lock` when other jobs share it."""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common.paths import write_report
from bench.replay.accepting_user import AcceptRun, replay_file_accepting, summarise_accepting
from bench.replay.editing import LANGUAGE_IDS, _delta, _percentile
from bench.replay.multi_user import _fmt, files_and_model, plan_users
from bench.replay.typing_replay import VARIANTS, ReplayClient, model_settings, warm_up

SCENARIOS = ("one-typing", "all-typing")
SMOKE_KEYSTROKES = 8


# ---------------------------------------------------------------------------------------------------------------------
# The llama-servers of the cell's editors, from /proc


def _args(pid: int) -> list[str]:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().decode("utf-8", "replace").split("\0")


def _status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as f:
        return dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)


def _kb(fields: dict[str, str], name: str) -> int:
    value = fields.get(name, "").split()
    return int(value[0]) if value else 0


def pss_kb(pid: int) -> int:
    """Proportional set size: resident pages, shared ones divided between the processes that map them."""
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def is_llama_server_of(args: list[str], model: Path) -> bool:
    """A llama-server command line whose model (`-m`) is `model`."""
    if not args or not Path(args[0]).name.startswith("llama-server") or "-m" not in args:
        return False
    index = args.index("-m") + 1
    return index < len(args) and Path(args[index]).resolve() == model.resolve()


def llama_servers(model: Path, editors: list[int]) -> list[int]:
    """Running (not zombie) llama-servers of `model` that are children of the `editors` processes (one scan of
    /proc: about a millisecond)."""
    parents = set(editors)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            if not is_llama_server_of(_args(pid), model):
                continue
            fields = _status(pid)
        except OSError:  # gone meanwhile
            continue
        if _kb(fields, "PPid") in parents and not fields.get("State", "").strip().startswith("Z"):
            found.append(pid)
    return sorted(found)


@dataclass
class MemorySamples:
    """What the sampler saw over one cell (sizes in kB)."""

    samples: int = 0
    servers_max: int = 0
    servers_last: int = 0
    pids_seen: set[int] = field(default_factory=set)
    #: pid → its `--threads` (the supervisor's thread policy chooses it at start: "?" when the command line has none).
    threads: dict[int, str] = field(default_factory=dict)
    rss_peak_kb: int = 0
    pss_peak_kb: int = 0
    anon_peak_kb: int = 0
    editors_rss_peak_kb: int = 0
    #: Sum of the llama-servers' and the editors' Pss at one sample, the peak: the cell's memory.
    total_pss_peak_kb: int = 0

    def take(self, model: Path, editors: list[int]) -> list[int]:
        """One sample; the llama-servers running now."""
        servers = llama_servers(model, editors)
        rss = pss = anon = editors_rss = editors_pss = 0
        for pid in servers:
            try:
                fields = _status(pid)
                rss += _kb(fields, "VmRSS")
                anon += _kb(fields, "RssAnon")
                pss += pss_kb(pid)
            except OSError:
                continue
        for pid in editors:
            try:
                editors_rss += _kb(_status(pid), "VmRSS")
                editors_pss += pss_kb(pid)
            except OSError:
                continue
        self.samples += 1
        self.servers_last = len(servers)
        self.servers_max = max(self.servers_max, len(servers))
        self.pids_seen.update(servers)
        for pid in servers:
            if pid not in self.threads:
                try:
                    args = _args(pid)
                except OSError:
                    continue
                self.threads[pid] = args[args.index("--threads") + 1] if "--threads" in args[:-1] else "?"
        self.rss_peak_kb = max(self.rss_peak_kb, rss)
        self.pss_peak_kb = max(self.pss_peak_kb, pss)
        self.anon_peak_kb = max(self.anon_peak_kb, anon)
        self.editors_rss_peak_kb = max(self.editors_rss_peak_kb, editors_rss)
        self.total_pss_peak_kb = max(self.total_pss_peak_kb, pss + editors_pss)
        return servers

    def summary(self) -> dict[str, Any]:
        return {"samples": self.samples, "llama_servers_max": self.servers_max,
                "llama_server_pids_seen": len(self.pids_seen),
                "llama_server_threads": [self.threads[pid] for pid in sorted(self.threads)],
                "llama_rss_peak_mb": self.rss_peak_kb / 1024.0, "llama_pss_peak_mb": self.pss_peak_kb / 1024.0,
                "llama_anon_peak_mb": self.anon_peak_kb / 1024.0,
                "editors_rss_peak_mb": self.editors_rss_peak_kb / 1024.0,
                "total_pss_peak_mb": self.total_pss_peak_kb / 1024.0}


class Sampler:
    """Samples the cell's processes every `every_s` in a thread of its own, so that reading /proc does not hold up the
    event loop whose timestamps the typing latencies are."""

    def __init__(self, model: Path, every_s: float) -> None:
        self.model = model
        self.every_s = every_s
        self.editors: list[int] = []
        self.memory = MemorySamples()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="several-editors-sampler", daemon=True)
        self._lock = threading.Lock()

    def add_editor(self, pid: int) -> None:
        with self._lock:
            self.editors.append(pid)

    def sample_now(self) -> list[int]:
        """One sample at once; the llama-servers running now."""
        with self._lock:
            return self.memory.take(self.model, list(self.editors))

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            with self._lock:
                self.memory.take(self.model, list(self.editors))

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


# ---------------------------------------------------------------------------------------------------------------------
# The editors of one cell


@dataclass
class Editor:
    index: int
    path: Path
    start_fraction: float
    typing: bool
    rc: ReplayClient | None = None
    pid: int = 0
    spawned: float = 0.0
    ready_ms: float | None = None
    ready_detail: str = ""
    run: AcceptRun | None = None


async def wait_ready(rc: ReplayClient, timeout: float) -> dict[str, Any]:
    """The first `ready` status of the editor (its arrival time is recorded by ReplayClient); an `error` status or no
    ready status within `timeout` raises."""
    end = time.perf_counter() + timeout
    while True:
        for status in rc.status:
            if status["kind"] == "ready":
                return status
            if status["kind"] == "error":
                raise RuntimeError(f"several editors: an editor reported an error: {status['message']} "
                                   f"({status.get('detail')})")
        if time.perf_counter() > end:
            seen = "; ".join(f"{s['kind']}: {s['message']}" for s in rc.status) or "no status received"
            raise RuntimeError(f"several editors: no ready status within {timeout:.0f} s; statuses: {seen}")
        await asyncio.sleep(0.01)


def open_idle_file(editor: Editor) -> None:
    """An idle window: the file open, nothing typed."""
    from lsprotocol import types

    assert editor.rc is not None
    editor.rc.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=f"file:///infill-replay/idle-{editor.index}/{editor.path.name}",
        language_id=LANGUAGE_IDS.get(editor.path.suffix, "plaintext"), version=1,
        text=editor.path.read_text(encoding="utf-8"))))


def role(detail: str) -> str:
    """Who runs the editor's model server, from its ready status's detail (engine/local/shared.py describe())."""
    if "this process runs the model server" in detail:
        return "owner"
    if "using the llama-server started by" in detail:
        return "attached"
    return "own"


async def run_cell(scenario: str, count: int, share: bool, files: list[Path], model: Path,
                   args: argparse.Namespace) -> dict[str, Any]:
    """One cell: `count` fresh editors with one fresh run directory, share on or off."""
    from engine.config import merge

    settings = merge(merge(model_settings(args), VARIANTS["ours"]), {"completion": {"local": {"share": share}}})
    run_dir = tempfile.mkdtemp(prefix="infill-several-editors-")
    env = dict(os.environ, INFILL_RUN_DIR=run_dir)
    editors = [Editor(p.index, p.path, p.start_fraction, scenario == "all-typing" or p.index == 0)
               for p in plan_users(files, count, args.start_fraction)]
    load_start = os.getloadavg()
    servers_all_up: list[int] = []
    left: list[int] = []
    sampler = Sampler(model, args.sample_s)
    with sampler:
        try:
            for editor in editors:
                editor.rc = ReplayClient(settings, env=env)
                editor.spawned = time.perf_counter()
                await editor.rc.start()
                editor.pid = editor.rc.client._server.pid  # type: ignore[attr-defined]
                sampler.add_editor(editor.pid)
                ready = await wait_ready(editor.rc, args.ready_timeout)
                editor.ready_ms = (ready["at"] - editor.spawned) * 1000.0
                editor.ready_detail = str(ready.get("detail") or "")
                if editor.typing:
                    await warm_up(editor.rc, args)
                else:
                    open_idle_file(editor)
            servers_all_up = await asyncio.to_thread(sampler.sample_now)
            typing = [e for e in editors if e.typing]
            for editor in typing:
                assert editor.rc is not None
                editor.run = AcceptRun(variant="ours", settings=settings)
                editor.run.stats_before = await editor.rc.stats()
            started = time.perf_counter()

            async def type_file(editor: Editor) -> None:
                assert editor.rc is not None and editor.run is not None
                user_args = copy.copy(args)
                user_args.start_fraction = editor.start_fraction
                await replay_file_accepting(editor.rc, editor.path, editor.index, user_args, editor.run)
                editor.run.seconds = time.perf_counter() - started

            await asyncio.gather(*(type_file(e) for e in typing))
            for editor in typing:
                assert editor.rc is not None and editor.run is not None
                editor.run.stats_after = await editor.rc.stats()
            await asyncio.to_thread(sampler.sample_now)
        finally:
            await asyncio.gather(*(e.rc.stop() for e in editors if e.rc is not None), return_exceptions=True)
            left = await servers_left(model, sampler)
            shutil.rmtree(run_dir, ignore_errors=True)  # the locks and records of the cell's editors, gone with them
    load_end = os.getloadavg()
    return {"scenario": scenario, "editors_n": count, "share": share, "run_dir": run_dir,
            "loadavg_start": load_start, "loadavg_end": load_end,
            "llama_servers_all_up": len(servers_all_up), "llama_servers_left": left,
            "memory": sampler.memory.summary(),
            "editors": [editor_summary(e) for e in editors]}


async def servers_left(model: Path, sampler: Sampler) -> list[int]:
    """llama-servers the cell started that still run once its editors are gone (none should: each is its editor's
    child and stops with it). Waits up to 30 s for them to go, then ends them (they are this benchmark's)."""
    pids = sampler.memory.pids_seen
    end = time.perf_counter() + 30
    alive = pids
    while time.perf_counter() < end:
        alive = {p for p in pids if _alive_server(p, model)}
        if not alive:
            return []
        await asyncio.sleep(0.2)
    for pid in alive:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    return sorted(alive)


def _alive_server(pid: int, model: Path) -> bool:
    try:
        return is_llama_server_of(_args(pid), model) and not _status(pid).get("State", "").strip().startswith("Z")
    except OSError:
        return False


def editor_summary(editor: Editor) -> dict[str, Any]:
    rc = editor.rc
    statuses = rc.status if rc is not None else []
    out: dict[str, Any] = {
        "index": editor.index, "pid": editor.pid, "file": editor.path.name, "typing": editor.typing,
        "ready_ms": editor.ready_ms, "role": role(editor.ready_detail), "ready_detail": editor.ready_detail,
        "server_restarts": [str(s["message"]) for s in statuses if "Restarting llama-server" in str(s["message"])],
        "takeovers": [str(s["message"]) for s in statuses if "has gone" in str(s["message"])],
    }
    run = editor.run
    if run is not None:
        summary = summarise_accepting(run)
        summary["model_calls"] = _delta(run.stats_before, run.stats_after, "calls_started")
        server = (run.stats_after or {}).get("server") or {}
        server_before = (run.stats_before or {}).get("server") or {}
        for key in ("prefetch_held", "prefetch_yielded", "prefetch_skipped_busy", "early_calls", "early_calls_held"):
            if key in server:
                summary["prefetch"][key] = server[key] - server_before.get(key, 0)
        summary["gate_reasons"] = gate_reasons(run.stats_before, run.stats_after)
        summary["shown"] = sum(1 for r in run.requests if r.shown)
        summary["answered"] = sum(1 for r in run.requests if r.answered is not None)
        summary["latencies_ms"] = [r.latency_ms for r in run.requests if r.text and r.latency_ms is not None]
        out["typing_summary"] = summary
    return out


def gate_reasons(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, int]:
    """Why the shared-server gate held or stopped the typing editor's guesses during the run ("prefetch-held: 1 of 2
    slots busy" → count), from the server's speculation events (the last 1,000 are kept)."""
    events_before = ((before or {}).get("server") or {}).get("speculation_events") or []
    events = ((after or {}).get("server") or {}).get("speculation_events") or []
    if len(events) < 1000:
        events = events[len(events_before):]
    counts: dict[str, int] = {}
    for kind, reason in (e for e in events if isinstance(e, list) and len(e) == 2):
        if kind in ("prefetch-held", "prefetch-yielded", "early-call-held"):
            key = f"{kind}: {reason}"
            counts[key] = counts.get(key, 0) + 1
    return counts


# ---------------------------------------------------------------------------------------------------------------------
# Pooling and the table


def pool(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs of one (scenario, N, share) cell together."""
    memory = [r["memory"] for r in runs]
    later_ready = [e["ready_ms"] for r in runs for e in r["editors"][1:] if e["ready_ms"] is not None]
    first_ready = [r["editors"][0]["ready_ms"] for r in runs if r["editors"][0]["ready_ms"] is not None]
    typed = [e["typing_summary"] for r in runs for e in r["editors"] if "typing_summary" in e]
    latencies = [v for t in typed for v in t["latencies_ms"]]
    saved = [t["keystrokes_saved_share"] for t in typed if t["keystrokes_saved_share"] is not None]
    requests = sum(t["requests"] for t in typed)
    calls = [t["model_calls"] for t in typed if t["model_calls"] is not None]

    def mean(key: str) -> float | None:
        values = [m[key] for m in memory]
        return statistics.fmean(values) if values else None

    return {
        "runs": len(runs),
        "llama_servers_all_up": [r["llama_servers_all_up"] for r in runs],
        "llama_servers_max": max((m["llama_servers_max"] for m in memory), default=0),
        "llama_server_pids_seen": [m["llama_server_pids_seen"] for m in memory],
        "llama_server_threads": [m["llama_server_threads"] for m in memory],
        "llama_servers_left": sum(len(r["llama_servers_left"]) for r in runs),
        "llama_rss_peak_mb": mean("llama_rss_peak_mb"),
        "llama_pss_peak_mb": mean("llama_pss_peak_mb"),
        "llama_anon_peak_mb": mean("llama_anon_peak_mb"),
        "editors_rss_peak_mb": mean("editors_rss_peak_mb"),
        "total_pss_peak_mb": mean("total_pss_peak_mb"),
        "first_ready_ms_median": statistics.median(first_ready) if first_ready else None,
        "later_ready_ms": later_ready,
        "later_ready_ms_median": statistics.median(later_ready) if later_ready else None,
        "later_ready_ms_max": max(later_ready) if later_ready else None,
        "typing_editors": len(typed),
        "latency_ms_median": statistics.median(latencies) if latencies else None,
        "latency_ms_p95": _percentile(latencies, 0.95),
        "keystrokes_saved_share_mean": statistics.fmean(saved) if saved else None,
        "shown": sum(t["shown"] for t in typed),
        "requests": requests,
        "answered_share": 100.0 * sum(t["answered"] for t in typed) / requests if requests else None,
        "model_calls": sum(calls) if calls else None,
        "server_restarts": sum(len(e["server_restarts"]) for r in runs for e in r["editors"]),
        "takeovers": sum(len(e["takeovers"]) for r in runs for e in r["editors"]),
        "loadavg_start": [r["loadavg_start"][0] for r in runs],
        "loadavg_end": [r["loadavg_end"][0] for r in runs],
    }


def cell_key(scenario: str, count: int, share: bool) -> str:
    return f"{scenario}/{count}/{'share' if share else 'no-share'}"


def format_table(report: dict[str, Any]) -> str:
    head = ("| scenario | N | share | llama-servers | llama-server RSS / Pss peak MB | editors RSS MB | "
            "total Pss MB | 1st ready ms | 2nd..Nth ready ms (median / max) | p50 / p95 ms | saved % | shown | "
            "answered % | model calls | restarts | load start → end |")
    lines = [head, "|" + "---|" * 16]
    for cell in report["cells"].values():
        p = cell["pooled"]
        loads = "/".join(f"{v:.1f}" for v in p["loadavg_start"]) + " → " + "/".join(
            f"{v:.1f}" for v in p["loadavg_end"])
        lines.append(
            f"| {cell['scenario']} | {cell['editors_n']} | {'on' if cell['share'] else 'off'} | "
            f"{'/'.join(str(v) for v in p['llama_servers_all_up'])} | {_fmt(p['llama_rss_peak_mb'])} / "
            f"{_fmt(p['llama_pss_peak_mb'])} | {_fmt(p['editors_rss_peak_mb'])} | {_fmt(p['total_pss_peak_mb'])} | "
            f"{_fmt(p['first_ready_ms_median'])} | {_fmt(p['later_ready_ms_median'])} / "
            f"{_fmt(p['later_ready_ms_max'])} | {_fmt(p['latency_ms_median'])} / {_fmt(p['latency_ms_p95'])} | "
            f"{_fmt(p['keystrokes_saved_share_mean'], 1)} | {p['shown']} | {_fmt(p['answered_share'], 1)} | "
            f"{_fmt(p['model_calls'])} | {p['server_restarts']} | {loads} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------------
# The whole run


async def run(args: argparse.Namespace) -> dict[str, Any]:
    files, resolved = files_and_model(args, SMOKE_KEYSTROKES)
    model = resolved.path
    cells: dict[str, dict[str, Any]] = {}
    for scenario in args.scenario:
        for n_index, count in enumerate(args.editors):
            for repeat in range(args.repeat):
                order = args.share if (n_index + repeat) % 2 == 0 else list(reversed(args.share))
                for share in order:
                    if not args.quiet:
                        print(f"{scenario}, N={count}, share {'on' if share else 'off'}, run {repeat + 1} of "
                              f"{args.repeat} (load {os.getloadavg()[0]:.1f})…", file=sys.stderr, flush=True)
                    result = await run_cell(scenario, count, share, files, model, args)
                    key = cell_key(scenario, count, share)
                    cell = cells.setdefault(key, {"scenario": scenario, "editors_n": count, "share": share,
                                                  "runs": []})
                    cell["runs"].append(result)
                    cell["pooled"] = pool(cell["runs"])
    return {"benchmark": "several_editors", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "cpus": os.cpu_count(), "loadavg_end": os.getloadavg()},
            "config": {"editors": args.editors, "scenarios": args.scenario, "share": args.share,
                       "files": [str(f) for f in files], "model": str(model), "max_keystrokes": args.max_keystrokes,
                       "cps": args.cps, "repeat": args.repeat, "sample_s": args.sample_s, "smoke": bool(args.smoke)},
            "cells": cells}


def _bool(text: str) -> bool:
    if text.lower() in ("true", "on", "yes", "1"):
        return True
    if text.lower() in ("false", "off", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m bench.replay.several_editors",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="source files, one per editor in turn (default: the replay files)")
    parser.add_argument("--editors", type=int, nargs="+", help="editors at once (default 1 2 3; smoke 1 2)")
    parser.add_argument("--scenario", action="append", choices=SCENARIOS,
                        help="one-typing (default): editor 1 types, the others are idle windows; all-typing: every "
                             "editor types (repeatable)")
    parser.add_argument("--share", type=_bool, nargs="+", default=[True, False],
                        help="completion.local.share values to compare (default: true false)")
    parser.add_argument("--model", help="GGUF path or model id (default: the embedded Gemma 3 270M)")
    parser.add_argument("--binary", help="llama-server binary (default: Infill's discovery)")
    parser.add_argument("--server-arg", action="append", default=[], metavar="ARG", help="extra llama-server argument")
    parser.add_argument("--setting", action="append", default=[], metavar="KEY=JSON",
                        help="a top-level server setting for every editor, its value as JSON (repeatable)")
    parser.add_argument("--max-prefix-tokens", type=int, metavar="N", help="prompt budget (default: the shipped one)")
    parser.add_argument("--cps", type=float, default=10.0, help="typing speed (default 10 characters/s)")
    parser.add_argument("--line-pause", type=float, default=1.0)
    parser.add_argument("--max-keystrokes", type=int, default=150, help="keystrokes per typing editor (default 150)")
    parser.add_argument("--start-fraction", type=float, default=0.3)
    parser.add_argument("--accept-pause", type=float, default=0.5)
    parser.add_argument("--min-accept", type=int, default=2)
    parser.add_argument("--no-report-shown", dest="report_shown", action="store_false")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each cell, everything fresh each time, pooled (default 1)")
    parser.add_argument("--sample-s", type=float, default=0.5, help="memory sampling interval (default 0.5 s)")
    parser.add_argument("--ready-timeout", type=float, default=300.0)
    parser.add_argument("--answer-timeout", type=float, default=60.0)
    parser.add_argument("--smoke", action="store_true", help=f"tiny test model, N = 1 2, {SMOKE_KEYSTROKES} keystrokes")
    parser.add_argument("--output", type=Path, help="JSON file (default bench/results/several_editors-<time>.json)")
    parser.add_argument("--quiet", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.editors = args.editors or ([1, 2] if args.smoke else [1, 2, 3])
    args.scenario = args.scenario or ["one-typing"]
    args.share = list(dict.fromkeys(args.share))
    report = asyncio.run(run(args))
    output = write_report(report, args.output, "several_editors")
    print(format_table(report))
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}; wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
