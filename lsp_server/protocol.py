"""JSON-RPC handling that answers every request, built on pygls's LanguageServerProtocol.

pygls structures each message inside `json.loads(object_hook=...)`. When the params do not fit the method's type
(an inlineCompletion without `context`, `position.line: -1`, a custom request without `params`) the exception leaves
the reader loop before pygls knows the message id, so the request is never answered; a message without
`"jsonrpc": "2.0"` and any request after `shutdown` are dropped as well, and requests before `initialize` run
against a workspace that does not exist yet. LSP wants an error response for each: -32602 InvalidParams, -32600
InvalidRequest, -32002 ServerNotInitialized. Here the object hook leaves every object as a dict, and the whole
message is structured in `handle_message`, where its id is known. What has no id to answer — a body that is not
JSON, a message that is not an object, a request whose id is not an integer or a string — is answered with id null,
as JSON-RPC 2.0 says; a notification's method sent with an id (pygls ran it and answered nothing) gets -32601.

Errors are logged, not shown: pygls logs a traceback for every error answer (including expected ones such as
-32803 RequestFailed) and turns handler exceptions into `window/showMessage` popups; an expected error is a log line,
an unexpected one a log line with its traceback, and the answer never carries a traceback."""

from __future__ import annotations

import enum
import json
import logging
import re
import threading
import typing
from collections import abc
from functools import partial
from typing import Any, Awaitable, Protocol, Union, cast

import cattrs
from cattrs.cols import list_structure_factory
from cattrs.v import format_exception
from lsprotocol import types
from pygls.exceptions import (JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcInvalidRequest,
                              JsonRpcMethodNotFound, JsonRpcParseError, JsonRpcRequestCancelled,
                              JsonRpcServerNotInitialized)
from pygls.io_ import StdinAsyncReader
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from engine.errors import InfillError

log = logging.getLogger(__name__)

JSONRPC = "2.0"
#: The members of a JSON-RPC message (request, notification or response).
_MEMBERS = frozenset({"jsonrpc", "id", "method", "params", "result", "error"})
REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


#: No LSP message nests this deep (initialize's capabilities and the settings reach about ten levels). A deeper one is
#: refused before pygls structures it: that and every later walk over the params would recurse past Python's limit.
MAX_DEPTH = 64


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _describe(exc: BaseException) -> str:
    """What did not fit, with its path (`required field missing @ $.params.context`), from cattrs' errors."""
    if isinstance(exc, (cattrs.errors.ClassValidationError, cattrs.errors.IterableValidationError)):
        return "; ".join(_json_names(line) for line in cattrs.transform_error(exc, format_exception=_format_exception))
    return _first_line(exc)


_CAMEL = re.compile(r"_([a-z])")


def _json_names(line: str) -> str:
    """cattrs names a field by its attribute (`$.context.trigger_kind`); the client wrote `triggerKind`, LSP's
    camelCase (lsprotocol's attribute names are it in snake case, `from_` for the keyword `from`). Keys in
    brackets are the client's own and stay."""
    message, at, path = line.rpartition(" @ ")
    if not at:
        return line
    return message + at + re.sub(r"\.(\w+)", lambda m: "." + _CAMEL.sub(lambda c: c.group(1).upper(),
                                                                       m.group(1)).rstrip("_"), path)


def _format_exception(exc: BaseException, tp: Any) -> str:
    """cattrs' wording, except for the refusals of the hooks below, which say what was expected and what came
    (cattrs said `invalid value for type, expected InlineCompletionTriggerKind` for `true`)."""
    if isinstance(exc, ValueError) and str(exc).startswith("expected "):
        return str(exc)
    return format_exception(exc, tp)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _string(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r:.50}")
    return value


def _integer(value: Any, _: type) -> int:
    if isinstance(value, float) and value.is_integer():  # 4.0 is the JSON number 4
        return int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"expected an integer, got {value!r:.50}")
    return value


def _integer_or_string(value: Any, _: type) -> int | str:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValueError(f"expected an integer or a string, got {value!r:.50}")


