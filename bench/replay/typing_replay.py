"""Typing replay: write real source files keystroke by keystroke through the language server over stdio, as an editor
would, and measure what the user feels.

For each file a region of lines (by default from 30 % into the file, at most --max-keystrokes keystrokes) is removed
and typed back: one `didChange` per keystroke at --cps characters per second, an automatic inline completion request
after each change (a newer one supersedes the older: the client does not wait), and a pause of --line-pause seconds
after each Enter, where a user looks at the suggestion. Enter and the indentation an editor adds after it are one
keystroke. The rest of the file stays below the cursor, so the server sees a real suffix.

The same files are replayed twice, each with a fresh server: our pipeline (shipped defaults), and a naive one
(no debounce, no cache, no typing-through, prompt clipped afresh; see NAIVE_SETTINGS). Reported per variant:
- keystroke → non-empty suggestion: median and p95 over answers that carried a suggestion;
- suggestions shown (answer arrived before the next keystroke) per 100 keystrokes, and of those, how often the
  first line equals the text typed next, and how many of its characters the user could accept;
- model calls per 100 keystrokes, prompt tokens llama-server had to prefill per model call and per suggestion shown;
- requests answered (a result or an error response): must be 100 %.

    python3 -m bench.replay.typing_replay                    # default files, default model, ours and naive
    python3 -m bench.replay.typing_replay --smoke            # tiny test model, a few keystrokes
    python3 -m bench.replay.typing_replay my_file.py --cps 8
    python3 -m bench.replay.typing_replay --user accepting --variant ours   # a user who accepts (accepting_user.py)
    python3 -m bench.replay.typing_replay --user accepting --variant ours --next-edit model  # + next-edit requests
Writes JSON under bench/results/ (per-keystroke latencies included, for bench/common/plots.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..common.paths import REPO_ROOT, RESULTS_DIR
from .accepting_user import ROWS_ACCEPTING, AcceptRun, replay_file_accepting, summarise_accepting
from .editing import (LANGUAGE_IDS, Answer, _delta, _item_text, _percentile, accepted_chars, answer_item,
                      choose_region, position_of, utf16_len)
from .typing_replay_server import STATS_METHOD

REPLAY_DIR = Path(__file__).resolve().parent / "replay_files"


#: Server settings of the two variants (merged over the model settings sent as initializationOptions).
OURS_SETTINGS: dict[str, Any] = {}
NAIVE_SETTINGS: dict[str, Any] = {
    "debounce": {"mode": "fixed", "fixedMs": 0},
    "cacheSize": 0,
    "typingThroughMax": 0,
    "completion": {"stableClip": False},  # the prompt clipped afresh to the exact budget on each keystroke
    # no prefetch, no joining of generations in flight, no time box
    "speculation": {"prefetch": False, "reuseInflight": False, "timeBudgetMs": 0, "invokedTimeBudgetMs": 0},
}
#: Ours with none of issue 12's speculation (prefetch, joining generations in flight, the burst debounce, time box):
#: the pipeline the accepting user's baseline was measured on, so that the comparison is one command.
NOSPEC_SETTINGS: dict[str, Any] = {
    "speculation": {"prefetch": False, "reuseInflight": False, "timeBudgetMs": 0, "invokedTimeBudgetMs": 0},
}
#: Ours without workspace context (issue 11): its keystroke → suggestion latency is the one context must stay near.
NOCONTEXT_SETTINGS: dict[str, Any] = {"context": {"enabled": False}}
VARIANTS = {"ours": OURS_SETTINGS, "naive": NAIVE_SETTINGS, "nospec": NOSPEC_SETTINGS,
            "nocontext": NOCONTEXT_SETTINGS}
#: Variants run when none is named, and the pair whose ratio the table shows.
DEFAULT_VARIANTS = {"passive": ("ours", "naive"), "accepting": ("ours", "nospec")}

SMOKE_KEYSTROKES = 12


# ---------------------------------------------------------------------------------------------------------------------
# What is typed


@dataclass(frozen=True)
class Keystroke:
    #: Characters inserted at the cursor: one character, or a line break plus the next line's indentation.
    text: str
    #: Offset in the region before this keystroke.
    offset: int


def plan_keystrokes(region_text: str) -> list[Keystroke]:
    out: list[Keystroke] = []
    i = 0
    while i < len(region_text):
        j = i + 1
        if region_text[i] == "\n":
            while j < len(region_text) and region_text[j] in " \t":
                j += 1
        out.append(Keystroke(region_text[i:j], i))
        i = j
    return out


# ---------------------------------------------------------------------------------------------------------------------
# Judging a suggestion against what the user typed next


def suggestion_after_cursor(insert_text: str, replaced_before_cursor: str) -> str:
    """The part of an item's text that goes after the cursor (items may re-insert text before it)."""
    if replaced_before_cursor and insert_text.startswith(replaced_before_cursor):
        return insert_text[len(replaced_before_cursor):]
    return insert_text


