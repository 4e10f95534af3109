"""Where workspace context meets a completion request: choose snippets for the cursor, attach them to the engine
request, and warm the model server's cache with them when idle."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from engine.prompt import CHARS_PER_TOKEN
from engine.types import CompletionRequest

from .provider import CursorInfo, WorkspaceContext

log = logging.getLogger(__name__)


def prompt_lines(prefix: str, suffix: str, line: int, max_prefix_tokens: int, max_suffix_tokens: int,
                 prefix_only: bool) -> tuple[int, int]:
    """The current file's lines the prompt shows (estimated from the budgets): snippets there are redundant."""
    above = prefix[-max_prefix_tokens * CHARS_PER_TOKEN:].count("\n") if max_prefix_tokens else 0
    below = 0 if prefix_only else suffix[:max_suffix_tokens * CHARS_PER_TOKEN].count("\n") + 1
    return max(0, line - above), line + below + 1


async def attach(workspace: WorkspaceContext | None, request: CompletionRequest, uri: str, line: int,
                 generation: Any) -> CompletionRequest:
    """`request` with the workspace snippets for the cursor (unchanged when context is off or fails)."""
    if workspace is None or not workspace.settings.enabled or generation is None:
        return request
    cursor = CursorInfo(uri, request.prefix, request.suffix, line, request.language)
    workspace.viewed(cursor)
    workspace.last_request = request
    try:
        prefix_only = bool(generation.template.prefix_only)
        lines = prompt_lines(request.prefix, request.suffix, line, generation.max_prefix_tokens,
                             generation.max_suffix_tokens, prefix_only)
        selection = await workspace.select(cursor, prompt_lines=lines, prefix_only=prefix_only,
                                           count_tokens=generation.count_tokens)
    except Exception:  # context is an extra: a fault here must not cost the completion
        log.exception("choosing workspace context failed; completing without it")
        return request
    workspace.last_prompt_lines = lines
    if not selection.snippets:
        return request
    return dataclasses.replace(request, context=selection.snippets, repo=selection.repo,
                               relative_path=selection.relative_path)


async def warm(workspace: WorkspaceContext | None, engine: Any) -> bool:
    """Prefill the prompt the next request at the last cursor will use (`n_predict: 0`): the last request again, with
    the context chosen now.

    The whole request, not the context block alone with an empty prefix: a model server (and an LSP fuzzer reading
    its requests) cannot tell a bare block from a completion that lost the text before the cursor, and the prefix is
    what the next request there reuses most of. Nothing is sent for a cursor with nothing before it."""
    if workspace is None or engine is None or workspace.last_cursor is None or not workspace.settings.warm_cache:
        return False
    last = workspace.last_request
    generation = getattr(engine, "generation", None)
    if generation is None or last is None or not last.prefix:
        return False
    cursor = workspace.last_cursor
    try:
        selection = await workspace.select(cursor, prompt_lines=workspace.last_prompt_lines,
                                           prefix_only=bool(generation.template.prefix_only),
                                           count_tokens=generation.count_tokens)
        if not selection.snippets or selection.snippets == workspace.last_warmed:
            return False
        request = dataclasses.replace(last, context=selection.snippets, repo=selection.repo,
                                      relative_path=selection.relative_path)
        sent = bool(await engine.warm(request))
        if sent:  # one held (a shared server) is tried again at the next change
            workspace.last_warmed = selection.snippets
        return sent
    except Exception as exc:
        log.debug("warming the prompt cache failed: %s", exc)
        return False
