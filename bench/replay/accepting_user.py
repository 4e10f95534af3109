"""The typing replay's accepting user (`python3 -m bench.replay.typing_replay --user accepting`).

The passive user of the plain replay types every character and only looks at suggestions. This one takes them, as
a user of VS Code or Neovim does: at each moment it would type, if the suggestion on screen is what it is about to
write, it accepts it — whole (Tab) when all of it is right, else the longest right part that ends at a word or line
boundary (Accept Next Word / Line, which both editors offer). It then carries on from the accepted state, so the
next suggestion is for a document the user did not type by hand, and the server receives what a real client sends:
the `didChange` with the accepted text, then `workspace/executeCommand` with the item's command for a whole accept
or `textDocument/didPartiallyAcceptCompletion {item, acceptedLength}` for a partial one, then the automatic inline
request for the new state. With `report_shown` (VS Code's behaviour; Neovim's plugin does not report showing) the
client also sends `textDocument/didShowCompletion {item}` when a suggestion appears.

Timing: keystrokes at --cps, --line-pause after Enter, and after an accept the user reads the next suggestion for
--accept-pause seconds before acting again (accepting it too when it is right: Tab, Tab, Tab).

Headline figures: keystrokes saved (% of the region's characters not typed by hand), suggestions shown and wrong
suggestions shown (nothing of them was right) per 100 user actions, accept → next suggestion latency."""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .editing import (
    LANGUAGE_IDS,
    Answer,
    _delta,
    _item_text,
    _percentile,
    accepted_chars,
    answer_item,
    choose_region,
    position_of,
)

#: Character classes whose changes are word-accept stops (roughly VS Code's word navigation).
_NEWLINE, _SPACE, _WORD, _OTHER = range(4)


def _char_class(ch: str) -> int:
    if ch in "\r\n":
        return _NEWLINE
    if ch in " \t":
        return _SPACE
    if ch.isalnum() or ch == "_":
        return _WORD
    return _OTHER


def accept_length(suggestion: str, truth: str) -> tuple[int, bool]:
    """(characters the user accepts, whole) for a suggestion shown where `truth` is what the user writes next.

    Whole when the entire suggestion is right; otherwise the longest right prefix that ends where the character
    class changes (word, blank, line break, punctuation), which is how far repeated Accept Next Word / Line get."""
    common = accepted_chars(suggestion, truth)
    if common == len(suggestion) and suggestion:
        return common, True
    for k in range(common, 0, -1):
        if _char_class(suggestion[k - 1]) != _char_class(suggestion[k]):
            return k, False
    return 0, False


def next_keystroke(region_text: str, position: int) -> str:
    """One character, or a line break plus the indentation an editor inserts after it."""
    end = position + 1
    if region_text[position] == "\n":
        while end < len(region_text) and region_text[end] in " \t":
            end += 1
    return region_text[position:end]


@dataclass
class Shown:
    """An answer with a suggestion, for the document version it was asked for."""

    version: int
    text: str
    item: Any
    answered: float | None
    request: int  # index into AcceptRun.requests


@dataclass
class AcceptRecord:
    file: str
    at: float
    chars: int
    whole: bool
    #: Time from the accept to the answer of the request made right after it, when that answer had a suggestion.
    next_latency_ms: float | None = None
    #: That suggestion was on screen before the user's next action.
    next_shown: bool = False


@dataclass(kw_only=True)
class AcceptRequest(Answer):
    version: int
    after_accept: bool = False
    #: Shown and nothing of it was accepted or typed through (a distraction).
    wrong: bool = False


@dataclass
class AcceptRun:
    variant: str
    settings: dict[str, Any]
    actions: int = 0  # keystrokes typed + accept actions
    typed_keystrokes: int = 0
    region_chars: int = 0
    accepted_chars: int = 0
    requests: list[AcceptRequest] = field(default_factory=list)
    accepts: list[AcceptRecord] = field(default_factory=list)
    stats_before: dict[str, Any] | None = None
    stats_after: dict[str, Any] | None = None
    seconds: float = 0.0
    #: `--next-edit`: the copilotInlineEdit requests sent alongside (sent / answered / with an edit).
    next_edit_requests: dict[str, int] = field(default_factory=dict)
    #: The supervisor's "Restarting llama-server with N thread(s)" statuses during the run (the thread policy).
    server_restarts: list[str] = field(default_factory=list)