def first_line(text: str) -> str:
    """Leading blank lines and indentation plus the first line with content."""
    stripped = text.lstrip(" \t\r\n")
    lead = text[:len(text) - len(stripped)]
    cut = stripped.find("\n")
    return lead + (stripped if cut < 0 else stripped[:cut])


def first_line_matches(suggestion: str, typed_next: str) -> bool:
    """The suggestion's first line with content is exactly what the user typed next, up to that line's end."""
    line = first_line(suggestion).rstrip()
    if not line.strip():
        return False
    if not typed_next.startswith(line):
        return False
    rest = typed_next[len(line):]
    return rest == "" or rest.lstrip(" \t").startswith("\n") or rest.strip(" \t") == ""


# ---------------------------------------------------------------------------------------------------------------------
# Measurements


@dataclass(kw_only=True)
class RequestRecord(Answer):
    keystroke: int
    first_line_exact: bool = False
    accepted: int = 0
    offset: int = 0  # characters typed in this file's region when the request was sent


@dataclass
class VariantResult:
    variant: str
    settings: dict[str, Any]
    keystrokes: int = 0
    typed_chars: int = 0
    requests: list[RequestRecord] = field(default_factory=list)
    stats_before: dict[str, Any] | None = None
    stats_after: dict[str, Any] | None = None
    seconds: float = 0.0
    #: `--next-edit`: the copilotInlineEdit requests sent alongside (sent / answered / with an edit).
    next_edit_requests: dict[str, int] = field(default_factory=dict)
    #: The supervisor's "Restarting llama-server with N thread(s)" statuses during the run (the thread policy).
    server_restarts: list[str] = field(default_factory=list)


def covered_chars(shown: Sequence[RequestRecord]) -> int:
    """Typed characters that some shown suggestion offered beforehand. Counted once each: suggestions shown on
    consecutive keystrokes while the user types through them offer the same characters again."""
    covered: set[tuple[str, int]] = set()
    for r in shown:
        covered.update((r.file, r.offset + i) for i in range(r.accepted))
    return len(covered)


def summarise(result: VariantResult) -> dict[str, Any]:
    reqs = result.requests
    answered = [r for r in reqs if r.answered is not None]
    with_text = [r for r in answered if r.text]
    shown = [r for r in with_text if r.shown]
    latencies = [r.latency_ms for r in with_text]
    per100 = 100.0 / result.keystrokes if result.keystrokes else 0.0
    calls = _delta(result.stats_before, result.stats_after, "calls_started")
    prefilled = _delta(result.stats_before, result.stats_after, "prefilled_tokens")
    completed = _delta(result.stats_before, result.stats_after, "calls_completed")
    metrics_before = (result.stats_before or {}).get("llama_server_metrics") or {}
    metrics_after = (result.stats_after or {}).get("llama_server_metrics") or {}
    server_prefilled = None
    if "prompt_tokens_total" in metrics_after:
        server_prefilled = metrics_after["prompt_tokens_total"] - metrics_before.get(
            "prompt_tokens_total", 0.0)
    prefill_total = server_prefilled if server_prefilled is not None else prefilled
    return {
        "variant": result.variant,
        "keystrokes": result.keystrokes,
        "requests": len(reqs),
        "answered_share": 100.0 * len(answered) / len(reqs) if reqs else None,
        "errors": sum(1 for r in answered if r.error),
        "non_empty_answers": len(with_text),
        "latency_ms_median": statistics.median(latencies) if latencies else None,
        "latency_ms_p95": _percentile(latencies, 0.95),
        "shown_per_100_keystrokes": len(shown) * per100,
        "first_line_exact_share": 100.0 * sum(r.first_line_exact for r in shown) / len(shown) if shown else None,
        "accepted_chars_per_shown": statistics.fmean([r.accepted for r in shown]) if shown else None,
        "accepted_chars_share_of_typed": (100.0 * covered_chars(shown) / result.typed_chars
                                          if result.typed_chars else None),
        "model_calls_per_100_keystrokes": calls * per100 if calls is not None else None,
        "model_calls_completed": completed,
        "prefilled_tokens_total": prefill_total,
        "prefilled_tokens_source": "llama-server /metrics" if server_prefilled is not None else "timings",
        "prefilled_tokens_per_call": prefill_total / calls if prefill_total is not None and calls else None,
        "prefilled_tokens_per_shown": prefill_total / len(shown) if prefill_total is not None and shown else None,
        "seconds": result.seconds,
    }


