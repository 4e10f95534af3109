"""A scripted language server for the editor clients' next-edit tests: it answers `textDocument/copilotInlineEdit`
with a fixed rule and records what the client sends, so that a test can make the server do what the real one does
not do on demand (answer for an older version, send a malformed edit) and check that the client drops it.

Rule: replace the first occurrence of OLD (argv[1]) not inside a longer word by NEW (argv[2]); or, when argv[1] is a
JSON list of [old, new] pairs (argv[2] then unused), by the first pair whose old text is found. Modes (argv[3]):
`ok` (the edit echoes the request's version), `stale` (the edit names the version before the request's one),
`malformed` (the edit has `newText` instead of `text`), `hold` (a request is answered only when the next message
arrives, so that a change is made while it is in flight), `hold-accept` (as `ok`, but the accept command is answered
only when the next change arrives, so that the user acts before the client learns it was accepted; not at any next
message: a `$/setTrace` the client sent late released it once, and the chained request came before the undo). Every
message received is appended to LOG (argv[4]) as one JSON line. Full document sync and UTF-16 positions keep it small;
it is a test double, not a server."""

from __future__ import annotations

import json
import re
import sys
from typing import Any


def read_message(stream: Any) -> dict[str, Any] | None:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))


def write_message(stream: Any, message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    stream.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    stream.flush()


def position_at(text: str, offset: int) -> dict[str, int]:
    before = text[:offset]
    line = before.count("\n")
    column = before[before.rfind("\n") + 1:]
    return {"line": line, "character": len(column.encode("utf-16-le")) // 2}


def answer(request: dict[str, Any], documents: dict[str, tuple[int, str]], rules: list[tuple[str, str]],
           mode: str) -> dict[str, Any]:
    """The answer to a copilotInlineEdit request, from the document as the server has it now."""
    doc = request["params"]["textDocument"]
    _, text = documents.get(doc["uri"], (0, ""))
    found, new = None, ""
    for old, replacement in rules:
        if found := re.search(rf"(?<!\w){re.escape(old)}(?!\w)", text):
            new = replacement
            break
    edits = []
    if found:
        version = doc["version"] - 1 if mode == "stale" else doc["version"]
        edit: dict[str, Any] = {
            "range": {"start": position_at(text, found.start()), "end": position_at(text, found.end())},
            "textDocument": {"uri": doc["uri"], "version": version},
            "command": {"title": "Accept next edit", "command": "infill.acceptInlineEdit",
                        "arguments": [f"scripted-{found.start()}"]}}
        edit["newText" if mode == "malformed" else "text"] = new
        edits.append(edit)
    return {"id": request["id"], "result": {"edits": edits}}


def main() -> int:
    old, new, mode, log_path = sys.argv[1:5]
    rules = [tuple(pair) for pair in json.loads(old)] if old.startswith("[") else [(old, new)]
    documents: dict[str, tuple[int, str]] = {}
    held: list[dict[str, Any]] = []
    held_accepts: list[Any] = []
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    with open(log_path, "a") as log:
        while (message := read_message(inp)) is not None:
            log.write(json.dumps(message) + "\n")
            log.flush()
            method, params, msg_id = message.get("method"), message.get("params") or {}, message.get("id")
            if held and method != "textDocument/copilotInlineEdit":
                write_message(out, answer(held.pop(), documents, rules, "ok"))
            while held_accepts and method == "textDocument/didChange":
                write_message(out, {"id": held_accepts.pop(0), "result": None})
            if method == "initialize":
                write_message(out, {"id": msg_id, "result": {"capabilities": {
                    "positionEncoding": "utf-16", "textDocumentSync": 1,
                    "executeCommandProvider": {"commands": ["infill.acceptInlineEdit"]},
                    "experimental": {"infill": {"nextEdit": {"method": "textDocument/copilotInlineEdit",
                                                             "acceptCommand": "infill.acceptInlineEdit"}}}},
                    "serverInfo": {"name": "scripted-next-edit"}}})
            elif method == "textDocument/didOpen":
                doc = params["textDocument"]
                documents[doc["uri"]] = (doc["version"], doc["text"])
            elif method == "textDocument/didChange":
                doc = params["textDocument"]
                documents[doc["uri"]] = (doc["version"], params["contentChanges"][-1]["text"])
            elif method == "textDocument/copilotInlineEdit" and mode == "hold":
                held.append(message)
            elif method == "textDocument/copilotInlineEdit":
                write_message(out, answer(message, documents, rules, mode))
            elif method == "workspace/executeCommand" and msg_id is not None and mode == "hold-accept":
                held_accepts.append(msg_id)
            elif method == "workspace/executeCommand" and msg_id is not None:
                write_message(out, {"id": msg_id, "result": None})
            elif method == "shutdown":
                write_message(out, {"id": msg_id, "result": None})
            elif method == "exit":
                return 0
            elif msg_id is not None and method is not None:
                write_message(out, {"id": msg_id, "error": {"code": -32601, "message": f"{method} not scripted"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
