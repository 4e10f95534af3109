"""One rule for stop words and token budgets, wherever they come in; the error names the setting and the item."""

import pytest

from engine.code import CodeGeneration
from engine.config import EngineConfig, from_dict
from engine.errors import ConfigError
from engine.languages import LanguageTable
from engine.prompt import PromptTemplate
from engine.types import CompletionOptions
from engine.validation import InvalidValue, check_stop_words, check_token_budget


def test_stop_words():
    assert check_stop_words(["\n", " x"]) == ("\n", " x")
    assert check_stop_words(w for w in ("a",)) == ("a",)
    with pytest.raises(InvalidValue, match="got the string") as info:
        check_stop_words("\n")
    assert info.value.key == "stop_words"
    with pytest.raises(InvalidValue) as info:
        check_stop_words(["a", ""], "additional_stop_words")
    assert (info.value.key, info.value.problem) == ("additional_stop_words[1]", "must not be empty")
    with pytest.raises(InvalidValue, match=r"stop_words\[0\] must be a string"):
        check_stop_words([1])
    with pytest.raises(InvalidValue, match="list of strings"):
        check_stop_words(3)


def test_token_budget():
    assert check_token_budget(0, "max_prefix_tokens") == 0
    for bad in (-1, 1.5, True, "8"):
        with pytest.raises(InvalidValue, match="max_prefix_tokens"):
            check_token_budget(bad, "max_prefix_tokens")


def test_every_entry_point_uses_the_same_rule():
    """The request, the template, the generator, the configuration and the language table refuse an empty word."""
    with pytest.raises(ValueError, match=r"stop_words\[0\] must not be empty"):
        CompletionOptions(stop_words=("",))
    with pytest.raises(ValueError, match=r"stop_words\[0\] must not be empty"):
        PromptTemplate("custom", "{prefix}", stop_words=("",))
    with pytest.raises(ValueError, match=r"additional_stop_words\[0\] must not be empty"):
        CodeGeneration(None, PromptTemplate("custom", "{prefix}"), LanguageTable.load(),  # type: ignore[arg-type]
                       extra_stop_words=("",))
    with pytest.raises(ConfigError, match=r"additional_stop_words\[0\] must not be empty") as info:
        from_dict(EngineConfig, {"completion": {"additional_stop_words": [""]}})
    assert info.value.key == "completion"
    with pytest.raises(ConfigError) as info:
        LanguageTable.load({"mylang": {"extra_stop_words": ["ok", ""]}})
    assert info.value.key == "languages.mylang.extra_stop_words[1]"


def test_a_stop_word_longer_than_the_matcher_takes_is_refused():
    with pytest.raises(InvalidValue, match=r"stop_words\[1\].*at most 256"):
        check_stop_words(["\n", "x" * 257])
    assert check_stop_words(["y" * 256]) == ("y" * 256,)