def _list_of(tp: Any, converter: cattrs.BaseConverter) -> Any:
    """A list field's hook that refuses a JSON string or object, which cattrs iterated: an executeCommand's
    `arguments` "zz" became ["z", "z"], a workspace/configuration answer "abc" the section "a"."""
    items = list_structure_factory(tp, converter)

    def structure(value: Any, _: type) -> list[Any]:
        if isinstance(value, (str, dict)):
            raise ValueError(f"expected a list, got {value!r:.50}")
        return items(value, tp)

    return structure


def _int_enums() -> list[type]:
    return [tp for tp in vars(types).values()
            if isinstance(tp, type) and issubclass(tp, enum.Enum) and issubclass(tp, int)]


def _int_enum(tp: Any) -> Any:
    """An integer enumeration's hook (trigger kinds, kinds in capability value sets). They are `int` subclasses, so
    the hook of `int` took them: 2.0 was a trigger kind, and the member never came back (a plain int). The value
    must be a JSON integer (not true, not 2.0: a client never sends an enumeration value as those); one that is no
    member passes as the integer, as a value set of a newer client lists kinds this version does not know."""
    values = "/".join(str(member.value) for member in tp)

    def structure(value: Any, _: type) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer ({tp.__name__}: {values}), got {value!r:.50}")
        return tp._value2member_map_.get(value, value)

    return structure


def _is_list(tp: Any) -> bool:
    return typing.get_origin(tp) in (list, abc.Sequence, abc.MutableSequence)


def strict_converter() -> cattrs.Converter:
    """pygls's converter, with JSON values of the wrong type refused where it converted them: cattrs structures a
    string field with `str(value)` and an integer field with `int(value)`, so a didChange with `"text": null`
    replaced the document with the text "None" and `"line": "1"` or `true` was a line number; lsprotocol let any
    value through as an id or a progress token (`$/cancelRequest` with `"id": [1]` raised inside pygls), and a
    string or an object was iterated where a list belongs. A message that does not fit is then refused naming the
    field (`AnsweringProtocol.handle_message`)."""
    converter = default_converter()
    converter.register_structure_hook(str, _string)
    converter.register_structure_hook(int, _integer)
    # `bool` fields went to the hook of `int` (a base class) and stay as they were: capabilities are not refused
    converter.register_structure_hook(bool, lambda value, _: bool(value))
    converter.register_structure_hook(Union[int, str], _integer_or_string)
    converter.register_structure_hook_factory(_is_list, _list_of)
    for tp in _int_enums():  # each its own hook: a hook for a class wins over the one for its base, `int`
        converter.register_structure_hook(tp, _int_enum(tp))
    converter.register_structure_hook(_CONTENT_CHANGE, _content_change(converter.get_structure_hook(_CONTENT_CHANGE)))
    versioned = converter.get_structure_hook(types.VersionedTextDocumentIdentifier)

    def versioned_or_null(value: Any, tp: Any) -> Any:
        """LSP 3.15 and before let a didChange's `textDocument.version` be null: such a change was refused and
        dropped, so the server kept the old text. It is applied now, and the document's version is unknown."""
        if isinstance(value, dict) and "version" in value and value["version"] is None:
            return converter.structure(value, types.OptionalVersionedTextDocumentIdentifier)
        return versioned(value, tp)

    converter.register_structure_hook(types.VersionedTextDocumentIdentifier, versioned_or_null)
    return converter


_CONTENT_CHANGE = Union[types.TextDocumentContentChangePartial, types.TextDocumentContentChangeWholeDocument]


def _content_change(structure: Any) -> Any:
    """A content change with `"range": null` is the whole document (a client serializing an absent range as null):
    it was refused as a ranged change whose start and end are no positions, and the didChange holding it was
    dropped, so the server kept the old text."""

    def hook(value: Any, tp: Any) -> Any:
        if isinstance(value, dict) and "range" in value and value["range"] is None:
            value = {key: item for key, item in value.items() if key not in ("range", "rangeLength")}
        return structure(value, tp)

    return hook


