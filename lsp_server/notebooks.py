"""Open notebooks: which cells make up each one, in order, so that a cell is completed with the code around it.

A notebook is one program cut into cells: a cell that uses `df` from the cell above is, alone, a fragment, and the
model completes it far better with the cells before it as its prefix and the cells after it as its suffix (as
Copilot does). The cells' texts are ordinary documents in the DocumentStore (opened, changed and closed through
`notebookDocument/*`, LSP 3.17); this module keeps only the order of the cells and their kinds, and is pure
bookkeeping: the server's handlers feed it and read it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .documents import normalize_uri

#: LSP NotebookCellKind: markup cells (Markdown) are prose, not code.
CODE = 2
#: How cells are joined into one text for the model: a blank line, as between the top-level statements of a script.
SEPARATOR = "\n\n"


@dataclass
class Notebook:
    uri: str
    #: (cell document URI as the store keys it, kind), in the notebook's order.
    cells: list[tuple[str, int]] = field(default_factory=list)


class Notebooks:
    def __init__(self) -> None:
        self._books: dict[str, Notebook] = {}
        self._book_of: dict[str, str] = {}  # cell URI → notebook URI

    def __len__(self) -> int:
        return len(self._books)

    def open(self, uri: str, cells: list[tuple[str, int]]) -> list[str]:
        """Records a notebook; returns the cells of an earlier notebook of that URI, which it replaces."""
        replaced = self.close(uri)
        book = Notebook(uri, [(normalize_uri(c), kind) for c, kind in cells])
        self._books[uri] = book
        for cell, _ in book.cells:
            self._book_of[cell] = uri
        return replaced

    def splice(self, uri: str, start: int, delete_count: int, cells: list[tuple[str, int]]) -> list[str]:
        """`notebookDocument/didChange`'s cell array change: `delete_count` cells from `start` replaced by `cells`
        (clamped to the notebook, as an editor's slightly wrong count should not lose the notebook). Returns the
        removed cells' URIs."""
        book = self._books.get(uri)
        if book is None:
            return []
        start = max(0, min(start, len(book.cells)))
        end = max(start, min(start + max(0, delete_count), len(book.cells)))
        removed = [c for c, _ in book.cells[start:end]]
        book.cells[start:end] = [(normalize_uri(c), kind) for c, kind in cells]
        for cell in removed:
            self._book_of.pop(cell, None)
        for cell, _ in book.cells:
            self._book_of[cell] = uri
        return [c for c in removed if self._book_of.get(c) != uri]

    def set_kind(self, cell_uri: str, kind: int) -> None:
        """A cell changed kind (code ↔ markup) in `notebookDocument/didChange`'s `data`."""
        cell_uri = normalize_uri(cell_uri)
        book = self._books.get(self._book_of.get(cell_uri, ""))
        if book is not None:
            book.cells = [(c, kind if c == cell_uri else k) for c, k in book.cells]

    def close(self, uri: str) -> list[str]:
        """Forgets a notebook; returns its cells' URIs (for the caller to close their documents)."""
        book = self._books.pop(uri, None)
        if book is None:
            return []
        for cell, _ in book.cells:
            if self._book_of.get(cell) == uri:
                del self._book_of[cell]
        return [c for c, _ in book.cells]

    def around(self, cell_uri: str) -> tuple[list[str], list[str]] | None:
        """The code cells before `cell_uri` (nearest last) and after it (nearest first) in its notebook; None when
        it is no cell of an open notebook."""
        cell_uri = normalize_uri(cell_uri)
        book = self._books.get(self._book_of.get(cell_uri, ""))
        if book is None:
            return None
        at = next((i for i, (c, _) in enumerate(book.cells) if c == cell_uri), None)
        if at is None:
            return None
        before = [c for c, kind in book.cells[:at] if kind == CODE]
        after = [c for c, kind in book.cells[at + 1:] if kind == CODE]
        return before, after


def joined_before(texts: Iterable[str], limit: int) -> str:
    """The texts of the cells before the cursor's, nearest first, joined as one program in their order and ending in
    the separator, cut to its last `limit` characters: only as many cells are read as the prompt can hold."""
    out: list[str] = []
    size = 0
    for text in texts:
        out.append(text.rstrip("\n") + SEPARATOR)
        size += len(out[-1])
        if size >= limit:
            break
    return "".join(reversed(out))[-limit:] if out else ""


def joined_after(texts: Iterable[str], limit: int) -> str:
    """The texts of the cells after the cursor's, nearest first, each after the separator, cut to `limit`."""
    out: list[str] = []
    size = 0
    for text in texts:
        out.append(SEPARATOR + text.rstrip("\n"))
        size += len(out[-1])
        if size >= limit:
            break
    return "".join(out)[:limit]