def ratios(ours: dict[str, Any], naive: dict[str, Any]) -> dict[str, float | None]:
    keys = ("latency_ms_median", "latency_ms_p95", "model_calls_per_100_keystrokes", "prefilled_tokens_per_call",
            "prefilled_tokens_per_shown", "prefilled_tokens_total", "shown_per_100_keystrokes",
            "first_line_exact_share", "keystrokes_saved_share", "shown_per_100_actions",
            "wrong_shown_per_100_actions", "model_calls_per_100_actions", "accept_to_next_ms_median")
    out: dict[str, float | None] = {}
    for key in keys:
        a, b = ours.get(key), naive.get(key)
        out[key] = a / b if a is not None and b else None
    return out


# ---------------------------------------------------------------------------------------------------------------------
# The LSP client


class ReplayClient:
    """A minimal editor: pygls's LanguageClient talking to `python -m bench.replay.typing_replay_server` over stdio."""

    def __init__(self, init_options: dict[str, Any], env: dict[str, str] | None = None):
        from pygls.lsp.client import LanguageClient

        self.init_options = init_options
        #: The server process's environment (None: this process's), e.g. its own INFILL_RUN_DIR.
        self.env = env
        self.client = LanguageClient("infill-typing-replay", "1")
        self.status: list[dict[str, Any]] = []
        self.next_edit = NextEditRequests(self.client, False)
        self._register_handlers()

    def _register_handlers(self) -> None:
        client = self.client

        @client.feature("infill/didChangeStatus")
        def on_status(params: Any) -> None:
            kind = getattr(params, "kind", None) or (params.get("kind") if isinstance(params, dict) else None)
            message = getattr(params, "message", None) or (params.get("message") if isinstance(params, dict) else "")
            detail = getattr(params, "detail", None) or (params.get("detail") if isinstance(params, dict) else None)
            # `at`: when it arrived (perf_counter), for spawn → ready times
            self.status.append({"kind": kind, "message": message, "detail": detail, "at": time.perf_counter()})

        @client.feature("window/logMessage")
        def on_log(params: Any) -> None:
            pass

        @client.feature("window/showMessage")
        def on_show(params: Any) -> None:
            pass

        @client.feature("$/progress")
        def on_progress(params: Any) -> None:
            pass

        @client.feature("window/workDoneProgress/create")
        def on_progress_create(params: Any) -> None:
            return None

    async def start(self) -> None:
        from lsprotocol import types

        await self.client.start_io(sys.executable, "-m", "bench.replay.typing_replay_server", cwd=str(REPO_ROOT),
                                   env=self.env)
        capabilities = types.ClientCapabilities(
            general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
            window=types.WindowClientCapabilities(work_done_progress=True),
            text_document=types.TextDocumentClientCapabilities(
                synchronization=types.TextDocumentSyncClientCapabilities(),
                inline_completion=types.InlineCompletionClientCapabilities(dynamic_registration=False)))
        #: The server's InitializeResult (the soak reads the capabilities it advertises).
        self.initialize_result = await self.client.initialize_async(types.InitializeParams(
            capabilities=capabilities, process_id=None, root_uri=None, initialization_options=self.init_options))
        self.client.initialized(types.InitializedParams())

    async def stats(self) -> dict[str, Any] | None:
        result = await self.client.protocol.send_request_async(STATS_METHOD, {})
        return _plain(result)

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 30)
            self.client.exit(None)
        except Exception:  # the server may already be gone; stop() below still reaps it
            pass
        await self.client.stop()


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (int, float, str, bool)):
        return value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "_asdict"):  # pygls turns JSON objects into namedtuples
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


