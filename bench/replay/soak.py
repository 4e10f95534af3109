"""Soak: the accepting user types for a long time (default 30 minutes) through the real language server and the
real llama-server (the default model, Gemma 3 270M), workspace context on, several files open, and the server is
watched for what grows: its RSS, open file descriptors, threads, asyncio tasks, and the keystroke → suggestion p95.

    python -m bench.replay.soak                      # 30 minutes, default model (run alone: it measures latency)
    python -m bench.replay.soak --minutes 3 --model ~/.cache/infill-bench/tiny-fim.gguf   # a short run, tiny model

(the tiny model: `python -m tests.fixtures.tiny_model ~/.cache/infill-bench/tiny-fim.gguf` builds it.)

The typing is the accepting user's replay (bench/replay/accepting_user.py) over the replay files, file after file,
each pass from another place in the file (START_FRACTIONS) so the prompts do not repeat; all the files also stay
open as editor tabs under their own URIs, so workspace context has other documents to choose from. When the server
advertises `capabilities.experimental.infill.nextEdit`, the soak also asks for a next edit (the method it names,
`textDocument/copilotInlineEdit`) at the cursor every --next-edit-every seconds; otherwise it sends none.

Once a period (--sample-seconds, default 60) it samples the server process (/proc: RSS, file descriptors, threads),
`infill/stats` (asyncio tasks, documents, cache entries), llama-server's RSS (the server's child), and the period's
keystroke → suggestion median and p95 (answers with a suggestion). At the end it checks, each a line of the report:
- every request answered (inline completions and next edits);
- no child process left after `shutdown`/`exit` (llama-server is the server's child);
- RSS within 10 % and p95 within 20 % between the sample after the warm-up (--warmup-minutes, default 5; a third of
  a shorter run) and the last one.
Prints a table, writes JSON (bench/results/soak-<time>.json); `--check` exits 1 when a check fails.

`--loopback` replaces the model by the fuzz's scripted loopback server (bench/reliability/lsp_fuzz/backend.py, no
faults): with `--cps 200 --line-pause 0 --accept-pause 0` thousands of requests run in a few minutes on little CPU,
which is how to hunt what grows in the server (latency figures then mean nothing). With `INFILL_TRACEMALLOC=<frames>`
in the environment the server traces its allocations (lsp_server/memory_probe.py) and each sample also records
`infill/memory`: live traced memory, glibc malloc's figures and object counts; the report's `memory` holds the
allocation sites that grew most between the first sample after the warm-up and the last one.

    INFILL_TRACEMALLOC=8 python -m bench.replay.soak --loopback --minutes 5 --sample-seconds 20 --cps 200 \
        --line-pause 0 --accept-pause 0"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..common.paths import write_report
from ..reliability.lsp_fuzz import children, rss_kb
from . import typing_replay
from .accepting_user import AcceptRun, replay_file_accepting, summarise_accepting
from .editing import _percentile, utf16_len

#: Where each pass over the files starts typing (fraction of the file): six passes before a region repeats.
START_FRACTIONS = (0.3, 0.5, 0.7, 0.4, 0.6, 0.2)
#: The flatness targets of issue 27.
RSS_TOLERANCE = 0.10
P95_TOLERANCE = 0.20


@dataclass
class Sample:
    minute: float
    actions: int
    requests: int
    answered: int
    rss_mb: float
    llama_rss_mb: float | None
    fds: int
    threads: int
    asyncio_tasks: int | None
    documents: int | None
    cache_entries: int | None
    #: Keystroke → suggestion over the answers (with a suggestion) that arrived in this period.
    suggestions: int
    median_ms: float | None
    p95_ms: float | None
    next_edits: int
    next_edits_answered: int
    #: `infill/memory` (INFILL_TRACEMALLOC set): live traced Python memory and malloc's bytes in use, in MB.
    traced_mb: float | None = None
    malloc_in_use_mb: float | None = None


@dataclass
class NextEditRecord:
    sent: float
    answered: float | None = None
    error: str | None = None
    edits: int = 0


@dataclass
class NextEdits:
    """The cursor the accepting user is at (from the `didChange` notifications it sends) and the next-edit requests
    made there. `method` None: the server does not advertise next edits, none are sent."""

    method: str | None
    uri: str | None = None
    version: int = 0
    line: int = 0
    character: int = 0
    records: list[NextEditRecord] = field(default_factory=list)

    def note_change(self, params: Any) -> None:
        """After an insertion at a range's start, the cursor is at the end of the inserted text."""
        changes = list(getattr(params, "content_changes", None) or [])
        if not changes or getattr(changes[-1], "range", None) is None:
            return
        change = changes[-1]
        self.uri, self.version = params.text_document.uri, params.text_document.version
        text = change.text
        if "\n" in text:
            self.line = change.range.start.line + text.count("\n")
            self.character = utf16_len(text[text.rfind("\n") + 1:])
        else:
            self.line, self.character = change.range.start.line, change.range.start.character + utf16_len(text)

    async def ask(self, client: Any) -> None:
        if self.method is None or self.uri is None:
            return
        record = NextEditRecord(sent=time.perf_counter())
        self.records.append(record)
        params = {"textDocument": {"uri": self.uri, "version": self.version},
                  "position": {"line": self.line, "character": self.character}, "context": {"triggerKind": 2}}
        try:
            result = await client.protocol.send_request_async(self.method, params)
            edits = getattr(result, "edits", None)
            if edits is None and isinstance(result, dict):
                edits = result.get("edits")
            record.edits = len(edits or [])
        except Exception as exc:  # an error answer is an answer: counted, not fatal
            record.error = f"{type(exc).__name__}: {exc}"
        record.answered = time.perf_counter()