class AnsweringProtocol(LanguageServerProtocol):
    """LanguageServerProtocol that answers every request exactly once and keeps errors in the log."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        #: Set when the `shutdown` request arrives (pygls sets `_shutdown` only once its handler has finished).
        self.shutdown_requested = False
        self.initialize_requested = False

    # --- reading -------------------------------------------------------------------------------------------------

    def structure_message(self, data: dict[str, Any]) -> Any:
        """The reader's object hook sees every JSON object, innermost first: keep them as dicts; `handle_message`
        structures the whole message once it is known to be one."""
        return data

    def handle_message(self, message: Any) -> None:
        if not isinstance(message, dict):
            # pygls may hand over an already structured message (tests, other transports).
            if hasattr(message, "jsonrpc"):
                self._dispatch(message)
            else:  # JSON-RPC: an invalid request is answered with id null (LSP has no batches: `[...]` too)
                self._answer_unidentified(JsonRpcInvalidRequest(
                    f"a JSON-RPC message must be an object, not {type(message).__name__}"))
            return
        has_id = "id" in message
        msg_id = message.get("id")
        method = message.get("method")
        is_request = has_id and "method" in message
        if has_id and not _valid_id(msg_id):
            if "method" in message:  # a request whose id cannot be echoed: JSON-RPC answers it with id null
                self._answer_unidentified(JsonRpcInvalidRequest(
                    f"{method}: the id must be an integer or a string, not {msg_id!r:.50}"))
            else:
                log.warning("ignored a JSON-RPC response with an invalid id %.100r", msg_id)
            return
        if not has_id and "method" not in message:
            self._answer_unidentified(JsonRpcInvalidRequest("a JSON-RPC message needs a method or an id"))
            return
        if message.get("jsonrpc") != JSONRPC:
            if is_request:
                self._answer_error(msg_id, JsonRpcInvalidRequest(f'"jsonrpc" must be "{JSONRPC}"'))
            else:
                log.warning("ignored a message without \"jsonrpc\": \"%s\": %.200r", JSONRPC, message)
            return
        if "method" in message and not isinstance(method, str):
            if has_id:
                self._answer_error(msg_id, JsonRpcInvalidRequest('"method" must be a string'))
            else:
                log.warning("ignored a notification whose method is not a string: %.100r", method)
            return
        if not self.initialize_requested and method is not None and method not in (types.INITIALIZE, types.EXIT):
            # LSP: before `initialize`, a request gets ServerNotInitialized and a notification is dropped.
            if is_request:
                self._answer_error(msg_id, JsonRpcServerNotInitialized(f"{method}: the server is not initialized"))
            else:
                log.debug("ignored %s before initialize", method)
            return
        if self.shutdown_requested and method is not None and method != types.EXIT:
            if is_request:
                self._answer_error(msg_id, JsonRpcInvalidRequest(f"{method}: the server is shutting down"))
            else:
                log.debug("ignored %s after shutdown", method)
            return
        if not message.keys() <= _MEMBERS:
            # JSON-RPC names the members it uses and forbids no others; pygls's message classes refused any other
            # (a request got "JsonRPCRequestMessage.__init__() got an unexpected keyword argument", a didChange was
            # dropped, so the document drifted from the editor's).
            log.debug("ignored members %s of a message", sorted(set(message) - _MEMBERS)[:5])
            message = {key: value for key, value in message.items() if key in _MEMBERS}
        problem = f"nested deeper than {MAX_DEPTH} levels" if _too_deep(message) else None
        if problem is None:
            try:
                structured = self._structure(message)
            except Exception as exc:
                problem = f"invalid params ({_describe(exc)})"
        if problem is not None:
            self._refuse(msg_id if has_id else None, method, is_request, problem)
            return
        if is_request and not hasattr(structured, "id"):
            # a notification's method with an id: pygls would run it as a notification and never answer
            self._answer_error(msg_id, JsonRpcMethodNotFound(f"{method} is a notification; it takes no id"))
            return
        if is_request and method == types.SHUTDOWN:
            self.shutdown_requested = True
        if is_request and method == types.INITIALIZE:
            if self.initialize_requested:  # LSP: "the initialize request may only be sent once"
                self._answer_error(msg_id, JsonRpcInvalidRequest("initialize: the server is already initialized"))
                return
            self.initialize_requested = True
        self._dispatch(structured)

    def _structure(self, data: dict[str, Any]) -> Any:
        """pygls's `structure_message` for a whole message, raising instead of logging a traceback."""
        if "id" in data:
            if "error" in data:
                return self._converter.structure(data, types.ResponseErrorMessage)
            if "method" in data:
                return self._converter.structure(data, self.get_message_type(data["method"]) or JsonRPCRequestMessage)
            return self._converter.structure(data, self._result_types.pop(data["id"], None) or JsonRPCResponseMessage)
        return self._converter.structure(data, self.get_message_type(data.get("method", "")) or JsonRPCNotification)

    def _dispatch(self, message: Any) -> None:
        try:
            super().handle_message(message)
        except Exception:  # a bug in dispatching must not stop the reader, nor leave a request unanswered
            log.exception("failed to handle %s", getattr(message, "method", "a message"))
            msg_id = getattr(message, "id", None)
            if getattr(message, "method", None) is not None and _valid_id(msg_id) \
                    and msg_id not in self._request_futures:
                self._answer_error(msg_id, JsonRpcInternalError("the server could not handle the request"))

    def _refuse(self, msg_id: Any, method: str | None, is_request: bool, problem: str) -> None:
        """A message that cannot be structured: a request gets -32602, an answer to one of our requests fails (so
        that it does not hang), a notification is a log line."""
        if is_request:
            self._answer_error(msg_id, JsonRpcInvalidParams(f"{method}: {problem}"))
        elif msg_id is not None and method is None:
            log.warning("malformed response to request %s: %s", msg_id, problem)
            error = types.ResponseError(code=JsonRpcInvalidParams.CODE, message=f"malformed response: {problem}")
            self._handle_response(cast("str | int", msg_id), None, error)
        else:
            log.warning("ignored %s: %s", method or "a message", problem)

    def answer_parse_error(self, exc: Exception) -> None:
        problem = "it is nested too deeply to read" if isinstance(exc, RecursionError) else _first_line(exc)
        self._answer_unidentified(JsonRpcParseError(f"the message is not JSON: {problem}"))

    def answer_too_large(self, length: int) -> None:
        self._answer_unidentified(JsonRpcInvalidRequest(
            f"a message of {length} bytes is larger than the {MAX_MESSAGE_BYTES} this server reads; it was dropped"))

    def _answer_unidentified(self, error: JsonRpcException) -> None:
        """An error about a message whose id is unknown: JSON-RPC's `"id": null` (pygls leaves a None id out)."""
        log.warning("answered a message without a usable id with error %d: %s", error.code, error.message)
        self._send_data({"jsonrpc": JSONRPC, "id": None, "error": {"code": error.code, "message": error.message}})

    def _answer_error(self, msg_id: Any, error: JsonRpcException) -> None:
        log.warning("answered request %s with error %d: %s", msg_id, error.code, error.message)
        self._send_response(msg_id, error=error.to_response_error())

    # --- answering -----------------------------------------------------------------------------------------------

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        """pygls's, without its tracebacks: an unknown method is a log line, and a failure to start the handler is
        answered without the traceback pygls put in `error.data`."""
        try:
            handler = self._get_handler(method_name)
        except JsonRpcMethodNotFound as error:
            self._answer_error(msg_id, error)
            return
        self._ctx_msg_id.set(msg_id)
        try:
            self._execute_handler(msg_id=msg_id, handler=handler, args=(params,),
                                  callback=partial(self._send_handler_result, msg_id=msg_id))
        except Exception as exc:
            log.error("request %s (%s) could not be started", msg_id, method_name, exc_info=exc)
            self._request_futures.pop(msg_id, None)
            self._answer_error(msg_id, JsonRpcInternalError(f"Internal error: {_first_line(exc)}"))

    def _handle_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        """pygls's, for an answer that comes after the server stopped waiting for it (a workspace/configuration pull
        gives up after 5 s and cancels its future): pygls set the result of the cancelled future, and the
        InvalidStateError was logged with its traceback as a failure to handle the message."""
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            del self._request_futures[msg_id]
            log.info("ignored the answer to request %s: it came after the server stopped waiting for it", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            self._send_response(msg_id, error=JsonRpcRequestCancelled(
                f'Request with id "{msg_id}" is canceled').to_response_error())
            return
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=future.result())
        elif isinstance(exc, JsonRpcException):  # an answer the handler chose (RequestFailed, ...): no traceback
            log.info("request %s answered with error %d: %s", msg_id, exc.code, exc.message)
            self._send_response(msg_id, error=JsonRpcException(exc.message, exc.code).to_response_error())
        elif isinstance(exc, InfillError):
            log.warning("request %s failed: %s", msg_id, exc)
            self._send_response(msg_id, error=JsonRpcException(str(exc), REQUEST_FAILED).to_response_error())
        else:  # a bug: the log gets the traceback, the client a one-line message
            log.error("request %s failed", msg_id, exc_info=exc)
            self._send_response(msg_id, error=JsonRpcInternalError(
                f"Internal error: {_first_line(exc)}").to_response_error())

    def _check_handler_result(self, future: Any) -> None:
        """Notifications have no answer: a failure is logged (pygls also showed a popup for each)."""
        if future.cancelled():
            return
        exc = future.exception()
        if exc is None:
            return
        if isinstance(exc, (InfillError, JsonRpcException)):
            log.warning("notification failed: %s", exc)
        else:
            log.error("notification handler failed", exc_info=exc)