#: `--next-edit`: the server's next-edit settings per choice. "on" is the shipped default (model-free propagation;
#: model-based NES only for an NES-trained model), "model" also asks the completion model in the sweep form.
NEXT_EDIT_SETTINGS: dict[str, dict[str, Any]] = {
    "off": {"nextEdit": {"enabled": False}},
    "on": {"nextEdit": {"enabled": True}},
    "model": {"nextEdit": {"enabled": True, "format": "sweep"}},
}


class NextEditRequests:
    """What an NES client adds to the typing: `textDocument/copilotInlineEdit` after every change, the previous one
    cancelled when still in flight (no client-side debounce: the most an NES client can ask)."""

    def __init__(self, client: Any, enabled: bool):
        self.client = client
        self.enabled = enabled
        self.sent = 0
        self.answered = 0
        self.edits = 0
        self._pending: tuple[int, Any] | None = None

    def after_change(self, uri: str, version: int, line: int, col: int) -> None:
        if not self.enabled:
            return
        from lsprotocol import types

        if self._pending is not None and not self._pending[1].done():
            self.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=self._pending[0]))
        self.sent += 1
        msg_id = f"nes-{uri}-{version}"
        future = self.client.protocol.send_request("textDocument/copilotInlineEdit", {
            "textDocument": {"uri": uri, "version": version}, "position": {"line": line, "character": col},
            "context": {"triggerKind": 2}}, msg_id=msg_id)
        future.add_done_callback(self._done)
        self._pending = (msg_id, future)

    def _done(self, future: Any) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        self.answered += 1
        self.edits += bool((_plain(future.result()) or {}).get("edits"))

    def counts(self) -> dict[str, int]:
        return {"sent": self.sent, "answered": self.answered, "edits": self.edits}


async def replay_file(rc: ReplayClient, path: Path, uri_index: int, args: argparse.Namespace,
                      result: VariantResult) -> None:
    from lsprotocol import types

    text = path.read_text(encoding="utf-8")
    region = choose_region(text, args.start_fraction, args.max_keystrokes)
    before, region_text, after = text[:region.start], text[region.start:region.end], text[region.end:]
    keystrokes = plan_keystrokes(region_text)
    language = LANGUAGE_IDS.get(path.suffix, "plaintext")
    # A distinct URI per run keeps documents apart; the path part keeps the real file name (exclusion globs).
    uri = f"file:///infill-replay/{uri_index}/{path.name}"
    client = rc.client
    version = 1
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id=language, version=version, text=before + after)))
    interval = 1.0 / args.cps
    pending: list[tuple[str, Any]] = []  # (request id, concurrent.futures.Future)
    records: list[RequestRecord] = []
    typed = ""
    next_time = time.perf_counter()
    for index, key in enumerate(keystrokes):
        delay = next_time - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        cursor_line, cursor_col = position_of(before + typed)
        version += 1
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(cursor_line, cursor_col), types.Position(cursor_line, cursor_col)),
                text=key.text)]))
        typed += key.text
        sent = time.perf_counter()
        line, col = position_of(before + typed)
        rc.next_edit.after_change(uri, version, line, col)
        record = RequestRecord(file=path.name, keystroke=index, sent=sent, offset=len(typed))
        records.append(record)
        msg_id = f"replay-{uri_index}-{index}"
        future = client.protocol.send_request(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line, col),
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic)),
            msg_id=msg_id)
        typed_next = region_text[len(typed):]
        line_before_cursor = (before + typed)[(before + typed).rfind("\n") + 1:]
        future.add_done_callback(_on_answer(record, typed_next, line, line_before_cursor))
        if args.client_cancel and pending and not pending[-1][1].done():
            client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=pending[-1][0]))
        pending.append((msg_id, future))
        next_time += interval + (args.line_pause if "\n" in key.text else 0.0)
        result.keystrokes += 1
        result.typed_chars += len(key.text)
    # The last answer is shown until the user moves on.
    final_deadline = time.perf_counter() + args.answer_timeout
    while any(not f.done() for _, f in pending) and time.perf_counter() < final_deadline:
        await asyncio.sleep(0.05)
    await asyncio.sleep(args.line_pause)
    # Shown: answered before the next keystroke was typed (the editor drops answers for an outdated document).
    for record, following in zip(records, records[1:] + [None]):
        limit = following.sent if following is not None else float("inf")
        record.shown = bool(record.text) and record.answered is not None and record.answered <= limit
        if not record.shown:
            record.first_line_exact = False
            record.accepted = 0
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri)))
    result.requests.extend(records)