def summarise_accepting(run: AcceptRun) -> dict[str, Any]:
    reqs = run.requests
    answered = [r for r in reqs if r.answered is not None]
    with_text = [r for r in answered if r.text]
    shown = [r for r in with_text if r.shown]
    latencies = [r.latency_ms for r in with_text if r.latency_ms is not None]
    per100 = 100.0 / run.actions if run.actions else 0.0
    # After a partial accept the rest of the same suggestion is shown again at once (typing-through); the
    # latency that matters is after a whole accept, when the next suggestion is for new text.
    whole = [a for a in run.accepts if a.whole]
    next_lat = [a.next_latency_ms for a in whole if a.next_latency_ms is not None]
    calls = _delta(run.stats_before, run.stats_after, "calls_started")
    before = (run.stats_before or {}).get("llama_server_metrics") or {}
    after = (run.stats_after or {}).get("llama_server_metrics") or {}
    prefilled = (after["prompt_tokens_total"] - before.get("prompt_tokens_total", 0.0)
                 if "prompt_tokens_total" in after else _delta(run.stats_before, run.stats_after, "prefilled_tokens"))
    server = (run.stats_after or {}).get("server") or {}
    server_before = (run.stats_before or {}).get("server") or {}

    def server_delta(key: str) -> Any:
        return server[key] - server_before.get(key, 0) if key in server else None

    return {
        "variant": run.variant,
        "user": "accepting",
        "actions": run.actions,
        "typed_keystrokes": run.typed_keystrokes,
        "region_chars": run.region_chars,
        "requests": len(reqs),
        "answered_share": 100.0 * len(answered) / len(reqs) if reqs else None,
        "errors": sum(1 for r in answered if r.error),
        "keystrokes_saved_share": 100.0 * run.accepted_chars / run.region_chars if run.region_chars else None,
        "accepts": len(run.accepts),
        "whole_accepts": sum(1 for a in run.accepts if a.whole),
        "accepts_per_100_actions": len(run.accepts) * per100,
        "shown_per_100_actions": len(shown) * per100,
        "wrong_shown_per_100_actions": sum(1 for r in shown if r.wrong) * per100,
        "latency_ms_median": statistics.median(latencies) if latencies else None,
        "latency_ms_p95": _percentile(latencies, 0.95),
        "accept_to_next_ms_median": statistics.median(next_lat) if next_lat else None,
        "accept_to_next_ms_p95": _percentile(next_lat, 0.95),
        "accept_next_shown_share": 100.0 * sum(a.next_shown for a in whole) / len(whole) if whole else None,
        "model_calls_per_100_actions": calls * per100 if calls is not None else None,
        "prefilled_tokens_total": prefilled,
        "prefilled_tokens_per_shown": prefilled / len(shown) if prefilled is not None and shown else None,
        "prefetch": {key: server_delta(key) for key in
                     ("prefetch_started", "prefetch_completed", "prefetch_cancelled", "prefetch_hits",
                      "prefetch_joined", "prefetch_stale_running", "reused_inflight")},
        "seconds": run.seconds,
    }


ROWS_ACCEPTING = (
    ("keystrokes saved (% of text not typed)", "keystrokes_saved_share", 1),
    ("accepts / 100 actions", "accepts_per_100_actions", 1),
    ("whole accepts", "whole_accepts", 0),
    ("suggestions shown / 100 actions", "shown_per_100_actions", 1),
    ("wrong suggestions shown / 100 actions", "wrong_shown_per_100_actions", 1),
    ("whole accept → next suggestion, median (ms)", "accept_to_next_ms_median", 0),
    ("whole accept → next suggestion, p95 (ms)", "accept_to_next_ms_p95", 0),
    ("next suggestion on screen after a whole accept (%)", "accept_next_shown_share", 1),
    ("keystroke → suggestion, median (ms)", "latency_ms_median", 0),
    ("keystroke → suggestion, p95 (ms)", "latency_ms_p95", 0),
    ("model calls / 100 actions", "model_calls_per_100_actions", 1),
    ("prefilled prompt tokens per shown suggestion", "prefilled_tokens_per_shown", 1),
    ("requests answered (%)", "answered_share", 1),
    ("llama-server restarts (thread policy)", "llama_server_restarts", 0),
)