class Reader(Protocol):
    def readline(self) -> Awaitable[bytes]: ...

    def readexactly(self, n: int) -> Awaitable[bytes]: ...


#: A header line is a few dozen bytes: a longer one is read (and dropped as garbage) in pieces of this size.
MAX_HEADER_LINE = 64 * 1024


class StdinReader(StdinAsyncReader):
    """pygls's stdin reader, with lines read in pieces of at most MAX_HEADER_LINE bytes: its readline read a line
    of any length into memory at once, so a client writing gigabytes without a newline made the server take three
    times that (the line, its decoded and its stripped copies). Over TCP, asyncio's stream limit does the same."""

    def readline(self) -> Awaitable[bytes]:
        return self.loop.run_in_executor(self.executor, self.stdin.readline, MAX_HEADER_LINE)


#: A frame whose Content-Length is larger than this is read in pieces, dropped and answered with an error (id null).
#: Reading it whole asked Python for that much memory at once: a Content-Length of 10^12 ended the server.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024


async def _skip(reader: Reader, length: int) -> bool:
    """Read and drop `length` bytes in pieces; False when the client closed the pipe first."""
    while length > 0:
        piece = await reader.readexactly(min(length, _SKIP_CHUNK))
        if not piece:
            return False
        length -= len(piece)
    return True


