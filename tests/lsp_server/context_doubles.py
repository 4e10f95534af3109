"""Test doubles for choosing workspace context without a server or a model (not a test module): an open document
as the server's document store holds it, and the parts of `engine.code.CodeGeneration` that choosing context reads.
One place, so that the tests of the workspace context and of the start-up faults hand it the same shapes."""

from __future__ import annotations

from dataclasses import dataclass

from engine.prompt import PromptTemplate


@dataclass
class Doc:
    """An open document: its text and language, all that the workspace context reads of one."""

    text: str
    language_id: str = "python"


@dataclass
class Generation:
    """The parts of engine.code.CodeGeneration that choosing context reads (a prefix-only model by default)."""

    template: PromptTemplate
    max_prefix_tokens: int = 1024
    max_suffix_tokens: int = 256
    count_tokens: object = None
    sees_suffix: bool = False
