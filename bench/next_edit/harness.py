"""Runs next-edit tasks through the real server: `python -m lsp_server serve --stdio`, driven by pygls's client
exactly as an NES client drives it (didOpen, one didChange per replayed hunk, `textDocument/copilotInlineEdit` at
the cursor, didClose), so history, propagation, prompt, diff and discard rules are all in what is measured.

A mode is one server configuration: model-free propagation alone, a scripted model in one prompt form (the loopback
server of bench.next_edit.scripted, which returns the true rewrite of the window it is shown), or a real model."""

from __future__ import annotations

import asyncio
import difflib
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from .scripted import ScriptedModel
from .tasks import Task

LANGUAGE_IDS = {"python": "python", "javascript": "javascript", "typescript": "typescript", "c": "c"}
METHOD = "textDocument/copilotInlineEdit"
#: One request's deadline; a real model on a shared 2-core machine can be slow, but never this slow.
REQUEST_TIMEOUT = 300.0


@dataclass(frozen=True)
class Mode:
    name: str
    #: Settings merged into the server's initialization options (the `next_edit` section and the models).
    settings: dict[str, Any]
    #: The scripted model's prompt form, when the mode uses one ("sweep", "zeta2", "instruction").
    scripted: str | None = None


@dataclass
class Outcome:
    task_id: str
    language: str
    has_next: bool
    substitution_like: bool
    proposed: bool
    exact: bool              # the proposed edit gives exactly the text after the true next edit
    exact_any: bool          # ... or after another pending hunk of the same sequence
    location: bool           # the proposed edit's lines overlap the true next hunk's lines
    step: bool               # exact, or part of the true next edit (e.g. one of the hunk's two occurrences)
    latency_ms: float
    source: str = ""         # "propagated" / "model" / "" (from the server's counters)
    discarded: str = ""      # the discard reason the server counted for this request, if any
    scripted: str = ""       # what the scripted model saw: "rewrite", "outside window", "unparsed", "none", ""
    edit: dict[str, Any] | None = None
    error: str = ""


def plain(value: Any) -> Any:
    """pygls hands unknown JSON objects back as namedtuples: turn them into dicts and lists again."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def raw_results_converter() -> Any:
    """pygls's converter, except that results of methods lsprotocol does not know (copilotInlineEdit, infill/stats)
    stay plain JSON: its namedtuples rename keys that are not identifiers ("no change" becomes "_0")."""
    from pygls.protocol import JsonRPCResponseMessage, default_converter

    converter = default_converter()
    converter.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    return converter


def offset_of(text: str, line: int, character: int) -> int:
    """Code-point offset of an LSP position (UTF-16 column); positions past a line's end clamp to it."""
    start = 0
    for _ in range(line):
        nl = text.find("\n", start)
        if nl < 0:
            return len(text)
        start = nl + 1
    end = text.find("\n", start)
    row = text[start:end if end >= 0 else len(text)]
    units = 0
    for i, ch in enumerate(row):
        if units >= character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(row)


def apply_edit(text: str, edit: dict[str, Any]) -> tuple[str, tuple[int, int]]:
    """`text` with one Copilot-shaped edit applied, and the edit's first and last line."""
    r = edit["range"]
    start = offset_of(text, r["start"]["line"], r["start"]["character"])
    end = offset_of(text, r["end"]["line"], r["end"]["character"])
    return text[:start] + edit["text"] + text[end:], (r["start"]["line"], r["end"]["line"])


def overlaps(edit_lines: tuple[int, int], hunk: tuple[int, int]) -> bool:
    """Whether an edit touching lines [a, b] (inclusive) overlaps a hunk of lines [s, e); an insertion hunk (s == e)
    is the boundary between lines s-1 and s, touched by an edit on either."""
    a, b = edit_lines
    s, e = hunk
    if s == e:
        return a <= s and b >= s - 1
    return a < e and b >= s


def step_toward(task: Task, result: str) -> bool:
    """Whether `result` (the text after a proposed edit) is part of the true next edit: it changed nothing outside
    the true hunk's lines and brought those lines closer to their next state (one of two occurrences renamed)."""
    if task.expected is None or task.expected_lines is None:
        return False
    s, e = task.expected_lines
    cur, res, exp = task.current.split("\n"), result.split("\n"), task.expected.split("\n")
    if len(res) != len(cur) or e <= s or res[:s] != cur[:s] or res[e:] != cur[e:]:
        return False
    grown = len(exp) - len(cur)
    target = "\n".join(exp[s:e + grown])
    before = difflib.SequenceMatcher(None, "\n".join(cur[s:e]), target, autojunk=False).ratio()
    after = difflib.SequenceMatcher(None, "\n".join(res[s:e]), target, autojunk=False).ratio()
    return after > before


def judge(task: Task, edit: dict[str, Any] | None) -> tuple[bool, bool, bool, bool]:
    """(exact, exact_any, location, step) of a proposed edit for a task."""
    if edit is None:
        return False, False, False, False
    result, lines = apply_edit(task.current, edit)
    exact = task.expected is not None and result == task.expected
    exact_any = result in task.pending
    # an exact edit is at the right place even where the diff put the hunk on other lines (repeated lines)
    location = exact or (task.expected_lines is not None and overlaps(lines, task.expected_lines))
    return exact, exact_any, location, exact or step_toward(task, result)


def counters(stats: Any) -> dict[str, Any]:
    """The next-edit counters of `infill/stats` (an empty dict when the server has none)."""
    stats = plain(stats) or {}
    value = stats.get("next_edit") if isinstance(stats, dict) else None
    return value if isinstance(value, dict) else {}


