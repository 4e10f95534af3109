"""The edit history: coalescing into hunks, pauses, undo, bulk changes, budgets (no sleeps: an injected clock)."""

from __future__ import annotations

from lsp_server.next_edit.history import PAUSE_S, EditHistory, changed_span, split_lines


class Doc:
    """A document as lines, edited like the store (the history reads lines before each change)."""

    def __init__(self, text: str, uri: str = "file:///w/a.py") -> None:
        self.lines = split_lines(text)
        self.uri = uri

    def read(self, first: int, last: int) -> list[str]:
        return [self.lines[i] if i < len(self.lines) else "" for i in range(first, last + 1)]

    def edit(self, history: EditHistory, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        history.record(self.uri, self.uri.rsplit("/", 1)[-1], "python", start, end, text, self.read)
        (a, ac), (b, bc) = start, end
        joined = self.lines[a][:ac] + text + self.lines[b][bc:]
        self.lines[a:b + 1] = split_lines(joined)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _type(doc: Doc, history: EditHistory, line: int, col: int, text: str, clock: Clock) -> None:
    for i, ch in enumerate(text):
        doc.edit(history, (line, col + i), (line, col + i), ch)
        clock.now += 0.1


def test_typing_a_rename_is_one_hunk_with_the_lines_before_and_after():
    clock = Clock()
    history = EditHistory(clock)
    doc = Doc("def f(count):\n    return count\n")
    doc.edit(history, (0, 6), (0, 11), "")  # delete "count"
    _type(doc, history, 0, 6, "total", clock)
    assert len(history) == 1
    event = history.newest().event()
    assert (event.start_line, event.old, event.new) == (0, "def f(count):\n", "def f(total):\n")


def test_a_pause_starts_a_new_hunk():
    clock = Clock()
    history = EditHistory(clock)
    doc = Doc("a = 1\nb = 2\n")
    doc.edit(history, (0, 4), (0, 5), "3")
    clock.now += PAUSE_S + 0.01
    doc.edit(history, (1, 4), (1, 5), "4")
    assert [(h.start, h.old, h.new) for h in history] == [(0, ["a = 1"], ["a = 3"]), (1, ["b = 2"], ["b = 4"])]


def test_edits_within_eight_lines_coalesce_farther_ones_do_not():
    clock = Clock()
    history = EditHistory(clock)
    doc = Doc("".join(f"x{i}\n" for i in range(30)))
    doc.edit(history, (2, 0), (2, 2), "y2")
    doc.edit(history, (10, 0), (10, 3), "y10")  # 8 lines below the hunk: joins it, with the lines between
    assert len(history) == 1
    hunk = history.newest()
    assert hunk.start == 2 and hunk.old[0] == "x2" and hunk.new[0] == "y2" and hunk.new[-1] == "y10"
    assert hunk.old[1:-1] == hunk.new[1:-1] == [f"x{i}" for i in range(3, 10)]
    doc.edit(history, (25, 0), (25, 3), "y25")  # far away: a new hunk
    assert len(history) == 2 and history.newest().start == 25


def test_line_numbers_are_those_of_the_current_text_after_inserted_lines():
    clock = Clock()
    history = EditHistory(clock)
    doc = Doc("a\nb\nc\n")
    doc.edit(history, (1, 0), (1, 0), "new1\nnew2\n")
    event = history.newest().event()
    assert (event.start_line, event.old, event.new) == (1, "", "new1\nnew2\n")
    doc.edit(history, (0, 0), (0, 1), "A")  # above the hunk: the hunk now starts at line 0
    event = history.newest().event()
    assert (event.start_line, event.old, event.new) == (0, "a\n", "A\nnew1\nnew2\n")
    assert doc.lines[0:3] == ["A", "new1", "new2"]


def test_undo_within_the_hunk_drops_it():
    clock = Clock()
    history = EditHistory(clock)
    doc = Doc("value = 1\n")
    doc.edit(history, (0, 8), (0, 9), "2")
    doc.edit(history, (0, 8), (0, 9), "1")
    assert len(history) == 0


def test_undo_after_a_pause_removes_the_edit_and_redo_brings_it_back():
    clock = Clock()
    history = EditHistory(clock)
    doc = Doc("keep = 0\nvalue = 1\n")
    doc.edit(history, (0, 7), (0, 8), "5")
    clock.now += 5
    doc.edit(history, (1, 0), (1, 5), "amount")
    clock.now += 5
    doc.edit(history, (1, 0), (1, 6), "value")  # undo
    assert [(h.old, h.new) for h in history] == [(["keep = 0"], ["keep = 5"])]
    clock.now += 5
    doc.edit(history, (1, 0), (1, 5), "amount")  # redo
    assert history.newest().event().new == "amount = 1\n"


def test_a_large_paste_is_one_bulk_event_that_later_typing_does_not_join():
    clock = Clock()
    history = EditHistory(clock)
    doc = Doc("start\n")
    pasted = "".join(f"line {i} = {i}\n" for i in range(20))
    doc.edit(history, (1, 0), (1, 0), pasted)
    assert len(history) == 1 and history.newest().bulk
    doc.edit(history, (3, 0), (3, 0), "x")
    assert len(history) == 2 and not history.newest().bulk


def test_a_large_deletion_within_a_line_is_bulk():
    clock = Clock()
    history = EditHistory(clock)
    doc = Doc("x = '" + "a" * 300 + "'\n")
    doc.edit(history, (0, 5), (0, 305), "")
    assert history.newest().bulk


def test_history_is_across_documents_newest_last_and_within_the_budget():
    clock = Clock()
    history = EditHistory(clock)
    a, b = Doc("alpha = 1\n", "file:///w/a.py"), Doc("beta = 2\n", "file:///w/b.py")
    a.edit(history, (0, 8), (0, 9), "7")
    b.edit(history, (0, 7), (0, 8), "8")
    events = history.events(1000)
    assert [e.path for e in events] == ["a.py", "b.py"]  # chronological
    tiny = history.events(len("beta = 2\n") * 2 // 3 + 3)
    assert [e.path for e in tiny] == ["b.py"]  # the newest first within the budget
    assert [e.path for e in history.events(1000, lambda h: h.uri != b.uri)] == ["a.py"]
    history.forget(a.uri)
    assert [e.path for e in history.events(1000)] == ["b.py"]


def test_a_change_that_changes_nothing_is_not_recorded():
    history = EditHistory(Clock())
    doc = Doc("same\n")
    doc.edit(history, (0, 0), (0, 4), "same")
    assert len(history) == 0


def test_changed_span_of_whole_documents():
    assert changed_span("abcdef", "abXYef") == (2, 4, 4)
    assert changed_span("aaa", "aaaa") == (3, 3, 4)
    assert changed_span("", "new") == (0, 0, 3)
    assert changed_span("same", "same") == (4, 4, 4)