def _on_answer(record: RequestRecord, typed_next: str, line: int, line_before_cursor: str):
    def done(future: Any) -> None:
        item = answer_item(future, record)
        if item is None:
            return
        replaced = ""
        if item.range is not None and item.range.start.line == line:
            start_col = item.range.start.character
            # utf-16 column → index in the line (the replay files are mostly ASCII; be exact anyway)
            index, units = 0, 0
            while index < len(line_before_cursor) and units < start_col:
                units += utf16_len(line_before_cursor[index])
                index += 1
            replaced = line_before_cursor[index:]
        text = suggestion_after_cursor(_item_text(item), replaced)
        if not text:
            return
        record.text = text
        record.first_line_exact = first_line_matches(text, typed_next)
        record.accepted = accepted_chars(text, typed_next)
    return done


async def run_variant(variant: str, files: Sequence[Path], args: argparse.Namespace,
                      model_settings: dict[str, Any]) -> Any:
    from engine.config import merge

    settings = merge(merge(model_settings, VARIANTS[variant]), NEXT_EDIT_SETTINGS[args.next_edit])
    accepting = args.user == "accepting"
    result: Any = (AcceptRun(variant=variant, settings=settings) if accepting
                   else VariantResult(variant=variant, settings=settings))
    rc = ReplayClient(settings)
    rc.next_edit.enabled = args.next_edit != "off"
    await rc.start()
    try:
        await warm_up(rc, args)
        result.stats_before = await rc.stats()
        started = time.perf_counter()
        for index, path in enumerate(files):
            if isinstance(result, AcceptRun):
                await replay_file_accepting(rc, path, index, args, result)
            else:
                await replay_file(rc, path, index, args, result)
            if not args.quiet:
                count = result.actions if isinstance(result, AcceptRun) else result.keystrokes
                print(f"  {variant}: replayed {path.name} ({count} keystrokes so far, "
                      f"{time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
        result.seconds = time.perf_counter() - started
        result.stats_after = await rc.stats()
        result.next_edit_requests = rc.next_edit.counts()
        result.server_restarts = [str(s["message"]) for s in rc.status if "Restarting llama-server" in
                                  str(s.get("message") or "")]
    finally:
        await rc.stop()
    return result


async def warm_up(rc: ReplayClient, args: argparse.Namespace) -> None:
    """One invoked request on a scratch document, so model loading is not counted as typing latency."""
    from lsprotocol import types

    uri = "file:///infill-replay/warm-up.py"
    rc.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text="def add(a, b):\n    ")))
    try:
        await asyncio.wait_for(rc.client.text_document_inline_completion_async(types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(1, 4),
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked))),
            args.ready_timeout)
    except Exception as exc:
        statuses = "; ".join(f"{s['kind']}: {s['message']}" for s in rc.status) or "no status received"
        raise RuntimeError(f"typing replay: the server could not complete a warm-up request ({exc}); "
                           f"server status: {statuses}") from exc
    rc.client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri)))


# ---------------------------------------------------------------------------------------------------------------------
# Command line