def next_edit_method(initialize_result: Any) -> str | None:
    """`capabilities.experimental.infill.nextEdit.method` of the server's InitializeResult, if it advertises one."""
    capabilities = getattr(initialize_result, "capabilities", None)
    experimental = getattr(capabilities, "experimental", None)
    experimental = typing_replay._plain(experimental)
    if not isinstance(experimental, dict):
        return None
    next_edit = (experimental.get("infill") or {}).get("nextEdit")
    if not isinstance(next_edit, dict):
        return None
    method = next_edit.get("method")
    return method if isinstance(method, str) and method else None


def process_facts(pid: int) -> tuple[float, int, int]:
    """(RSS in MB, open file descriptors, threads) of a process, from /proc."""
    threads = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        fds = 0
    return rss_kb(pid) / 1024, fds, threads


def flat(reference: float | None, last: float | None, tolerance: float) -> bool | None:
    """Whether `last` is within `tolerance` (a fraction) of `reference`; None when either is missing."""
    if reference is None or last is None or reference <= 0:
        return None
    return abs(last - reference) / reference <= tolerance


def reference_index(samples: list[Sample], warmup_minutes: float) -> int:
    """The first sample after the warm-up (a third of the run when the run is shorter than three warm-ups)."""
    if not samples:
        return 0
    warmup = min(warmup_minutes, samples[-1].minute / 3)
    return next((i for i, s in enumerate(samples) if s.minute >= warmup), len(samples) - 1)


#: The p95 flatness check compares the suggestions of this many minutes after the warm-up with those of the last as
#: many minutes: one minute holds only some 50 suggestions, whose p95 moves by a third from minute to minute at a
#: steady state (the per-minute figures stay in the table).
P95_WINDOW_MINUTES = 5.0


def window_p95(points: list[tuple[float, float]], start: float, end: float) -> float | None:
    """The p95 of the latencies (minute answered, ms) answered in [start, end)."""
    return _percentile([ms for minute, ms in points if start <= minute < end], 0.95)


