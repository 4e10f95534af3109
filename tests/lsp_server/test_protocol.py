"""The reader loop (`read_messages`) on frames an editor never sends but a fuzzer or a broken client may."""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import io
import logging
import threading
from types import SimpleNamespace
from typing import Any

import cattrs
import pytest
from lsprotocol import types
from pygls.protocol import default_converter

from lsp_server.protocol import (MAX_HEADER_LINE, MAX_MESSAGE_BYTES, AnsweringProtocol, StdinReader, _describe,
                                 read_messages, strict_converter)


class Pipe:
    """The reader side of stdin over bytes, reporting the largest read asked for."""

    def __init__(self, data: bytes):
        self.data, self.pos, self.largest_read = data, 0, 0

    async def readline(self) -> bytes:
        end = self.data.find(b"\n", self.pos)
        end = len(self.data) if end < 0 else end + 1
        line, self.pos = self.data[self.pos:end], end
        return line

    async def readexactly(self, n: int) -> bytes:
        if n > 2 ** 31:  # as stdin.read(n) does: it asks for n bytes of memory before it reads
            raise MemoryError
        self.largest_read = max(self.largest_read, n)
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out


class Recorder(AnsweringProtocol):
    def __init__(self) -> None:
        super().__init__(SimpleNamespace(name="infill-test", version="0"), default_converter())
        self.handled: list[Any] = []
        self.unidentified: list[tuple[int, str]] = []

    def handle_message(self, message: Any) -> None:
        self.handled.append(message)

    def _answer_unidentified(self, error: Any) -> None:
        self.unidentified.append((error.code, error.message))


def frame(body: bytes, length: int | None = None) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


def read(data: bytes) -> tuple[Recorder, Pipe]:
    protocol, pipe = Recorder(), Pipe(data)
    asyncio.run(read_messages(pipe, protocol, threading.Event()))
    return protocol, pipe


