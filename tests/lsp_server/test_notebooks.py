from lsp_server.notebooks import CODE, SEPARATOR, Notebooks, joined_after, joined_before

MARKUP = 1


def test_the_code_cells_around_a_cell_in_order():
    books = Notebooks()
    books.open("nb", [("c0", CODE), ("m1", MARKUP), ("c2", CODE), ("c3", CODE), ("c4", CODE)])
    assert books.around("c3") == (["c0", "c2"], ["c4"])
    assert books.around("m1") == (["c0"], ["c2", "c3", "c4"])
    assert books.around("elsewhere") is None


def test_splice_moves_deletes_and_clamps():
    books = Notebooks()
    books.open("nb", [("a", CODE), ("b", CODE), ("c", CODE)])
    # A move is a delete and an insert in one change: the moved cell is not reported as removed.
    assert books.splice("nb", 0, 1, []) == ["a"]
    assert books.splice("nb", 2, 0, [("a", CODE)]) == []
    assert books.around("a") == (["b", "c"], [])
    assert books.splice("nb", 1, 1, [("c", CODE)]) == []  # replaced by itself
    # A count past the end deletes to the end; a start past the end appends.
    assert books.splice("nb", 1, 99, []) == ["c", "a"]
    assert books.splice("nb", 50, 0, [("d", CODE)]) == []
    assert books.around("d") == (["b"], [])
    assert books.around("c") is None
    assert books.splice("other", 0, 1, []) == []  # a notebook that is not open


def test_kinds_change_and_close_returns_the_cells():
    books = Notebooks()
    books.open("nb", [("a", CODE), ("b", CODE)])
    books.set_kind("a", MARKUP)
    assert books.around("b") == ([], [])
    assert sorted(books.close("nb")) == ["a", "b"]
    assert books.around("b") is None and len(books) == 0
    # Opened again under the same URI: the old cells are handed back for closing.
    books.open("nb", [("x", CODE)])
    assert books.open("nb", [("y", CODE)]) == ["x"]
    assert books.around("x") is None and books.around("y") == ([], [])


def test_joining_reads_only_as_many_cells_as_the_limit_needs():
    read: list[str] = []

    def cells(texts):
        for t in texts:
            read.append(t)
            yield t

    assert joined_before(cells(["c = 3\n", "b = 2", "a = 1"]), 100) == "a = 1" + SEPARATOR + "b = 2" + SEPARATOR \
        + "c = 3" + SEPARATOR
    read.clear()
    assert joined_before(cells(["near = 1", "far = 2"]), 5) == "= 1" + SEPARATOR
    assert read == ["near = 1"]  # the far cell is not even read
    assert joined_after(["x = 1\n", "y = 2"], 100) == SEPARATOR + "x = 1" + SEPARATOR + "y = 2"
    assert joined_after(["x = 1", "y = 2"], 4) == SEPARATOR + "x "
    assert joined_before([], 10) == "" and joined_after([], 10) == ""