def default_files() -> list[Path]:
    return sorted(p for p in REPLAY_DIR.iterdir() if p.suffix in LANGUAGE_IDS)


def model_settings(args: argparse.Namespace) -> dict[str, Any]:
    completion: dict[str, Any] = {"kind": "local", "local": {"extraArgs": ["--metrics", *args.server_arg]}}
    if args.model:
        completion["model"] = args.model
    if args.max_prefix_tokens is not None:
        completion["maxPrefixTokens"] = args.max_prefix_tokens
    if args.binary:
        completion["local"]["binary"] = args.binary
    settings: dict[str, Any] = {"completion": completion}
    for item in args.setting:  # a server setting for both variants, to compare a setting's values run by run
        key, _, value = item.partition("=")
        settings[key] = json.loads(value)
    return settings


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


ROWS = (
    ("keystroke → suggestion, median (ms)", "latency_ms_median", 0),
    ("keystroke → suggestion, p95 (ms)", "latency_ms_p95", 0),
    ("suggestions shown / 100 keystrokes", "shown_per_100_keystrokes", 1),
    ("first line exact (% of shown)", "first_line_exact_share", 1),
    ("accepted chars per shown suggestion", "accepted_chars_per_shown", 1),
    ("accepted chars (% of typed)", "accepted_chars_share_of_typed", 1),
    ("model calls / 100 keystrokes", "model_calls_per_100_keystrokes", 1),
    ("prefilled prompt tokens per model call", "prefilled_tokens_per_call", 1),
    ("prefilled prompt tokens per shown suggestion", "prefilled_tokens_per_shown", 1),
    ("prefilled prompt tokens, total", "prefilled_tokens_total", 0),
    ("requests answered (%)", "answered_share", 1),
    ("llama-server restarts (thread policy)", "llama_server_restarts", 0),
)


