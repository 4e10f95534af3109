"""The language table: which stop words end a completion in each language.

The table is data (`engine/languages.toml`); users add languages or extra stop words through configuration
(`[languages.<name>]`, see `engine.config.LanguageOverride`). A language id nobody knows gets single-line completions,
because without a comment syntax or keywords a multi-line completion has no good place to stop."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Iterator, Mapping

from .config import LanguageOverride, from_dict
from .errors import ConfigError
from .tomlfiles import read_packaged
from .validation import InvalidValue, check_stop_words

log = logging.getLogger(__name__)

TABLE_FILE = "languages.toml"


@dataclass(frozen=True)
class Defaults:
    """Stop words every language shares (read from the `[defaults]` table)."""

    blank_line: str = "\n\n"
    blank_line_max_spaces: int = 16
    blank_line_max_tabs: int = 8
    sentinels: tuple[str, ...] = ()

    def stop_words(self) -> tuple[str, ...]:
        # A line holding only indentation is blank too; the matcher looks anywhere, so "\n\n" followed by
        # indentation needs no variants of its own.
        indented = [f"\n{' ' * n}\n" for n in range(1, self.blank_line_max_spaces + 1)]
        indented += [f"\n{chr(9) * n}\n" for n in range(1, self.blank_line_max_tabs + 1)]
        return (self.blank_line, *indented, *self.sentinels)


@dataclass(frozen=True)
class Language:
    name: str
    language_ids: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    line_comment: str | None = None
    top_level_keywords: tuple[str, ...] = ()
    extra_stop_words: tuple[str, ...] = ()
    #: Delimiters of string literals that may span lines (`"""`, a backtick): see `opens_multiline_string`.
    multiline_strings: tuple[str, ...] = ()
    known: bool = True

    def stop_words(self) -> tuple[str, ...]:
        """Defaults, then "\\n" + comment and "\\n" + each top-level keyword, then the extra words; no duplicates.

        An unknown language also stops at "\\n" (single-line completions)."""
        return _stop_words(self)


def opens_multiline_string(delimiters: tuple[str, ...], text: str) -> bool:
    """Whether `text` (a completion so far) leaves open a multi-line string literal it began itself; `delimiters`
    are the language's (`Language.multiline_strings`).

    A prefix-only model's stop words (a blank line, a comment or keyword at a line start) mean "the next item begins"
    in code, not inside a docstring or a template literal: a Python docstring cut at its first blank line is an
    unterminated string in the editor. Counting the delimiters in the completion alone keeps the question local (the
    prefix's own strings are the editor's business); a delimiter that occurs an odd number of times is open."""
    return any(text.count(delimiter) % 2 == 1 for delimiter in delimiters)


@functools.lru_cache(maxsize=512)
def _stop_words(language: Language) -> tuple[str, ...]:
    words: list[str] = list(default_stop_words())
    if not language.known:
        words.append("\n")
    if language.line_comment:
        words.append("\n" + language.line_comment)
    words += ["\n" + kw for kw in language.top_level_keywords]
    words += language.extra_stop_words
    return tuple(dict.fromkeys(words))


# ---------------------------------------------------------------------------------------------------------------------
# Reading and validating the table


def _check_words(values: Any, key: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise ConfigError(key, f"expected a list of strings, got {values!r}")
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ConfigError(f"{key}[{i}]", f"expected a string, got {value!r}")
        if value == "":
            raise ConfigError(f"{key}[{i}]", "must not be empty")
        if value.strip() == "":
            raise ConfigError(f"{key}[{i}]", "must not be blank")
    return tuple(values)


def _check_stop_words(values: Any, key: str) -> tuple[str, ...]:
    try:
        return check_stop_words(values, key)
    except InvalidValue as exc:
        raise ConfigError(exc.key, exc.problem) from None


def _language_from_override(name: str, override: LanguageOverride, key: str) -> Language:
    ids = _check_words(override.language_ids, f"{key}.language_ids") or (name,)
    comment = override.line_comment
    if comment is not None and comment.strip() == "":
        raise ConfigError(f"{key}.line_comment", "must not be empty (leave it out for a language without one)")
    return Language(
        name=name,
        language_ids=ids,
        aliases=_check_words(override.aliases, f"{key}.aliases"),
        line_comment=comment,
        top_level_keywords=_check_words(override.top_level_keywords, f"{key}.top_level_keywords"),
        extra_stop_words=_check_stop_words(override.extra_stop_words, f"{key}.extra_stop_words"),
        multiline_strings=_check_words(override.multiline_strings, f"{key}.multiline_strings"),
    )


def _merge(base: Language, override: LanguageOverride, key: str) -> Language:
    """A user entry for a known language adds ids, aliases, keywords and stop words; a comment replaces the old one."""
    extra = _language_from_override(base.name, override, key)
    return Language(
        name=base.name,
        language_ids=tuple(dict.fromkeys(base.language_ids + tuple(override.language_ids))),
        aliases=tuple(dict.fromkeys(base.aliases + extra.aliases)),
        line_comment=extra.line_comment if override.line_comment is not None else base.line_comment,
        top_level_keywords=tuple(dict.fromkeys(base.top_level_keywords + extra.top_level_keywords)),
        extra_stop_words=tuple(dict.fromkeys(base.extra_stop_words + extra.extra_stop_words)),
        multiline_strings=tuple(dict.fromkeys(base.multiline_strings + extra.multiline_strings)),
    )


def _read_packaged() -> dict[str, Any]:
    return read_packaged("engine", TABLE_FILE)


@functools.lru_cache(maxsize=1)
def _defaults() -> Defaults:
    return from_dict(Defaults, _read_packaged().get("defaults", {}), f"{TABLE_FILE}: defaults")


def default_stop_words() -> tuple[str, ...]:
    """The stop words every language has: blank lines and model sentinels."""
    return _defaults().stop_words()


def default_sentinels() -> tuple[str, ...]:
    """The end, FIM and chat sentinels of common models: a model that writes one has ended its answer."""
    return tuple(_defaults().sentinels)


@functools.lru_cache(maxsize=1)
def _file_extensions() -> dict[str, str]:
    return {ext.lower(): language_id for ext, language_id in _read_packaged().get("file_extensions", {}).items()}


def language_id_for_path(path: str | PurePath) -> str:
    """The LSP languageId of a file from its extension (the table's `file_extensions`); "plaintext" when unknown."""
    return _file_extensions().get(PurePath(path).suffix.lower(), "plaintext")


def _packaged_languages() -> list[Language]:
    out = []
    for name, entry in _read_packaged().get("languages", {}).items():
        key = f"{TABLE_FILE}: languages.{name}"
        out.append(_language_from_override(name, from_dict(LanguageOverride, entry, key), key))
    return out


class LanguageTable:
    """Languages by LSP languageId, alias and name (case-insensitive)."""

    def __init__(self, languages: list[Language]):
        self._languages: dict[str, Language] = {}
        self._index: dict[str, Language] = {}
        self._unknown_logged: set[str] = set()
        for language in languages:
            self._languages[language.name] = language
        self._build_index()

    def _build_index(self) -> None:
        index: dict[str, Language] = {}
        for language in self._languages.values():
            for name in (language.name, *language.language_ids, *language.aliases):
                index.setdefault(name.lower(), language)
        self._index = index

    @classmethod
    def load(cls, overrides: Mapping[str, LanguageOverride | Mapping[str, Any]] | None = None) -> "LanguageTable":
        """The packaged table plus the user's `[languages.<name>]` entries (dicts are validated here too)."""
        table = cls(_packaged_languages())
        for name, override in (overrides or {}).items():
            table._apply(name, override)
        table._build_index()
        return table

    def _apply(self, name: str, given: LanguageOverride | Mapping[str, Any]) -> None:
        key = f"languages.{name}"
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("languages", f"a language name must be a non-empty string, got {name!r}")
        if isinstance(given, LanguageOverride):
            override = given
        elif isinstance(given, Mapping):
            override = from_dict(LanguageOverride, given, key)
        else:
            raise ConfigError(key, f"expected a table, got {given!r}")
        existing = self._find(name)
        if existing is not None:
            updated = _merge(existing, override, key)
        else:
            updated = _language_from_override(name, override, key)
        for i, language_id in enumerate(override.language_ids):
            owner = self._find(language_id)
            if owner is not None and owner.name != updated.name:
                raise ConfigError(f"{key}.language_ids[{i}]",
                                  f"{language_id!r} already belongs to the language {owner.name!r}")
        self._languages[updated.name] = updated
        self._build_index()

    def _find(self, name: str) -> Language | None:
        return self._index.get(name.lower())

    def lookup(self, language_id: str) -> Language:
        """The language for an LSP languageId, alias or name; an unknown id gets single-line completions."""
        found = self._find(language_id or "")
        if found is not None:
            return found
        key = (language_id or "").lower()
        if key not in self._unknown_logged:
            self._unknown_logged.add(key)
            log.info("unknown language id %r: completions will be single-line (add it under [languages.%s])",
                     language_id, language_id or "<name>")
        return Language(name=language_id or "unknown", language_ids=(language_id,) if language_id else (),
                        known=False)

    def __iter__(self) -> Iterator[Language]:
        return iter(sorted(self._languages.values(), key=lambda language: language.name))

    def __len__(self) -> int:
        return len(self._languages)

    def __contains__(self, language_id: object) -> bool:
        return isinstance(language_id, str) and self._find(language_id) is not None


@functools.lru_cache(maxsize=1)
def default_table() -> LanguageTable:
    """The packaged table without user overrides, read once."""
    return LanguageTable.load()
