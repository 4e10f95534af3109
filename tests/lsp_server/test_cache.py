"""The LRU cache and typing-through."""

from lsp_server.cache import CompletionCache


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_exact_hit_and_lru_eviction():
    cache = CompletionCache(max_entries=2)
    cache.put("u", "a", "s", ("1",))
    cache.put("u", "b", "s", ("2",))
    assert cache.get("u", "a", "s") == ("1",)  # touches "a": "b" is now the oldest
    cache.put("u", "c", "s", ("3",))
    assert cache.get("u", "b", "s") is None
    assert cache.get("u", "a", "s") == ("1",) and cache.get("u", "c", "s") == ("3",)
    assert cache.get("other", "a", "s") is None  # keyed by document too
    assert cache.get("u", "a", "different suffix") is None


def test_entries_expire():
    clock = Clock()
    cache = CompletionCache(ttl=10, clock=clock)
    cache.put("u", "p", "s", ("x",))
    clock.t = 11
    assert cache.get("u", "p", "s") is None
    assert len(cache) == 0


def test_typing_through_returns_the_rest():
    cache = CompletionCache()
    cache.remember_shown("u", "def f(", "\n", ("a, b):", "self):"))
    assert cache.typing_through("u", "def f(a", "\n") == (", b):",)
    assert cache.typing_through("u", "def f(s", "\n") == ("elf):",)
    assert cache.typing_through("u", "def f(x", "\n") is None  # does not match any suggestion
    assert cache.typing_through("u", "def f(a, b):", "\n") is None  # fully typed: nothing left
    assert cache.typing_through("u", "def f(a", ")\n") is None  # suffix changed
    assert cache.typing_through("u", "def f(", "\n") is None  # nothing typed: that is an exact-cache question
    assert cache.typing_through("v", "def f(a", "\n") is None


def test_typing_through_limit_and_expiry():
    clock = Clock()
    cache = CompletionCache(typing_through_max=3, ttl=5, clock=clock)
    cache.remember_shown("u", "", "", ("abcdef",))
    assert cache.typing_through("u", "abc", "") == ("def",)
    assert cache.typing_through("u", "abcd", "") is None
    clock.t = 6
    assert cache.typing_through("u", "a", "") is None


def test_forget_document():
    cache = CompletionCache()
    cache.put("u", "p", "s", ("x",))
    cache.put("v", "p", "s", ("y",))
    cache.remember_shown("u", "p", "s", ("x",))
    cache.forget_document("u")
    assert cache.get("u", "p", "s") is None and cache.get("v", "p", "s") == ("y",)
    assert cache.typing_through("u", "px", "s") is None
