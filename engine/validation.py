"""The checks of values that several places accept: stop words and token budgets.

Stop words reach the engine from the language table, the prompt template's family, the model's configuration and
each request; token budgets from the configuration and from direct callers of the prompt functions. Each of those
places calls these, so a value is judged by one rule and the error always names the setting it came in."""

from __future__ import annotations

from typing import Any


class InvalidValue(ValueError):
    """A ValueError that also carries the exact key at fault (with the list index) and the problem, so that the
    configuration layer can re-raise it as a ConfigError under its own path."""

    def __init__(self, key: str, problem: str):
        self.key = key
        self.problem = problem
        super().__init__(f"{key} {problem}")


#: The streaming matcher (engine/decoding.py) nests one regex group per character of a stop word: a word of several
#: hundred characters would exceed Python's recursion limit while it is built. No real stop word comes near this.
MAX_STOP_WORD_CHARS = 256


def check_stop_words(value: Any, key: str = "stop_words") -> tuple[str, ...]:
    """`value` as a tuple; InvalidValue naming `key` unless it is a collection of non-empty strings.

    A plain string is refused rather than read as its characters (a classic slip: `stop_words = "\\n"`)."""
    if isinstance(value, str):
        raise InvalidValue(key, f"must be a list of strings, got the string {value!r}")
    try:
        words = tuple(value)
    except TypeError:
        raise InvalidValue(key, f"must be a list of strings, got {value!r}") from None
    for i, word in enumerate(words):
        if not isinstance(word, str):
            raise InvalidValue(f"{key}[{i}]", f"must be a string, got {word!r}")
        if word == "":
            raise InvalidValue(f"{key}[{i}]", "must not be empty")
        if len(word) > MAX_STOP_WORD_CHARS:
            raise InvalidValue(f"{key}[{i}]", f"is {len(word)} characters long; at most {MAX_STOP_WORD_CHARS}")
    return words


def check_token_budget(value: Any, key: str) -> int:
    """`value` when it is a whole number of tokens (0 means "none"); InvalidValue naming `key` otherwise."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidValue(key, f"must be an integer, got {value!r}")
    if value < 0:
        raise InvalidValue(key, f"must not be negative, got {value}")
    return value