def counter_delta(before: dict[str, Any], after: dict[str, Any]) -> tuple[str, str]:
    """(source, discard reason) of the one request between two stats snapshots."""
    source = next((k for k in ("propagated", "model") if after.get(k, 0) != before.get(k, 0)), "")
    b, a = before.get("discarded") or {}, after.get("discarded") or {}
    return source, "+".join(k for k in sorted(a) if a.get(k, 0) != b.get(k, 0))


def server_env() -> dict[str, str]:
    from ..common.paths import scratch_dir

    home = scratch_dir("infill-nes-bench-")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env.update(XDG_CONFIG_HOME=f"{home}/config", XDG_STATE_HOME=f"{home}/state",
               PYTHONPATH=root + os.pathsep + env.get("PYTHONPATH", ""))
    return env


@dataclass
class Session:
    """A started server and its client."""

    client: Any
    scripted: ScriptedModel | None
    versions: dict[str, int] = field(default_factory=dict)


async def start(mode: Mode, base_options: dict[str, Any], urls: dict[str, str]) -> Session:
    from pygls.lsp.client import LanguageClient

    from ..common.lsp_support import start_server

    scripted = await ScriptedModel(mode.scripted).start() if mode.scripted else None
    options = fill_endpoints(merge(base_options, mode.settings),
                             {**urls, **({"scripted": scripted.url} if scripted else {})})
    client = LanguageClient("infill-nes-bench", "1", converter_factory=raw_results_converter)
    ready = asyncio.Event()
    failed: list[str] = []

    @client.feature("infill/didChangeStatus")
    def _status(params: Any) -> None:
        kind = plain(params).get("kind") if isinstance(plain(params), dict) else getattr(params, "kind", None)
        if kind == "ready":
            ready.set()
        elif kind == "error":
            failed.append(str(plain(params)))
            ready.set()

    await start_server(client, options, server_env())
    await asyncio.wait_for(ready.wait(), 600)
    if failed:
        await stop(Session(client, scripted))
        raise RuntimeError(f"the server did not start for mode {mode.name}: {failed[0]}")
    return Session(client, scripted)


async def stop(session: Session) -> None:
    try:
        await asyncio.wait_for(session.client.shutdown_async(None), 30)
        session.client.exit(None)
    except Exception:  # already gone: stop() below reaps it
        pass
    await session.client.stop()
    if session.scripted is not None:
        await session.scripted.stop()


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def fill_endpoints(options: Any, urls: dict[str, str]) -> Any:
    """Every `"api_endpoint": NAME` in the options with NAME in `urls` ("scripted", "default-model") pointed at
    that server."""
    if isinstance(options, dict):
        return {k: (urls[v] if k == "api_endpoint" and isinstance(v, str) and v in urls
                    else fill_endpoints(v, urls)) for k, v in options.items()}
    return options


async def run_task(session: Session, task: Task, index: int) -> Outcome:
    from lsprotocol import types

    client = session.client
    uri = f"file:///nes-bench/{index}/{task.path}"
    version = 1
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id=LANGUAGE_IDS.get(task.language, task.language), version=version, text=task.base)))
    for change in task.changes:
        version += 1
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(*change.start), end=types.Position(*change.end)),
                text=change.text)]))
    scripted = session.scripted
    asked = 0
    if scripted is not None:
        scripted.expect(task.current, task.expected, offset_of(task.current, *task.cursor))
        scripted.last = ""
        asked = scripted.requests
    before = counters(await client.protocol.send_request_async("infill/stats", {}))
    params = {"textDocument": {"uri": uri, "version": version},
              "position": {"line": task.cursor[0], "character": task.cursor[1]}, "context": {"triggerKind": 2}}
    error = ""
    started = time.perf_counter()
    try:
        result = plain(await asyncio.wait_for(client.protocol.send_request_async(METHOD, params), REQUEST_TIMEOUT))
    except Exception as exc:  # an error answer is a result of the benchmark, not a crash of it
        result, error = None, f"{type(exc).__name__}: {exc}"[:300]
    latency = (time.perf_counter() - started) * 1000
    after = counters(await client.protocol.send_request_async("infill/stats", {}))
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    edits = (result or {}).get("edits") or [] if isinstance(result, dict) else []
    edit = edits[0] if edits else None
    exact, exact_any, location, step = judge(task, edit)
    source, discarded = counter_delta(before, after)
    return Outcome(task_id=task.task_id, language=task.language, has_next=task.expected is not None,
                   substitution_like=task.substitution_like, proposed=edit is not None, exact=exact,
                   exact_any=exact_any, location=location, step=step, latency_ms=latency, source=source,
                   discarded=discarded,
                   scripted=scripted.last if scripted is not None and scripted.requests > asked else "",
                   edit={"range": edit["range"], "text": edit["text"]} if edit else None, error=error)


async def run_mode(mode: Mode, tasks: Sequence[Task], base_options: dict[str, Any],
                   urls: dict[str, str] | None = None, progress: bool = True) -> list[Outcome]:
    session = await start(mode, base_options, urls or {})
    outcomes = []
    try:
        for i, task in enumerate(tasks):
            outcomes.append(await run_task(session, task, i))
            if progress and (i + 1) % 100 == 0:
                print(f"  {mode.name}: {i + 1}/{len(tasks)}", file=sys.stderr)
    finally:
        await stop(session)
    return outcomes


def outcome_dicts(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    return [asdict(o) for o in outcomes]