async def read_messages(reader: Reader, protocol: AnsweringProtocol, stop_event: threading.Event) -> None:
    """The base protocol's framing, forgiving where pygls's loop loses messages: header names in any case, lines
    ending in LF alone, stray blank or garbage lines before a header, a missing or bad Content-Length. A body that
    is not JSON (or nested too deeply to read) and a frame over `MAX_MESSAGE_BYTES` are answered with an error and
    id null; the next frame is read as usual."""
    while not stop_event.is_set():
        length: int | None = None
        seen_header = False
        while True:
            line = await reader.readline()
            if not line:
                return  # the client closed the pipe
            text = line.decode("latin-1").strip()
            if not text:
                if seen_header:
                    break
                continue
            seen_header = True
            name, colon, value = text.partition(":")
            if colon and name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    length = None
        if length is None or length < 0:
            log.warning("ignored a frame without a valid Content-Length header")
            continue
        if length > MAX_MESSAGE_BYTES:
            if not await _skip(reader, length):
                return
            protocol.answer_too_large(length)
            continue
        body = await reader.readexactly(length)
        if len(body) < length:
            return
        try:
            message = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested too deep to read
            protocol.answer_parse_error(exc)
            continue
        try:
            protocol.handle_message(message)
        except Exception:  # never let one message end the loop
            log.exception("failed to handle a message")


__all__ = ["AnsweringProtocol", "StdinReader", "read_messages", "strict_converter"]
