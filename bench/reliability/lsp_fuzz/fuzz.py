"""One fuzz run: `Fuzz` starts the loopback and the server, performs the random actions (open, edit and close
documents; completion and next-edit requests, some cancelled; bursts of typing, storms, pauses; valid and bad
settings; malformed traffic) while keeping the reference documents, then ends the server and gathers the run's
report. The actions' random choices come from the seed; timing enters only through what the server has answered
by then (the suggestion ids next-edit traffic shows and accepts) and through the order in which model requests reach
the loopback, which draws its answers from a generator of its own."""

from __future__ import annotations

import asyncio
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

from .backend import CANARY, INJECTED, Backend
from .client import INTERNAL_ERROR, Client, ServerProcess, children, initialize, rss_kb
from .oracle import PromptOracle
from .settings import BAD_SETTINGS, KINDS, PREFIX_BUDGETS, SUFFIX_BUDGETS, merge
from .text import Doc, big_text, column_of, offset_at, random_position, random_text


class Fuzz(PromptOracle):
    """One seeded run against one server process, in one position encoding (`run()` returns its report)."""

    def __init__(self, seed: int, encoding: str, actions: int, big_size: int, workdir: Path,
                 progress: bool = False, protocols: tuple[str, ...] = tuple(KINDS), vary: bool = True):
        super().__init__()
        self.progress = progress
        self.rng = random.Random(seed)
        self.seed = seed
        self.encoding = encoding
        self.actions = actions
        self.big_size = big_size
        self.workdir = workdir
        self.docs: dict[str, Doc] = {}
        self.closed: list[str] = []
        #: The kinds (KINDS) the run switches between, and whether configuration changes also switch workspace
        #: context on and off and change the prompt budgets.
        self.protocols = protocols
        self.vary = vary
        self.protocol = self.rng.choice(protocols)
        self.counts: dict[str, int] = {}
        #: Messages sent that have no id the server can echo: each must get one `"id": null` error answer.
        self.unidentified = 0
        self.bad_settings = 0
        self.rss: list[int] = []
        self.uri_counter = 0
        self.excluded_uris: set[str] = set()
        #: Request id → the (line, character) the cursor really is at (positions past an end clamped).
        self.cursors: dict[int, tuple[int, int]] = {}
        #: Ids of the copilotInlineEdit requests sent (their answers hold the suggestion ids to show and accept).
        self.next_edit_requests: list[int] = []

    def count(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1

    def settings(self, endpoint: str, protocol: str | None = None, context: bool = False,
                 prefix_tokens: int = PREFIX_BUDGETS[0], suffix_tokens: int = SUFFIX_BUDGETS[0]) -> dict[str, Any]:
        root = endpoint.removesuffix("/v1")
        completion = KINDS[protocol or self.protocol](root)
        completion.update({"max_prefix_tokens": prefix_tokens, "max_suffix_tokens": suffix_tokens,
                           "http": {"read_timeout": 2.0, "max_retries": 1}})
        return {"completion": completion,
                "debounce": {"mode": "fixed", "fixed_ms": 0}, "max_tokens": 16, "request_timeout": 2.0,
                "exclude": ["**/secret_*"], "log_level": os.environ.get("INFILL_FUZZ_LOG_LEVEL", "warning"),
                "cache_size": 20,
                # Snippets of other files go above the prefix (the oracle allows a context block there).
                "context": {"enabled": context},
                # A prefetch asks for the state after an acceptance that never happens.
                "speculation": {"prefetch": False}}

    def new_uri(self, excluded: bool = False) -> str:
        self.uri_counter += 1
        if excluded:
            name = self.rng.choice([".env", f"secret_{self.uri_counter}.py", "id_rsa", "server.pem"])
            uri = f"file://{self.workdir}/x{self.uri_counter}/{name}"
            self.excluded_uris.add(uri)
            return uri
        ext = self.rng.choice(["py", "js", "ts", "txt", "zz"])
        if self.rng.random() < 0.03:  # spellings urllib cannot parse or re-encode: the document is served all the same
            return self.rng.choice([f"file://{self.workdir}/src/\ud800{self.uri_counter}.{ext}",
                                    f"http://[::1/src/f{self.uri_counter}.{ext}"])
        return f"file://{self.workdir}/src/f{self.uri_counter}.{ext}"

    # --- actions ---------------------------------------------------------------------------------------------------

    def twin_uri(self) -> str | None:
        """Another spelling of an open document's URI (a character of its name percent-encoded, as some clients
        and fuzzers write it): LSP-equivalent, but the client opens it as a document of its own."""
        names = [uri for uri in self.docs if uri not in self.excluded_uris]
        if not names:
            return None
        uri = self.rng.choice(names)
        head, _, name = uri.rpartition("/")
        i = self.rng.randrange(len(name))
        twin = f"{head}/{name[:i]}%{ord(name[i]):02X}{name[i + 1:]}" if name[i] != "%" else None
        return twin if twin is not None and twin not in self.docs else None

    def open(self, client: Client, big: bool = False, excluded: bool = False) -> None:
        reopen = self.closed and not excluded and self.rng.random() < 0.3
        twin = self.twin_uri() if not (reopen or excluded or big) and self.rng.random() < 0.1 else None
        uri = self.closed.pop() if reopen else twin or self.new_uri(excluded)
        text = big_text(self.rng, self.big_size) if big else random_text(self.rng, self.rng.randint(0, 60))
        excluded = uri in self.excluded_uris
        if excluded:
            text = f"API_KEY={CANARY}\n" + text
        language = {"py": "python", "js": "javascript", "ts": "typescript"}.get(uri.rsplit(".", 1)[-1],
                                                                               self.rng.choice(["plaintext", "zz", 5]))
        self.docs[uri] = Doc(text, 1, language, excluded)
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1,
                                                                 "text": text}})
        self.count("open_big" if big else "open_excluded" if excluded else "open_twin" if twin else "open")

    def edit(self, client: Client) -> None:
        uri = self.rng.choice(list(self.docs))
        doc = self.docs[uri]
        changes = []
        for _ in range(self.rng.choice([1, 1, 1, 2, 3])):
            if self.rng.random() < 0.03 and len(doc.text) < 100_000:
                new = random_text(self.rng, self.rng.randint(0, 30))
                changes.append({"text": new})
                doc.text = new
                continue
            start = random_position(self.rng, doc.text, self.encoding)
            a = offset_at(doc.text, *start, self.encoding)
            if self.rng.random() < 0.5:
                end, b = start, a  # insertion
            else:
                end = random_position(self.rng, doc.text, self.encoding)
                b = offset_at(doc.text, *end, self.encoding)
                if b < a:
                    start, end, a, b = end, start, b, a
            new = random_text(self.rng, self.rng.choice([0, 1, 1, 1, 2, 5]))
            changes.append({"range": {"start": {"line": start[0], "character": start[1]},
                                      "end": {"line": end[0], "character": end[1]}}, "text": new})
            doc.text = doc.text[:a] + new + doc.text[b:]
        doc.version += 1
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": doc.version},
                                                 "contentChanges": changes})
        self.count("edit")

    def close(self, client: Client) -> None:
        uri = self.rng.choice(list(self.docs))
        del self.docs[uri]
        self.closed.append(uri)
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        self.count("close")

    def complete(self, client: Client, cancel: bool = False) -> int:
        uri = self.rng.choice(list(self.docs))
        doc = self.docs[uri]
        line, character = random_position(self.rng, doc.text, self.encoding)
        offset = offset_at(doc.text, line, character, self.encoding)
        kind = self.rng.choice([1, 2, 2, 2])  # 1 invoked, 2 automatic
        msg_id = client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": kind}})
        self.expect(msg_id, doc, offset)
        self.cursors[msg_id] = column_of(doc.text, offset, self.encoding)
        if cancel:
            client.notify("$/cancelRequest", {"id": msg_id})
            self.count("cancel")
        self.count("complete")
        return msg_id

    def next_edit(self, client: Client) -> None:
        """Next-edit traffic: a rename (a substitution the server may propagate), copilotInlineEdit requests for the
        current or an outdated version, an unopened document or params that do not fit (some cancelled), and
        didShowInlineEdit, didFocus and the accept command, as a request and as a notification, for ids the server
        gave or made up."""
        uri = self.rng.choice(list(self.docs))
        doc = self.docs[uri]
        roll = self.rng.random()
        words = [m for m in re.finditer(r"[A-Za-z_]\w*", doc.text)] if roll < 0.2 else []
        if words:  # rename one word: the newest edit is a substitution
            match = self.rng.choice(words)
            start, end = column_of(doc.text, match.start(), self.encoding), column_of(doc.text, match.end(),
                                                                                       self.encoding)
            new = self.rng.choice(["renamed", "total", "x2", "value_b"])
            doc.text = doc.text[:match.start()] + new + doc.text[match.end():]
            doc.version += 1
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": doc.version},
                                                     "contentChanges": [{"range": {
                                                         "start": {"line": start[0], "character": start[1]},
                                                         "end": {"line": end[0], "character": end[1]}},
                                                         "text": new}]})
            self.count("next_edit_rename")
        elif roll < 0.7:
            line, character = random_position(self.rng, doc.text, self.encoding)
            version = doc.version if self.rng.random() < 0.8 else doc.version - 1
            target = uri if self.rng.random() < 0.95 else self.new_uri()  # sometimes a document that is not open
            params: dict[str, Any] = {"textDocument": {"uri": target, "version": version},
                                      "position": {"line": line, "character": character}}
            if self.rng.random() < 0.5:  # sidekick's shape; copilot-lsp sends none
                params["context"] = {"triggerKind": self.rng.choice([1, 2])}
            if self.rng.random() < 0.05:
                params = self.rng.choice([{"textDocument": {"uri": uri}, "position": params["position"]}, {}, None])
            msg_id = client.request("textDocument/copilotInlineEdit", params)
            self.next_edit_requests.append(msg_id)
            if self.rng.random() < 0.1:
                client.notify("$/cancelRequest", {"id": msg_id})
                self.count("next_edit_cancel")
            self.count("next_edit_request")
        else:
            ids = ["999999"]
            for msg_id in self.next_edit_requests[-20:]:
                result = client.answers_by_id.get(msg_id, {}).get("answer", {}).get("result") or {}
                for item in result.get("edits", []) if isinstance(result, dict) else []:
                    ids.extend(item.get("command", {}).get("arguments", []))
            command = {"command": "infill.acceptInlineEdit", "arguments": [self.rng.choice(ids)]}
            if roll < 0.8:
                client.notify("textDocument/didShowInlineEdit", {"item": {"command": command}})
            elif roll < 0.88:
                client.request("workspace/executeCommand", command)
            elif roll < 0.95:
                client.notify("workspace/executeCommand", command)  # copilot.el's form
            else:
                client.notify("textDocument/didFocus", {"textDocument": {"uri": uri}})
            self.count("next_edit_notification")

    def change_settings(self, client: Client, endpoint: str) -> None:
        if self.rng.random() < 0.35:
            name, bad = self.rng.choice(BAD_SETTINGS)
            payload = merge(client.settings, bad) if isinstance(bad, dict) else bad
            self.bad_settings += 1
            self.count("bad_setting")
        else:
            if self.vary:
                self.protocol = self.rng.choice(self.protocols)
                base = self.settings(endpoint, context=self.rng.random() < 0.6,
                                     prefix_tokens=self.rng.choice(PREFIX_BUDGETS),
                                     suffix_tokens=self.rng.choice(SUFFIX_BUDGETS))
            else:
                base = self.settings(endpoint)
            payload = merge(base, {
                "max_tokens": self.rng.choice([8, 16, 32]), "invoked_choices": self.rng.choice([1, 2, 3]),
                "multiline": self.rng.choice(["auto", "always", "never"]),
                "cache_size": self.rng.choice([0, 5, 20]),
                "completion": {"model": self.rng.choice(["fuzz", "fuzz-b"]),  # a new model: a new engine
                               "additional_stop_words": self.rng.choice([[], ["\n\n"]])}})
            if self.rng.random() < 0.3:
                payload["debounce"] = {"mode": "adaptive", "min_ms": 0, "max_ms": 20}
            client.settings = payload
            self.count("setting")
        self.note_settings(payload)
        if self.rng.random() < 0.2 and payload is client.settings:
            client.notify("workspace/didChangeConfiguration", {"settings": None})  # the server pulls them
        else:
            client.notify("workspace/didChangeConfiguration", {"settings": {"infill": payload}})

    def storm(self, client: Client) -> None:
        """Many requests and cancels within a millisecond over several documents, some after an edit: what an
        editor sends when the user types fast in split views (and what supersession and joining must survive)."""
        for _ in range(self.rng.randint(5, 30)):
            if not self.docs:
                break
            if self.rng.random() < 0.4:
                self.edit(client)
            msg_id = self.complete(client, cancel=self.rng.random() < 0.3)
            if self.rng.random() < 0.1:  # cancelled later in the storm
                client.notify("$/cancelRequest", {"id": msg_id - self.rng.randint(0, 3)})
        self.count("storm")

    def malformed(self, client: Client) -> None:
        uri = self.rng.choice(list(self.docs)) if self.docs else "file:///nowhere.py"
        choice = self.rng.randrange(20)
        position = {"line": 0, "character": 0}
        if choice == 0:  # answered with id null: -32700 (also when nested too deeply for the JSON reader)
            client.raw(self.rng.choice([b"{not json", b"[" * 100_000 + b"]" * 100_000]))
            self.unidentified += 1
        elif choice == 1:  # answered with id null: -32600
            client.raw(self.rng.choice([b"[]", b"[1, 2]", b"42", b'"text"', b"null", b"{}"]))
            self.unidentified += 1
        elif choice == 2:  # no context
            client.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": position})
        elif choice == 3:
            client.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                                                             "position": {"line": -1, "character": 0},
                                                             "context": {"triggerKind": 1}})
        elif choice == 4:
            client.request("textDocument/hover", {"textDocument": {"uri": uri}})
        elif choice == 5:
            client.request("infill/stats", omit_params=True)
        elif choice == 6:  # no "jsonrpc"
            client.next_id += 1
            client.pending[client.next_id] = {"method": "infill/stats", "expect": "error"}
            client.send({"id": client.next_id, "method": "infill/stats"})
        elif choice == 7:
            client.request("no/such/method", {})
        elif choice == 8:
            client.notify("no/such/notification", {"x": 1})
        elif choice == 9:  # an edit with an invalid position: the whole notification is rejected
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 99}, "contentChanges": [
                {"range": {"start": {"line": -1, "character": 0}, "end": position}, "text": "DROPPED"}]})
        elif choice == 10:  # valid: the character clamps to the end of the line, and the model is asked there
            msg_id = client.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                                                                      "position": {"line": 0, "character": 2 ** 40},
                                                                      "context": {"triggerKind": 1}})
            if uri in self.docs:
                doc = self.docs[uri]
                self.expect(msg_id, doc, offset_at(doc.text, 0, 2 ** 40, self.encoding))
        elif choice == 11:
            client.request("textDocument/inlineCompletion", None)
        elif choice == 12:  # an edit of a document that is not open
            client.notify("textDocument/didChange", {"textDocument": {"uri": self.new_uri(), "version": 2},
                                                     "contentChanges": [{"range": {"start": position,
                                                                                   "end": position}, "text": "x"}]})
        elif choice == 14:  # a notification's method with an id: -32601, and the save is not run
            client.request("textDocument/didSave", {"textDocument": {"uri": uri}})
        elif choice == 15:  # an id LSP does not allow: answered with id null, -32600
            bad_id = self.rng.choice([[1], 1.5, True, None, {"n": 1}])
            client.send({"jsonrpc": "2.0", "id": bad_id, "method": "infill/stats", "params": {}})
            self.unidentified += 1
        elif choice == 16:  # nested deeper than any LSP message: -32602 for the request, the notification dropped
            nested: Any = 1
            for _ in range(self.rng.choice([70, 400, 900])):
                nested = {"a": nested}
            client.request("textDocument/copilotInlineEdit", {"textDocument": {"uri": uri, "version": 1},
                                                              "position": position, "context": nested})
            client.notify("workspace/didChangeConfiguration", {"settings": {"infill": nested}})
        elif choice == 17:  # a value of the wrong JSON type for a string: dropped (it was the text "None", "5")
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 99},
                                                     "contentChanges": [{"text": self.rng.choice([None, 5, ["x"]])}]})
        elif choice == 18:  # an id of a type no request has: nothing to cancel
            client.notify("$/cancelRequest", {"id": self.rng.choice([[1], {"n": 1}, 1.5, True, None])})
        elif choice == 19:  # notebook messages that fit no open notebook: dropped, nothing else changes
            book = f"file:///fuzz/nb{self.rng.randrange(1000)}.ipynb"
            cell = {"uri": f"vscode-notebook-cell:/fuzz/nb.ipynb#W{self.rng.randrange(9)}", "version": 2}
            client.notify("notebookDocument/didChange", {
                "notebookDocument": {"uri": book, "version": 2},
                "change": {"cells": {"structure": {"array": {"start": self.rng.choice([0, 5, -1]), "deleteCount": 3}},
                                     "textContent": [{"document": cell, "changes": [{"text": "x"}]}]}}})
            client.notify("notebookDocument/didClose", {"notebookDocument": {"uri": book},
                                                        "cellTextDocuments": [{"uri": cell["uri"]}]})
            client.notify("notebookDocument/didOpen", {  # no cells, then closed
                "notebookDocument": {"uri": book, "notebookType": "jupyter-notebook", "version": 1, "cells": []},
                "cellTextDocuments": []})
            client.notify("notebookDocument/didClose", {"notebookDocument": {"uri": book}, "cellTextDocuments": []})
        else:
            client.notify("$/cancelRequest", {"id": 10 ** 9})
        self.count("malformed")

    # --- the run -----------------------------------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        backend = Backend(random.Random(self.seed * 7919), on_call=self.judge)
        endpoint = await backend.start()
        server = ServerProcess()
        try:
            proc = await server.start()
            return await self._drive(proc, backend, endpoint, server)
        finally:
            await server.stop()
            await backend.close()

    async def _drive(self, proc: asyncio.subprocess.Process, backend: Backend, endpoint: str,
                     server: ServerProcess) -> dict[str, Any]:
        started = time.monotonic()
        client = self.client = Client(proc, self.settings(endpoint))
        self.note_settings(client.settings)
        await initialize(client, self.encoding)
        self.open(client)
        for step in range(self.actions):
            roll = self.rng.random()
            if not self.docs or roll < 0.06:
                self.open(client, big=self.rng.random() < 0.02, excluded=self.rng.random() < 0.15)
            elif roll < 0.45:
                self.edit(client)
            elif roll < 0.50:
                self.close(client)
            elif roll < 0.76:
                self.complete(client, cancel=self.rng.random() < 0.1)
            elif roll < 0.80:
                self.next_edit(client)
            elif roll < 0.84:  # a burst of typing with automatic requests
                for _ in range(self.rng.randint(3, 12)):
                    if not self.docs:
                        break
                    self.edit(client)
                    self.complete(client)
                self.count("burst")
            elif roll < 0.86:
                self.storm(client)
            elif roll < 0.885:
                self.change_settings(client, endpoint)
            elif roll < 0.89:  # the user pauses: the server's once-a-second work (context, warm-up) runs idle
                await client.drain()
                await asyncio.sleep(1.2)
                self.count("pause")
            else:
                self.malformed(client)
            await client.drain()
            if step % 25 == 0:
                await asyncio.sleep(0.01)  # let answers flow, as an editor between keystrokes
            if len(client.pending) > 64:  # an editor does not queue hundreds of requests: wait for some answers
                end = time.monotonic() + 30
                while len(client.pending) > 16 and time.monotonic() < end:
                    await asyncio.sleep(0.01)
            if step % 200 == 0:
                self.rss.append(rss_kb(proc.pid))
            if self.progress and step % 1000 == 999:
                print(f"  seed {self.seed} {self.encoding}: {step + 1} actions, {client.next_id} requests, "
                      f"{len(backend.calls)} model calls, {time.monotonic() - started:.0f} s", file=sys.stderr,
                      flush=True)
        # Every request answered: wait for the stragglers (a generous safety net; none should need it).
        end = time.monotonic() + 60
        while client.pending and time.monotonic() < end:
            await asyncio.sleep(0.02)
        unanswered = dict(client.pending)
        self.rss.append(rss_kb(proc.pid))
        # Every answer sent: every generation must end (the server closes its streams); count, with a safety net.
        end = time.monotonic() + 10
        while backend.open_streams and time.monotonic() < end:
            await asyncio.sleep(0.02)
        streams_open, streams_open_modes = backend.open_streams, list(backend.open_modes)
        stats_id = client.request("infill/stats", {})
        stats = (await client.wait_answered(stats_id)).get("answer", {}).get("result", {})
        kids = children(proc.pid)
        shutdown = client.request("shutdown", None)
        await client.wait_answered(shutdown)
        after = client.request("infill/stats", {})
        after_answer = (await client.wait_answered(after)).get("answer", {})
        client.notify("exit", None)
        await client.drain()
        try:
            code = await asyncio.wait_for(proc.wait(), 30)
        except asyncio.TimeoutError:
            code = None
        await client.stop_reading()
        await asyncio.sleep(0.2)
        left = [pid for pid in kids if Path(f"/proc/{pid}").exists()]
        misplaced = items = 0  # items whose range does not start at the (clamped) cursor
        for msg_id, cursor in self.cursors.items():
            result = client.answers_by_id.get(msg_id, {}).get("answer", {}).get("result") or {}
            for item in result.get("items", []) if isinstance(result, dict) else []:
                start = item.get("range", {}).get("start", {})
                misplaced += (start.get("line"), start.get("character")) != cursor
                items += 1
                errors = client.error_messages
        outages = [m for m in errors if not INJECTED.search(m)]
        stderr = server.log_text()
        duplicated = sum(1 for n in client.answers.values() if n > 1)
        report = {
            "seed": self.seed, "encoding": self.encoding, "actions": self.actions, "counts": self.counts,
            "requests": client.next_id, "unanswered": len(unanswered),
            "unanswered_methods": sorted({e["method"] for e in unanswered.values()}),
            "answered_twice": duplicated, "answers_to_unknown_ids": client.unknown_answers,
            "unidentified_sent": self.unidentified, "unidentified_answered": sum(client.unidentified_errors.values()),
            "unidentified_codes": {str(k): v for k, v in sorted(client.unidentified_errors.items())},
            "error_codes": {str(k): v for k, v in sorted(client.errors.items())},
            "internal_errors": client.errors.get(INTERNAL_ERROR, 0),
            "backend_calls": len(backend.calls), "backend_modes": backend.modes,
            "protocols": backend.protocols, **self.oracle, "bad_prompt_examples": self.bad_examples,
            "suffix_sent": sum(1 for _, s in backend.calls if s is not None),
            "excluded_text_sent": backend.bodies_with_canary, "invalid_utf8_bodies": backend.bad_requests,
            "server_probes": backend.probes,
            "bad_settings": self.bad_settings, "outages": len(outages), "outage_examples": outages[:3],
            "items": items, "items_misplaced": misplaced,
            "show_message_popups": len(client.show_messages),
            "popups_not_about_settings": [m for m in client.show_messages if "configuration" not in m][:3],
            "streams_open_at_end": streams_open, "open_stream_modes": streams_open_modes,
            "max_open_streams": backend.max_open_streams,
            "rss_mb_first": round(self.rss[0] / 1024, 1) if self.rss else None,
            "rss_mb_max": round(max(self.rss) / 1024, 1) if self.rss else None,
            "rss_mb_end": round(self.rss[-1] / 1024, 1) if self.rss else None,
            "server_documents_at_end": stats.get("documents"), "reference_documents_at_end": len(self.docs),
            "protocol_futures_at_end": stats.get("protocol_futures"),
            "after_shutdown_error": (after_answer.get("error") or {}).get("code"),
            "exit_code": code, "children_left": left,
            "tracebacks_in_log": stderr.count("Traceback"),
            "seconds": round(time.monotonic() - started, 1), "server_log": str(server.home),
        }
        return report