async def replay_file_accepting(rc: Any, path: Path, uri_index: int, args: Any, run: AcceptRun) -> None:
    """Type one file's region as the accepting user; see the module docstring."""
    from lsprotocol import types


    text = path.read_text(encoding="utf-8")
    region = choose_region(text, args.start_fraction, args.max_keystrokes)
    before, region_text, after = text[:region.start], text[region.start:region.end], text[region.end:]
    language = LANGUAGE_IDS.get(path.suffix, "plaintext")
    uri = f"file:///infill-replay/{uri_index}/{path.name}"
    client = rc.client
    version = 1
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id=language, version=version, text=before + after)))
    run.region_chars += len(region_text)
    position = 0
    futures: list[Any] = []
    current: dict[str, Any] = {"version": version, "shown": None}

    def request(after_accept: bool) -> AcceptRequest:
        line, col = position_of(before + region_text[:position])
        record = AcceptRequest(file=path.name, version=current["version"], sent=time.perf_counter(),
                               after_accept=after_accept)
        run.requests.append(record)
        index = len(run.requests) - 1
        future = client.protocol.send_request(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line, col),
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic)))

        def done(fut: Any) -> None:
            item = answer_item(fut, record)
            if item is None:
                return
            suggestion = _item_text(item)  # the replay's cursor line has nothing after it: no replaced text
            if not suggestion:
                return
            record.text = suggestion
            if record.version == current["version"]:  # an editor shows answers for the current document only
                record.shown = True
                current["shown"] = Shown(record.version, suggestion, item, record.answered, index)
                if args.report_shown:
                    client.protocol.notify("textDocument/didShowCompletion", {"item": _item_json(item)})

        future.add_done_callback(done)
        futures.append(future)
        return record

    def change(inserted: str) -> None:
        nonlocal version
        line, col = position_of(before + region_text[:position])
        version += 1
        current["version"] = version
        current["shown"] = None
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(line, col), types.Position(line, col)), text=inserted)]))
        rc.next_edit.after_change(uri, version, *position_of(before + region_text[:position] + inserted))

    interval = 1.0 / args.cps
    next_time = time.perf_counter()
    #: (accept, the request made right after it, the time of the user's next action), judged at the end.
    accepted_states: list[list[Any]] = []
    while position < len(region_text):
        delay = next_time - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        now = time.perf_counter()
        if accepted_states and accepted_states[-1][2] is None:
            accepted_states[-1][2] = now
        shown: Shown | None = current["shown"]
        truth = region_text[position:]
        length, whole = accept_length(shown.text, truth) if shown is not None else (0, False)
        if shown is not None and length >= args.min_accept:
            accepted = shown.text[:length]
            change(accepted)
            position += length
            run.accepted_chars += length
            if whole and shown.item.command is not None:
                command = shown.item.command
                client.protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
                    command=command.command, arguments=command.arguments))
            elif not whole:
                client.protocol.notify("textDocument/didPartiallyAcceptCompletion",
                                       {"item": _item_json(shown.item), "acceptedLength": _utf16_len(accepted)})
            record = AcceptRecord(file=path.name, at=now, chars=length, whole=whole)
            run.accepts.append(record)
            run.actions += 1
            if position < len(region_text):
                accepted_states.append([record, request(after_accept=True), None])
            next_time = time.perf_counter() + args.accept_pause
            continue
        if shown is not None and common_prefix_empty(shown.text, truth):
            run.requests[shown.request].wrong = True
        key = next_keystroke(region_text, position)
        change(key)
        position += len(key)
        run.typed_keystrokes += 1
        run.actions += 1
        if position < len(region_text):
            request(after_accept=False)
        next_time += interval + (args.line_pause if "\n" in key else 0.0)
        next_time = max(next_time, time.perf_counter())
    deadline = time.perf_counter() + args.answer_timeout
    while any(not f.done() for f in futures) and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)
    for accept, after_request, next_action in accepted_states:
        _close_accept(accept, after_request, float("inf") if next_action is None else next_action)
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri)))


def common_prefix_empty(suggestion: str, truth: str) -> bool:
    return accepted_chars(suggestion, truth) == 0


def _close_accept(accept: AcceptRecord, after: AcceptRequest, next_action: float) -> None:
    if after.answered is not None and after.text:
        accept.next_latency_ms = (after.answered - accept.at) * 1000.0
        accept.next_shown = after.shown and after.answered <= next_action


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _item_json(item: Any) -> dict[str, Any]:
    """The item as the client received it (JSON), for the acceptance notifications."""
    from lsprotocol import converters

    return converters.get_converter().unstructure(item)
