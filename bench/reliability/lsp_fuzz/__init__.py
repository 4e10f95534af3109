"""Seeded LSP fuzzing of `infill serve --stdio`: random valid and invalid traffic against a recording loopback
model server that also misbehaves, checked against a reference model of every document.

    python3 -m bench.reliability.lsp_fuzz --actions 10000 --seeds 1 2 3 --encodings utf-16 utf-8

One run: start the server over pipes (a hand-written JSON-RPC client, so that malformed frames, lone surrogates and
invalid params can be sent), initialise it against the loopback backend, then perform `actions` random actions:
open / edit / close documents (control characters, CRLF and CR, astral characters, lone surrogates, positions past
the end of a line or of the document, 2 MB documents), inline completion requests (automatic and invoked, several
choices, some cancelled), bursts of typing, storms (many requests and cancels within a millisecond over several
documents), pauses (the server's once-a-second work runs idle: context flushes, cache warm-ups), valid and bad
settings (switching between the `openai/completion`, `llama.cpp/completion` and `llama.cpp/infill` kinds, workspace
context on and off, prompt budgets from whole documents down to 2 tokens), malformed frames and requests whose params
do not fit. The backend answers each completion in a randomly chosen way: a normal stream, HTTP 500, 429, a reset
connection, a stall, a malformed chunk, a stream that never ends (fast or trickling).

The oracle, for every model request the loopback receives (warm-ups, `n_predict: 0`, included): its text before
the hole is nothing or a context block ending in the current file's `Path:` label, followed by the end of the
reference text before the cursor of a request that was still open (or answered fewer than LATE_ANSWERS answers
before: counted as `after_answer`; or that a still open request typed on from: `joined`), at least half the smallest
prefix budget in force long when the text is longer (all of it under whole-document budgets); a warm-up's, of a
request made before, never empty. Its text after the hole is the beginning of the text after that cursor, likewise.
Texts compare as the engine sends them: lone surrogates as U+FFFD, CRLF as LF. `bad_prompts` counts the model
requests that fit no request; `empty_prefix` those of them whose text before the hole was empty although the text
before the cursor was not (issue 27).

Also checked (each a count in the report; the test suite asserts them, `--check` here too):
- every request answered exactly once, no answer to an unknown id, no -32603 InternalError; a message with no id
  the server can echo (a body that is not JSON, one that is not an object, an id that is not an integer or a
  string) answered once with `"id": null`; a notification's method sent with an id answered with -32601;
- no text of an excluded file (a `.env`, a `secret_*` file) reached the backend;
- no completion failed for a reason other than the injected backend faults (a bad setting never stops completions);
- no `window/showMessage` popup except one per bad setting; every backend stream closed by the end;
- RSS bounded; `shutdown` then a request gets InvalidRequest; `exit` ends the process with 0 and no child left.

The package: report.py is the command line (`main`, and `problems`, what went wrong in a run); fuzz.py one run
(`Fuzz`: the random actions, the reference documents, the run's report); oracle.py the prompt oracle above (`Expect`,
and `PromptOracle`, Fuzz's base class); text.py the reference model of a document's text (LSP positions in both
encodings, line breaks, what the engine sends, random texts); backend.py the recording, misbehaving loopback model
server (`Backend`) and the wire formats it follows; client.py the JSON-RPC client over the server's pipes
(`Client`), the server process (`ServerProcess`) and `initialize`; settings.py the configurations sent (kinds,
budgets, bad settings, `merge`)."""

from __future__ import annotations

from .backend import FUZZ_TEMPLATE, Backend
from .client import Client, ServerProcess, children, initialize, rss_kb
from .fuzz import Fuzz
from .report import main, problems, run_one
from .settings import merge

__all__ = ["FUZZ_TEMPLATE", "Backend", "Client", "Fuzz", "ServerProcess", "children", "initialize", "main", "merge",
           "problems", "rss_kb", "run_one"]