def checks(samples: list[Sample], run: AcceptRun, next_edits: NextEdits, children_left: list[int],
           warmup_minutes: float, points: list[tuple[float, float]] | None = None) -> dict[str, Any]:
    """`points`: (minute answered, keystroke → suggestion ms) of every answer with a suggestion; the p95 check
    compares windows of them (P95_WINDOW_MINUTES, a third of the part after the warm-up when that is shorter), else
    the reference sample's minute with the last one's."""
    ref = samples[reference_index(samples, warmup_minutes)] if samples else None
    last = samples[-1] if samples else None
    unanswered = sum(1 for r in run.requests if r.answered is None)
    unanswered_edits = sum(1 for r in next_edits.records if r.answered is None)
    rss = flat(ref.rss_mb if ref else None, last.rss_mb if last else None, RSS_TOLERANCE)
    windows: dict[str, Any] = {}
    if points and ref is not None and last is not None:
        width = min(P95_WINDOW_MINUTES, (last.minute - ref.minute) / 3)
        first_p95 = window_p95(points, ref.minute, ref.minute + width)
        last_p95 = window_p95(points, last.minute - width, last.minute + 1e-9)
        windows = {"p95_window_minutes": round(width, 2), "p95_first_window_ms": first_p95,
                   "p95_last_window_ms": last_p95}
        p95 = flat(first_p95, last_p95, P95_TOLERANCE)
    else:
        p95 = flat(ref.p95_ms if ref else None, last.p95_ms if last else None, P95_TOLERANCE)
    return {
        **windows,
        "reference_minute": ref.minute if ref else None,
        "every_request_answered": unanswered == 0 and unanswered_edits == 0,
        "unanswered_completions": unanswered, "unanswered_next_edits": unanswered_edits,
        "no_child_left": not children_left, "children_left": children_left,
        "rss_flat": rss, "p95_flat": p95,
        "passed": unanswered == 0 and unanswered_edits == 0 and not children_left and rss is not False
        and p95 is not False,
    }


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        files = [Path(f) for f in args.files] or typing_replay.default_files()
        self.files = files
        # The replay's own options, defaults included, for the accepting user's loop.
        self.replay_args = typing_replay.build_parser().parse_args(
            [*map(str, files), "--user", "accepting", "--cps", str(args.cps),
             "--max-keystrokes", str(args.max_keystrokes), "--quiet", "--line-pause", str(args.line_pause),
             "--accept-pause", str(args.accept_pause),
             *(["--model", args.model] if args.model else []), *(["--binary", args.binary] if args.binary else [])])
        self.samples: list[Sample] = []
        self.kids: set[int] = set()
        #: `--loopback`: the scripted model server (bench/reliability/lsp_fuzz/backend.py) and its llama-server
        #: root URL.
        self.loopback: Any = None
        #: The first and the last `infill/memory` answers (INFILL_TRACEMALLOC set).
        self.memory: list[dict[str, Any]] = []

    def settings(self) -> dict[str, Any]:
        from engine.config import merge

        model = typing_replay.model_settings(self.replay_args)
        if self.loopback is not None:
            from ..reliability.lsp_fuzz import FUZZ_TEMPLATE

            model = {"completion": {"kind": "llama.cpp/completion", "api_endpoint": self.loopback.root,
                                    "prompt_template": FUZZ_TEMPLATE}}
        return merge(model, {"context": {"enabled": True}})

    async def memory_report(self, rc: Any, reset: bool) -> dict[str, Any] | None:
        """`infill/memory`, when the server has it (INFILL_TRACEMALLOC set); None otherwise. `reset`: the server
        compares later reports with this one."""
        from lsp_server.memory_probe import ENV, METHOD

        if not os.environ.get(ENV):
            return None
        try:
            return typing_replay._plain(await asyncio.wait_for(
                rc.client.protocol.send_request_async(METHOD, {"top": 25, "reset": reset}), 60))
        except Exception as exc:  # the sample says so; the soak goes on
            print(f"  soak: {METHOD} failed: {exc}", file=sys.stderr)
            return None

    def warmup_minutes(self) -> float:
        """As `reference_index` takes it: the warm-up, or a third of a run shorter than three warm-ups."""
        return min(self.args.warmup_minutes, self.args.minutes / 3)

    async def sample(self, rc: Any, pid: int, run: AcceptRun, next_edits: NextEdits, started: float,
                     since: float) -> None:
        now = time.perf_counter()
        stats: dict[str, Any] = {}
        try:
            stats = typing_replay._plain(await asyncio.wait_for(
                rc.client.protocol.send_request_async("infill/stats", {}), 30)) or {}
        except Exception as exc:  # the sample says so; the soak goes on
            print(f"  soak: infill/stats failed: {exc}", file=sys.stderr)
        # The first sample after the warm-up is the reference of the flatness checks: growth is counted from there.
        reference = not self.memory or (self.memory[0].get("minute", 0.0) < self.warmup_minutes()
                                        <= (now - started) / 60)
        memory = await self.memory_report(rc, reset=reference)
        if memory is not None:
            memory["minute"] = round((now - started) / 60, 2)
            self.memory = [memory] if reference else [self.memory[0], memory]
        if self.loopback is not None:  # what the loopback records of each call is not needed here
            self.loopback.calls.clear()
            self.loopback.keys.clear()
        kids = children(pid)
        self.kids.update(kids)
        llama = sum(rss_kb(k) for k in kids) / 1024 if kids else None
        rss, fds, threads = process_facts(pid)
        latencies = [r.latency_ms for r in run.requests if r.text and r.answered is not None
                     and since < r.answered <= now and r.latency_ms is not None]
        self.samples.append(Sample(
            minute=round((now - started) / 60, 2), actions=run.actions, requests=len(run.requests),
            answered=sum(1 for r in run.requests if r.answered is not None), rss_mb=round(rss, 1),
            llama_rss_mb=round(llama, 1) if llama is not None else None, fds=fds, threads=threads,
            asyncio_tasks=stats.get("asyncio_tasks"), documents=stats.get("documents"),
            cache_entries=stats.get("cache_entries"), suggestions=len(latencies),
            median_ms=round(statistics.median(latencies), 1) if latencies else None,
            p95_ms=round(p, 1) if (p := _percentile(latencies, 0.95)) is not None else None,
            next_edits=len(next_edits.records),
            next_edits_answered=sum(1 for r in next_edits.records if r.answered is not None),
            traced_mb=round(memory["traced_bytes"] / 2 ** 20, 2) if memory else None,
            malloc_in_use_mb=round(memory["malloc"]["in_use_bytes"] / 2 ** 20, 2)
            if memory and memory.get("malloc") else None))
        if not self.args.quiet:
            print("  soak: " + format_row(self.samples[-1]), file=sys.stderr, flush=True)

    async def run(self) -> dict[str, Any]:
        from lsprotocol import types

        args = self.args
        if args.loopback:
            import random

            from ..reliability.lsp_fuzz import Backend

            self.loopback = Backend(random.Random(0), faults=False)
            await self.loopback.start()
        settings = self.settings()
        rc = typing_replay.ReplayClient(settings)
        await rc.start()
        pid = rc.client._server.pid  # type: ignore[union-attr]
        next_edits = NextEdits(next_edit_method(getattr(rc, "initialize_result", None)))
        original_change = rc.client.text_document_did_change

        def did_change(params: Any) -> None:
            original_change(params)
            next_edits.note_change(params)

        rc.client.text_document_did_change = did_change  # type: ignore[method-assign]
        run = AcceptRun(variant="ours", settings=settings)
        exit_code: int | None = None
        try:
            await typing_replay.warm_up(rc, self.replay_args)
            for i, path in enumerate(self.files):  # the editor's tabs: other documents for workspace context
                rc.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                    uri=f"file:///infill-soak/tabs/{i}/{path.name}", version=1, text=path.read_text(encoding="utf-8"),
                    language_id=typing_replay.LANGUAGE_IDS.get(path.suffix, "plaintext"))))
            started = time.perf_counter()
            deadline = started + args.minutes * 60
            stop = asyncio.Event()

            async def sampler() -> None:
                since = started
                await self.sample(rc, pid, run, next_edits, started, since)  # the start
                while not stop.is_set():
                    try:
                        await asyncio.wait_for(stop.wait(), args.sample_seconds)
                    except asyncio.TimeoutError:
                        pass
                    now = time.perf_counter()
                    await self.sample(rc, pid, run, next_edits, started, since)
                    since = now

            async def asker() -> None:
                pending: set[asyncio.Task] = set()
                while not stop.is_set():
                    try:
                        await asyncio.wait_for(stop.wait(), args.next_edit_every)
                    except asyncio.TimeoutError:
                        task = asyncio.ensure_future(next_edits.ask(rc.client))
                        pending.add(task)
                        task.add_done_callback(pending.discard)
                if pending:
                    await asyncio.wait(pending, timeout=args.answer_timeout)

            background = [asyncio.ensure_future(sampler()), asyncio.ensure_future(asker())]
            index = 0
            while time.perf_counter() < deadline:
                path = self.files[index % len(self.files)]
                self.replay_args.start_fraction = START_FRACTIONS[(index // len(self.files)) % len(START_FRACTIONS)]
                await replay_file_accepting(rc, path, index, self.replay_args, run)
                index += 1
            run.seconds = time.perf_counter() - started
            stop.set()
            await asyncio.gather(*background)
        finally:
            await rc.stop()
            server = rc.client._server
            if server is not None:
                exit_code = server.returncode
            if self.loopback is not None:
                await self.loopback.close()
        # Every child gone once the server has exited (a safety net of a few seconds for the OS to reap them).
        for _ in range(50):
            left = [k for k in sorted(self.kids) if Path(f"/proc/{k}").exists()]
            if not left:
                break
            await asyncio.sleep(0.1)
        summary = summarise_accepting(run)
        points = [((r.answered - started) / 60, r.latency_ms) for r in run.requests
                  if r.text and r.answered is not None and r.latency_ms is not None]
        result = checks(self.samples, run, next_edits, left, args.warmup_minutes, points)
        return {
            "benchmark": "soak",
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "cpus": os.cpu_count(), "loadavg_end": os.getloadavg()},
            "config": {"minutes": args.minutes, "sample_seconds": args.sample_seconds, "cps": args.cps,
                       "max_keystrokes": args.max_keystrokes, "files": [str(p) for p in self.files],
                       "model": "loopback (scripted)" if args.loopback else args.model or "default (Gemma 3 270M)",
                       "context": True, "line_pause": args.line_pause, "accept_pause": args.accept_pause,
                       "next_edit_method": next_edits.method, "next_edit_every": args.next_edit_every,
                       "warmup_minutes": args.warmup_minutes},
            "samples": [asdict(s) for s in self.samples],
            "latencies": [[round(minute, 3), round(ms, 1)] for minute, ms in points],
            "summary": summary,
            "next_edits": {"sent": len(next_edits.records),
                           "answered": sum(1 for r in next_edits.records if r.answered is not None),
                           "errors": sum(1 for r in next_edits.records if r.error),
                           "with_edit": sum(1 for r in next_edits.records if r.edits),
                           "errors_examples": [r.error for r in next_edits.records if r.error][:3]},
            "server_exit_code": exit_code,
            "checks": result,
            "memory": memory_summary(self.memory),
        }


def memory_summary(reports: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The `infill/memory` after the warm-up and the last one: live traced memory, malloc's figures, the allocation
    sites that grew most between them and the object types whose counts changed most."""
    if not reports:
        return None
    first, last = reports[0], reports[-1]
    types = {name: count - first["types"].get(name, 0) for name, count in last["types"].items()}
    return {"traced_mb": [round(r["traced_bytes"] / 2 ** 20, 2) for r in (first, last)],
            "rss_mb": [round(r["rss_bytes"] / 2 ** 20, 1) for r in (first, last)],
            "malloc": [r.get("malloc") for r in (first, last)],
            "growth": last["growth"],
            "types_changed": dict(sorted(types.items(), key=lambda kv: -abs(kv[1]))[:25])}


COLUMNS = (("min", "minute"), ("actions", "actions"), ("requests", "requests"), ("RSS MB", "rss_mb"),
           ("llama MB", "llama_rss_mb"), ("fds", "fds"), ("threads", "threads"), ("tasks", "asyncio_tasks"),
           ("docs", "documents"), ("shown", "suggestions"), ("median ms", "median_ms"), ("p95 ms", "p95_ms"),
           ("NES", "next_edits"), ("traced MB", "traced_mb"), ("malloc MB", "malloc_in_use_mb"))


def format_row(sample: Sample) -> str:
    values = asdict(sample)
    return " | ".join(f"{title} {values[key]}" for title, key in COLUMNS)


def format_table(report: dict[str, Any]) -> str:
    lines = ["| " + " | ".join(title for title, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for sample in report["samples"]:
        lines.append("| " + " | ".join("n/a" if sample[key] is None else str(sample[key]) for _, key in COLUMNS)
                     + " |")
    c = report["checks"]
    lines.append("")
    lines.append(f"every request answered: {c['every_request_answered']} "
                 f"(completions unanswered {c['unanswered_completions']}, next edits unanswered "
                 f"{c['unanswered_next_edits']}); no child left: {c['no_child_left']}; "
                 f"RSS flat (±{RSS_TOLERANCE:.0%} from minute {c['reference_minute']}): {c['rss_flat']}; "
                 f"p95 flat (±{P95_TOLERANCE:.0%}"
                 + (f", {c['p95_first_window_ms']} → {c['p95_last_window_ms']} ms over the first and last "
                    f"{c['p95_window_minutes']} minutes after the warm-up" if "p95_window_minutes" in c else "")
                 + f"): {c['p95_flat']}; passed: {c['passed']}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.replay.soak", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="source files to type (default: bench/replay/replay_files)")
    parser.add_argument("--minutes", type=float, default=30.0, help="how long to type (default 30)")
    parser.add_argument("--sample-seconds", type=float, default=60.0, help="seconds between samples (default 60)")
    parser.add_argument("--warmup-minutes", type=float, default=5.0,
                        help="the flatness checks compare the sample after this with the last one (default 5)")
    parser.add_argument("--cps", type=float, default=10.0, help="typing speed, characters per second (default 10)")
    parser.add_argument("--max-keystrokes", type=int, default=200, help="keystrokes per file and pass (default 200)")
    parser.add_argument("--line-pause", type=float, default=1.0, help="seconds of pause after each Enter (default 1)")
    parser.add_argument("--accept-pause", type=float, default=0.5,
                        help="seconds the user reads the next suggestion after an accept (default 0.5)")
    parser.add_argument("--loopback", action="store_true",
                        help="a scripted loopback model instead of llama-server (hunting growth fast; see above)")
    parser.add_argument("--next-edit-every", type=float, default=5.0,
                        help="seconds between next-edit requests, when the server advertises them (default 5)")
    parser.add_argument("--answer-timeout", type=float, default=60.0)
    parser.add_argument("--model", help="GGUF path or model id (default: the embedded Gemma 3 270M)")
    parser.add_argument("--binary", help="llama-server binary (default: Infill's discovery)")
    parser.add_argument("--output", type=Path, help="JSON file (default: bench/results/soak-<time>.json)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a check fails")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    report = asyncio.run(Soak(args).run())
    output = write_report(report, args.output, "soak")
    print(format_table(report))
    print(f"\nwrote {output}")
    return 1 if args.check and not report["checks"]["passed"] else 0


if __name__ == "__main__":
    sys.exit(main())