def format_table(summaries: dict[str, dict[str, Any]], ratio: dict[str, Any] | None) -> str:
    names = list(summaries)
    accepting = any(s.get("user") == "accepting" for s in summaries.values())
    pair = " / ".join(names[:2])
    header = "| metric | " + " | ".join(names) + (f" | {pair} |" if ratio is not None else " |")
    lines = [header, "|" + "---|" * (len(names) + 1 + (ratio is not None))]
    for label, key, digits in (ROWS_ACCEPTING if accepting else ROWS):
        cells = [_fmt(summaries[n].get(key), digits) for n in names]
        tail = f" | {_fmt(ratio.get(key), 2)}" if ratio is not None else ""
        lines.append(f"| {label} | " + " | ".join(cells) + tail + " |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m bench.replay.typing_replay",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help=f"source files to replay (default: {REPLAY_DIR})")
    parser.add_argument("--variant", action="append", choices=list(VARIANTS),
                        help="default: ours and naive (passive user), ours and nospec (accepting user)")
    parser.add_argument("--cps", type=float, default=10.0, help="typing speed, characters per second (default 10)")
    parser.add_argument("--line-pause", type=float, default=1.0, help="seconds of pause after each Enter (default 1)")
    parser.add_argument("--max-keystrokes", type=int, default=200, help="keystrokes per file (default 200)")
    parser.add_argument("--start-fraction", type=float, default=0.3,
                        help="where in each file the typed region starts (default 0.3)")
    parser.add_argument("--model", help="GGUF path or model id (default: the embedded Gemma 3 270M)")
    parser.add_argument("--binary", help="llama-server binary (default: Infill's discovery)")
    parser.add_argument("--max-prefix-tokens", type=int, metavar="N",
                        help="prompt budget for the text before the cursor, both variants (default: the shipped 1024);"
                             " a small one makes short files exceed it, so prompt clipping takes part")
    parser.add_argument("--smoke", action="store_true",
                        help=f"tiny test model, one file, {SMOKE_KEYSTROKES} keystrokes: checks that the replay runs")
    parser.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                        help="extra llama-server argument for both variants, e.g. --server-arg=--swa-full "
                             "(repeatable)")
    parser.add_argument("--setting", action="append", default=[], metavar="KEY=JSON",
                        help="a top-level server setting for both variants, its value as JSON, e.g. "
                             "--setting confidence_floor=-1.0 (repeatable)")
    parser.add_argument("--user", choices=("passive", "accepting"), default="passive",
                        help="passive: types everything and only judges suggestions (default); accepting: accepts "
                             "right suggestions, whole or word/line-wise (bench/replay/accepting_user.py)")
    parser.add_argument("--accept-pause", type=float, default=0.5,
                        help="accepting user: seconds it reads the next suggestion after an accept (default 0.5)")
    parser.add_argument("--min-accept", type=int, default=2,
                        help="accepting user: fewest characters worth an accept (default 2)")
    parser.add_argument("--no-report-shown", dest="report_shown", action="store_false",
                        help="accepting user: do not send textDocument/didShowCompletion (as Neovim's plugin)")
    parser.add_argument("--client-cancel", action="store_true",
                        help="also send $/cancelRequest for the previous request (default: rely on the server)")
    parser.add_argument("--next-edit", choices=list(NEXT_EDIT_SETTINGS), default="off",
                        help="also send textDocument/copilotInlineEdit after each change, as an NES client does: "
                             "on = the shipped next-edit settings, model = model-based NES with the completion "
                             "model too (default: off, no NES requests and next edits disabled)")
    parser.add_argument("--ready-timeout", type=float, default=300.0, help="seconds to wait for the model to load")
    parser.add_argument("--answer-timeout", type=float, default=60.0,
                        help="seconds to wait for outstanding answers at the end of a file")
    parser.add_argument("--output", type=Path, help="JSON file (default: bench/results/typing-<time>.json)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


async def run(args: argparse.Namespace) -> dict[str, Any]:
    files = list(args.files) or default_files()
    if args.smoke:
        from ..quality.suites import smoke_model_path

        files = files[:1]
        args.max_keystrokes = min(args.max_keystrokes, SMOKE_KEYSTROKES)
        args.model = args.model or str(smoke_model_path())
    for path in files:
        if not path.is_file():
            raise FileNotFoundError(f"typing replay: file not found: {path}")
    variants = args.variant or list(DEFAULT_VARIANTS[args.user])
    summaries: dict[str, dict[str, Any]] = {}
    raw: dict[str, Any] = {}
    for variant in variants:
        result = await run_variant(variant, files, args, model_settings(args))
        accepting = isinstance(result, AcceptRun)
        summaries[variant] = summarise_accepting(result) if accepting else summarise(result)
        raw[variant] = {"settings": result.settings, "stats_before": result.stats_before,
                        "stats_after": result.stats_after, "next_edit_requests": result.next_edit_requests,
                        "server_restarts": result.server_restarts,
                        "requests": [{**asdict(r), "latency_ms": r.latency_ms} for r in result.requests]}
        if accepting:
            raw[variant]["accepts"] = [asdict(a) for a in result.accepts]
        summaries[variant]["llama_server_restarts"] = len(result.server_restarts)
    ratio = ratios(summaries[variants[0]], summaries[variants[1]]) if len(variants) >= 2 else None
    return {
        "benchmark": "typing_replay",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "config": {"files": [str(p) for p in files], "cps": args.cps, "line_pause": args.line_pause,
                   "max_keystrokes": args.max_keystrokes, "start_fraction": args.start_fraction,
                   "model": args.model or "default (Gemma 3 270M)", "smoke": bool(args.smoke),
                   "client_cancel": bool(args.client_cancel), "server_args": list(args.server_arg),
                   "settings": list(args.setting),
                   "max_prefix_tokens": args.max_prefix_tokens, "user": args.user,
                   "accept_pause": args.accept_pause, "min_accept": args.min_accept,
                   "report_shown": args.report_shown, "next_edit": args.next_edit},
        "summary": summaries,
        "ratios": ratio,
        "variants": raw,
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    report = asyncio.run(run(args))
    output = args.output
    if output is None:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        tag = ("smoke" if args.smoke else "full") + ("-accepting" if args.user == "accepting" else "") \
            + (f"-nes-{args.next_edit}" if args.next_edit != "off" else "")
        output = RESULTS_DIR / f"typing-{tag}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1))
    print(format_table(report["summary"], report["ratios"]))
    print(f"\nwrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
