"""The Copilot language server's next-edit protocol, as plain data: request params in, the result dict out.

Clients written for Copilot (copilot-lsp, copilot.el, sidekick.nvim) work unchanged, so the shapes follow that
server exactly: `textDocument/copilotInlineEdit {textDocument:{uri, version}, position, context?}` answers
`{edits:[{text, range, textDocument:{uri, version}, command}]}` with at most one edit, the request's own uri and
version echoed (sidekick and copilot.el drop an edit whose document or version differs), and `text`, not `newText`.
The method is not in the LSP specification, so pygls hands its params over untyped: they are checked here, and a
request that does not fit gets InvalidParams naming the field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.protocol.json_rpc import JsonRPCNotification

METHOD = "textDocument/copilotInlineEdit"
DID_SHOW = "textDocument/didShowInlineEdit"
DID_FOCUS = "textDocument/didFocus"
ACCEPT_COMMAND = "infill.acceptInlineEdit"
#: `capabilities.experimental.infill.nextEdit` in the initialize result: how a client tells that Infill answers
#: next-edit requests and which command accepts one.
CAPABILITY = {"method": METHOD, "acceptCommand": ACCEPT_COMMAND}
#: Requests that clients also send as notifications (copilot.el sends `workspace/executeCommand` without an id).
REQUESTS_AS_NOTIFICATIONS = {types.WORKSPACE_EXECUTE_COMMAND: types.ExecuteCommandParams}


@dataclass(frozen=True)
class InlineEditParams:
    #: The uri exactly as the client sent it (echoed in the answer).
    uri: str
    version: int
    line: int
    character: int
    #: `context.triggerKind` (1 invoked, 2 automatic) when the client sends one (sidekick does, copilot-lsp not).
    trigger_kind: int | None = None


def _invalid(problem: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(f"{METHOD}: {problem}")


def _int(value: Any, key: str, minimum: int | None = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _invalid(f"{key} must be an integer, got {value!r}" if value is not None else f"{key} is required")
    if minimum is not None and value < minimum:
        raise _invalid(f"{key} must not be negative, got {value}")
    return value


def parse_params(params: Any) -> InlineEditParams:
    """The request's params (plain dicts), checked; raises InvalidParams naming the field that does not fit."""
    if not isinstance(params, dict):
        raise _invalid("params must be an object with textDocument and position")
    document, position, context = params.get("textDocument"), params.get("position"), params.get("context")
    if not isinstance(document, dict):
        raise _invalid("textDocument {uri, version} is required")
    uri = document.get("uri")
    if not isinstance(uri, str) or not uri:
        raise _invalid("textDocument.uri must be a non-empty string")
    version = _int(document.get("version"), "textDocument.version", None)
    if not isinstance(position, dict):
        raise _invalid("position {line, character} is required")
    line = _int(position.get("line"), "position.line")
    character = _int(position.get("character"), "position.character")
    trigger = None
    if isinstance(context, dict) and context.get("triggerKind") is not None:
        trigger = _int(context.get("triggerKind"), "context.triggerKind")
    return InlineEditParams(uri, version, line, character, trigger)


def edit_result(params: InlineEditParams, start: tuple[int, int], end: tuple[int, int], text: str,
                edit_id: str) -> dict[str, Any]:
    """The answer with one edit: replace `start`..`end` ((line, character) in the negotiated encoding) by `text`."""
    return {"edits": [{
        "text": text,
        "range": {"start": {"line": start[0], "character": start[1]}, "end": {"line": end[0], "character": end[1]}},
        "textDocument": {"uri": params.uri, "version": params.version},
        "command": {"title": "Accept next edit", "command": ACCEPT_COMMAND, "arguments": [edit_id]},
    }]}


def no_edit() -> dict[str, Any]:
    return {"edits": []}


def command_id(arguments: Any) -> str | None:
    """The suggestion id of `infill.acceptInlineEdit [id]` (a string; numbers are accepted as their text)."""
    if isinstance(arguments, (list, tuple)) and arguments:
        first = arguments[0]
        if isinstance(first, (str, int)) and not isinstance(first, bool):
            return str(first)
    return None


def accept_id(arguments: Any) -> str:
    """The id of `infill.acceptInlineEdit [id]`, exactly as the edit's command carries it; raises InvalidParams
    naming what came instead (no argument, more than one, or one that is no id), so that junk is not counted as an
    acceptance (`["1", {"x": 2}]` counted as accepting edit 1)."""
    edit_id = command_id(arguments)
    if edit_id is None or len(arguments) != 1:
        raise JsonRpcInvalidParams(f"{ACCEPT_COMMAND}: expected one argument, the id of the edit its command carries "
                                   f"(a string), got {arguments!r:.100}")
    return edit_id


def shown_id(params: Any) -> str | None:
    """The id in `didShowInlineEdit {item:{command:{arguments:[id]}}}`."""
    item = params.get("item") if isinstance(params, dict) else None
    command = item.get("command") if isinstance(item, dict) else None
    return command_id(command.get("arguments")) if isinstance(command, dict) else None


def structure_request_notification(converter: Any, data: dict[str, Any]) -> Any | None:
    """A notification whose method LSP defines as a request (copilot.el's `workspace/executeCommand` without an id):
    a notification with the request's typed params, so pygls runs the request's handler and sends no answer. None for
    any other message."""
    params_type = REQUESTS_AS_NOTIFICATIONS.get(data.get("method", ""))
    if "id" in data or params_type is None:
        return None
    return JsonRPCNotification(method=data["method"], jsonrpc=data.get("jsonrpc", "2.0"),
                               params=converter.structure(data.get("params"), params_type))
