"""The language table: coverage, lookup, stop words, user overrides and their errors."""

from __future__ import annotations

import logging

import pytest

from engine.config import EngineConfig, LanguageOverride, from_dict
from engine.errors import ConfigError
from engine.languages import Language, LanguageTable, default_stop_words, default_table, language_id_for_path
from engine.tomlfiles import read_packaged

REQUIRED_IDS = [
    "python", "javascript", "javascriptreact", "typescript", "typescriptreact", "rust", "go", "java", "c", "cpp",
    "csharp", "kotlin", "ruby", "php", "lua", "scala", "dart", "elixir", "r", "solidity", "ocaml", "swift",
    "shellscript", "css", "html", "sql", "markdown", "yaml", "json", "dockerfile", "makefile", "plaintext",
]
SENTINELS = ["<|endoftext|>", "<|file_sep|>", "<|fim_pad|>", "<|repo_name|>", "<｜end▁of▁sentence｜>",
             "<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<file_sep>", "<EOT>", "<|fim_prefix|>",
             "<|fim_suffix|>", "<|fim_middle|>", "<|file_separator|>", "<|im_end|>", "<|system|>", "<|user|>",
             "<|end|>", "<|assistant|>"]


@pytest.mark.parametrize("language_id", REQUIRED_IDS)
def test_every_required_language_id_is_known(language_id):
    language = default_table().lookup(language_id)
    assert language.known, language_id
    assert language_id in language.language_ids


def test_defaults_hold_blank_lines_and_every_model_sentinel():
    defaults = default_stop_words()
    assert "\n\n" in defaults
    assert "\n    \n" in defaults and "\n\t\n" in defaults  # lines holding only indentation are blank too
    for sentinel in SENTINELS:
        assert sentinel in defaults, sentinel


def test_python_stop_words_are_defaults_comment_and_keywords():
    python = default_table().lookup("python")
    words = python.stop_words()
    assert words[:len(default_stop_words())] == default_stop_words()
    assert "\n#" in words
    for keyword in ("def", "from", "class", "import"):
        assert "\n" + keyword in words
    assert "\n" not in words
    assert len(words) == len(set(words))


@pytest.mark.parametrize("name, expected", [
    ("PYTHON", "python"), ("py", "python"), ("typescriptreact", "typescript"), ("tsx", "typescript"),
    ("javascriptreact", "javascript"), ("c++", "cpp"), ("Shellscript", "shellscript"), ("bash", "shellscript"),
    ("yml", "yaml"), ("jsonc", "json"),
])
def test_lookup_by_id_alias_or_name_ignores_case(name, expected):
    assert default_table().lookup(name).name == expected


def test_unknown_language_is_single_line_and_logged_once(caplog):
    table = LanguageTable.load()
    with caplog.at_level(logging.INFO, logger="engine.languages"):
        first = table.lookup("brainfunk")
        table.lookup("brainfunk")
        table.lookup("BRAINFUNK")
    assert not first.known
    assert "\n" in first.stop_words()
    assert set(default_stop_words()) <= set(first.stop_words())
    assert len([r for r in caplog.records if "brainfunk" in r.getMessage().lower()]) == 1


def test_iteration_lists_each_language_once():
    names = [language.name for language in default_table()]
    assert len(names) == len(set(names)) == len(default_table())
    assert all(isinstance(language, Language) for language in default_table())


def test_default_table_is_cached():
    assert default_table() is default_table()


def test_overrides_add_a_language():
    table = LanguageTable.load({"mylang": LanguageOverride(line_comment="//", top_level_keywords=("fn", "pub"),
                                                           aliases=("mylanglang",))})
    mylang = table.lookup("mylanglang")
    assert mylang.known and mylang.name == "mylang" and mylang.language_ids == ("mylang",)
    assert {"\n//", "\nfn", "\npub"} <= set(mylang.stop_words())
    assert "\n" not in mylang.stop_words()


def test_overrides_extend_a_known_language_found_by_any_of_its_names():
    table = LanguageTable.load({"py": {"extraStopWords": ["\nif __name__"], "topLevelKeywords": ["async"]}})
    python = table.lookup("python")
    assert "\nif __name__" in python.stop_words()
    assert "\ndef" in python.stop_words()  # the packaged keywords stay
    assert python.line_comment == "#"
    assert "\nif __name__" not in default_table().lookup("python").stop_words()  # the shared table is untouched


def test_overrides_from_engine_config():
    config = from_dict(EngineConfig, {"languages": {"nim": {"line_comment": "#", "language_ids": ["nim", "nimble"]}}})
    table = LanguageTable.load(config.languages)
    assert table.lookup("nimble").name == "nim"


@pytest.mark.parametrize("overrides, key", [
    ({"mylang": {"extra_stop_words": ["ok", ""]}}, "languages.mylang.extra_stop_words[1]"),
    ({"mylang": {"top_level_keywords": [" "]}}, "languages.mylang.top_level_keywords[0]"),
    ({"mylang": {"line_comment": ""}}, "languages.mylang.line_comment"),
    ({"mylang": {"language_ids": ["python"]}}, "languages.mylang.language_ids[0]"),
    ({"rust": {"language_ids": ["rust2", "python"]}}, "languages.rust.language_ids[1]"),
    ({"mylang": {"unknown_key": 1}}, "languages.mylang.unknown_key"),
    ({"mylang": {"aliases": "z"}}, "languages.mylang.aliases"),
    ({"mylang": "not a table"}, "languages.mylang"),
])
def test_bad_overrides_raise_config_error_naming_the_key(overrides, key):
    with pytest.raises(ConfigError) as error:
        LanguageTable.load(overrides)
    assert error.value.key == key
    assert key in str(error.value)


def test_file_extensions_name_known_language_ids():
    table = default_table()
    extensions = read_packaged("engine", "languages.toml")["file_extensions"]
    assert extensions and all(ext.startswith(".") and ext == ext.lower() for ext in extensions)
    assert [language_id for language_id in extensions.values() if language_id not in table] == []
    assert language_id_for_path("src/App.TSX") == "typescriptreact"
    assert language_id_for_path("/p/x.pyi") == "python"
    assert language_id_for_path("Makefile.unknown") == "plaintext"
    assert language_id_for_path("no_extension") == "plaintext"