def test_a_frame_over_the_limit_is_read_in_pieces_dropped_and_answered():
    big = b"x" * (MAX_MESSAGE_BYTES + 1)
    protocol, pipe = read(frame(big) + frame(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}'))
    assert pipe.largest_read < MAX_MESSAGE_BYTES  # never asked for the whole frame at once
    assert [code for code, _ in protocol.unidentified] == [-32600]
    assert str(MAX_MESSAGE_BYTES + 1) in protocol.unidentified[0][1]
    assert protocol.handled == [{"jsonrpc": "2.0", "method": "initialized", "params": {}}]  # the next frame is read


def test_a_huge_content_length_with_no_body_ends_the_loop_quietly():
    # a Content-Length of 10^12 made stdin.read() ask for a terabyte: MemoryError ended the server
    protocol, _ = read(frame(b"{}", length=10 ** 12))
    assert protocol.handled == [] and protocol.unidentified == []


def test_a_body_nested_too_deeply_is_a_parse_error_and_the_next_frame_is_read():
    protocol, _ = read(frame(b"[" * 100_000 + b"]" * 100_000) + frame(b'{"jsonrpc": "2.0", "method": "exit"}'))
    assert [code for code, _ in protocol.unidentified] == [-32700]
    assert "nested too deeply" in protocol.unidentified[0][1]
    assert protocol.handled == [{"jsonrpc": "2.0", "method": "exit"}]


class Stdin(io.BytesIO):
    """stdin over bytes, reporting the longest line it handed out."""

    longest_line = 0

    def readline(self, size: int | None = -1) -> bytes:  # type: ignore[override]
        line = super().readline(size)
        self.longest_line = max(self.longest_line, len(line))
        return line


def test_stdin_reads_a_header_line_without_end_in_pieces():
    """pygls's stdin reader read a line of any length at once: 200 MB without a newline took the server from 40 to
    181 MB (the line, its decoded and stripped copies). Lines come in pieces of MAX_HEADER_LINE, dropped as garbage,
    and the frame after them is read."""
    stdin = Stdin(b"A" * (10 * MAX_HEADER_LINE) + b"\r\n\r\n" + frame(b'{"jsonrpc": "2.0", "method": "exit"}'))
    protocol = Recorder()

    async def run() -> None:
        await read_messages(StdinReader(stdin), protocol, threading.Event())

    asyncio.run(run())
    assert stdin.longest_line <= MAX_HEADER_LINE
    assert protocol.handled == [{"jsonrpc": "2.0", "method": "exit"}]


def test_an_answer_after_the_server_stopped_waiting_is_dropped_quietly(caplog):
    """A workspace/configuration pull gives up after 5 s and cancels its future; the editor's answer coming after
    that made pygls set the result of the cancelled future, and the InvalidStateError was logged with its traceback
    as a failure to handle the message. The late answer is a log line."""
    protocol = AnsweringProtocol(SimpleNamespace(name="infill-test", version="0"), default_converter())
    protocol.initialize_requested = True
    given_up: concurrent.futures.Future = concurrent.futures.Future()
    given_up.cancel()
    protocol._request_futures["pull-1"] = given_up
    with caplog.at_level(logging.INFO):
        protocol.handle_message({"jsonrpc": "2.0", "id": "pull-1", "result": [{"max_tokens": 8}]})
    assert [r.levelno for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "pull-1" not in protocol._request_futures
    assert any("after the server stopped waiting" in r.getMessage() for r in caplog.records)


def test_a_string_or_an_object_is_no_list():
    """cattrs iterated a string or an object where a list belongs: an executeCommand's `arguments` "zz" became
    ["z", "z"], and an editor answering workspace/configuration with "abc" had the section "a" applied (the error
    then quoted 'a', not what the editor sent). The pull now fails naming what came."""
    converter = strict_converter()
    for value in ["zz", {"a": 1}]:
        with pytest.raises(cattrs.ClassValidationError) as info:
            converter.structure({"command": "c", "arguments": value}, types.ExecuteCommandParams)
        assert "expected a list" in repr(info.value.exceptions)
        assert "$.arguments" in cattrs.transform_error(info.value)[0]
    assert converter.structure({"command": "c", "arguments": ["1", 2]}, types.ExecuteCommandParams).arguments == [
        "1", 2]
    protocol = AnsweringProtocol(SimpleNamespace(name="infill-test", version="0"), converter)
    protocol.initialize_requested = True
    pull: concurrent.futures.Future = concurrent.futures.Future()
    protocol._request_futures["pull-2"] = pull
    protocol._result_types["pull-2"] = protocol.get_result_type(types.WORKSPACE_CONFIGURATION)
    protocol.handle_message({"jsonrpc": "2.0", "id": "pull-2", "result": "abc"})
    with pytest.raises(Exception, match=r"malformed response: .*expected a list, got 'abc' @ \$\.result"):
        pull.result(timeout=0)


@pytest.mark.parametrize("value", [True, False, 2.0, 1.5, "2", None, [2]])
@pytest.mark.parametrize("params_type", [types.InlineCompletionContext, types.CompletionContext,
                                         types.SignatureHelpContext])
def test_an_enumeration_field_takes_a_json_integer_only(params_type, value):
    """Integer enumerations are int subclasses, so the `int` hook took them: `"triggerKind": 2.0` was a trigger kind
    (and `true` was refused as `invalid value for type`, naming nothing the client wrote). Now the refusal says what
    was expected, what came and where, in the client's names."""
    converter = strict_converter()
    extra = {"isRetrigger": False} if params_type is types.SignatureHelpContext else {}
    with pytest.raises(cattrs.ClassValidationError) as info:
        converter.structure({"triggerKind": value, **extra}, params_type)
    message = _describe(info.value)
    assert message.startswith("expected an integer (") and f"got {value!r}" in message
    assert message.endswith("@ $.triggerKind")
    kind = converter.structure({"triggerKind": 2, **extra}, params_type).trigger_kind
    assert kind == 2 and isinstance(kind, enum.Enum)  # the member, not a plain int
    assert converter.structure({"triggerKind": 9, **extra}, params_type).trigger_kind == 9  # a kind of a later LSP
