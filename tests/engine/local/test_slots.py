"""Slot choice for Infill's own llama-server: the longest shared prompt beginning wins, open streams are avoided,
a guess never evicts the user's prompt cache."""

from engine.local.slots import SlotRouter, shared_length

FILE_A = "# a.py\nimport os\n\ndef main():\n    print(os.getcwd())\n"
FILE_B = "// b.ts\nexport function f(x: number) {\n  return x;\n}\n"


def test_shared_length():
    assert shared_length("abcd", "abxy") == 2
    assert shared_length("", "abc") == 0


def test_consecutive_requests_of_a_document_stay_on_its_slot():
    router = SlotRouter(2)
    first = router.choose(FILE_A)
    router.begin(first, FILE_A)
    router.end(first)
    # one more character typed: the same slot, even though the other one is just as free
    assert router.choose(FILE_A + "x") == first


def test_a_slot_whose_request_was_cancelled_is_chosen_again():
    """The superseded request's stream is closed (cancelled) but llama-server may still be finishing its batch:
    the next request waits for that slot rather than prefilling everything on the other one."""
    router = SlotRouter(2)
    router.begin(0, FILE_A)
    router.end(0)  # cancelled: the stream is closed
    assert router.choose(FILE_A + "    ") == 0


def test_a_slot_with_an_open_stream_is_avoided_while_another_is_free():
    router = SlotRouter(2)
    router.begin(0, FILE_A)  # still generating (e.g. another document's request)
    assert router.choose(FILE_A + "x") == 1
    router.begin(1, FILE_B)
    assert router.choose(FILE_A + "x") == 0  # none free: the best match, to wait for


def test_a_new_file_takes_the_least_recently_used_slot():
    router = SlotRouter(2)
    router.begin(0, FILE_A)
    router.end(0)
    assert router.choose(FILE_B) == 1  # file A keeps its cache
    router.begin(1, FILE_B)
    router.end(1)
    assert router.choose(FILE_A + "z") == 0 and router.choose(FILE_B + "z") == 1


def test_a_guess_that_continues_the_users_prompt_runs_on_the_users_slot():
    """The accepted state extends the user's prompt: running it there extends the cache; a slot of its own would
    prefill the whole prompt a second time."""
    router = SlotRouter(2)
    router.begin(0, FILE_A)
    router.end(0)
    assert router.choose(FILE_A + "    return 0\n", speculative=True) == 0


def test_a_guess_that_would_evict_the_users_prompt_takes_the_last_slot():
    router = SlotRouter(2)
    router.begin(0, FILE_A)
    router.end(0)
    # shares only the first line with the user's prompt (say, another context block): not on the user's slot
    assert router.choose(FILE_A[:7] + "other code\n", speculative=True) == 1
    assert router.choose(FILE_B, speculative=True) == 1


def test_a_guess_goes_where_its_own_earlier_guess_is():
    router = SlotRouter(2)
    router.begin(0, FILE_A)
    router.end(0)
    router.begin(1, FILE_B + "guess")
    router.end(1)
    assert router.choose(FILE_B + "guess more", speculative=True) == 1


def test_a_single_slot_takes_everything():
    router = SlotRouter(1)
    router.begin(0, FILE_A)
    assert router.choose(FILE_B) == 0 and router.choose(FILE_B, speculative=True) == 0


def test_a_prompt_sharing_only_a_few_characters_is_new():
    router = SlotRouter(2)
    router.begin(0, FILE_A)
    router.end(0)
    router.begin(1, "# c" + FILE_B)
    router.end(1)
    # shares "# c" with slot 1 (the most recent) and "# " with slot 0, both under a tenth of itself: new, so the
    # least recently used slot, which keeps slot 1's prompt
    assert router.choose("# c.py\n" + "print(1)\n" * 20) == 0
