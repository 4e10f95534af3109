"""Next-edit tasks from two releases of one file: line hunks, related hunks grouped into edit sequences, and the
replay of a sequence's first hunks as the user's edits with the next hunk (or none) as the answer.

Why this construction: a release diff is a real change made by a person, but not in the order it was typed. We keep
what an editor session would plausibly look like: the file's UNRELATED hunks are applied before the session starts
(they happened earlier and are no longer recent history), and the hunks of one sequence — hunks that share a changed
token, such as a rename or an added argument — are made top-down, one after the other. After the k-th hunk of a
sequence the true next edit is the (k+1)-th; after the last one the file equals the new release, so there is none.

Everything here is pure (no I/O), so the builder, the runner and the tests share it."""

from __future__ import annotations

import difflib
import hashlib
import keyword
import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from engine.next_edit.diff import common_ends

TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
#: A hunk a person makes in one go and an NES can propose: at most this many lines on either side.
MAX_HUNK_LINES = 8
#: Files larger than this are skipped (generated or vendored code, and they would bloat the task file).
MAX_FILE_CHARS = 60_000
MAX_FILE_LINES = 1500
#: A file whose diff touches more than this share of its lines was rewritten, not edited.
MAX_CHANGED_SHARE = 0.25
#: Next-edit tasks taken from one sequence (k = 1, 2 and the last), so that a 40-place rename does not dominate.
TASKS_PER_SEQUENCE = 3
TASKS_PER_FILE = 8
#: Shared tokens too common to say that two hunks belong together.
COMMON = frozenset(keyword.kwlist) | frozenset("""
self this cls true false null none undefined return const let var function new static void int char long unsigned
struct if else for while case break default string number boolean object type interface export import from async
await value result name data args kwargs error err self_ size len index key keys item items list dict str bool
""".split())


@dataclass(frozen=True)
class Hunk:
    """Lines [start, end) of the OLD file replaced by `new` (whole lines, each ending in a newline)."""

    start: int
    end: int
    new: tuple[str, ...]

    def to_json(self) -> list[Any]:
        return [self.start, self.end, "".join(self.new)]

    @staticmethod
    def from_json(value: Sequence[Any]) -> "Hunk":
        return Hunk(int(value[0]), int(value[1]), tuple(split_lines(value[2])))


def split_lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def normalise(text: str) -> str:
    """LF line endings and a final newline, so that hunks are whole lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text if text.endswith("\n") or not text else text + "\n"


def line_hunks(old: Sequence[str], new: Sequence[str]) -> list[Hunk]:
    matcher = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    return [Hunk(i1, i2, tuple(new[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def substitutions(old: str, new: str) -> frozenset[tuple[str, str]]:
    """The token-level changes that turn `old` into `new`, as (removed, inserted) text pairs."""
    a, b = TOKEN.findall(old), TOKEN.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return frozenset(("".join(a[i1:i2]), "".join(b[j1:j2]))
                     for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal")


def changed_tokens(pairs: Iterable[tuple[str, str]]) -> frozenset[str]:
    """Distinctive words among a hunk's removed and inserted text: what links related hunks."""
    words = set()
    for removed, inserted in pairs:
        for word in re.findall(r"[A-Za-z_]\w*|\d+\w*", removed + " " + inserted):
            if len(word) >= 4 and word.lower() not in COMMON:
                words.add(word)
    return frozenset(words)


def old_text(lines: Sequence[str], hunk: Hunk) -> str:
    return "".join(lines[hunk.start:hunk.end])


def eligible(lines: Sequence[str], hunk: Hunk) -> bool:
    """A hunk that can be one user edit and one proposal: small, and more than whitespace."""
    old, new = old_text(lines, hunk), "".join(hunk.new)
    if hunk.end - hunk.start > MAX_HUNK_LINES or len(hunk.new) > MAX_HUNK_LINES:
        return False
    return "".join(old.split()) != "".join(new.split())


def group_hunks(lines: Sequence[str], hunks: Sequence[Hunk]) -> list[list[int]]:
    """Edit sequences: eligible hunks linked by a shared substitution or a shared distinctive changed word (union
    of links), each in file order; sequences ordered by their first hunk. Ineligible hunks are in none."""
    indices = [i for i, h in enumerate(hunks) if eligible(lines, h)]
    parent = {i: i for i in indices}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owners: dict[Any, int] = {}
    for i in indices:
        pairs = substitutions(old_text(lines, hunks[i]), "".join(hunks[i].new))
        keys: set[Any] = {("pair", p) for p in pairs if p[0].strip() and p[1].strip()}
        keys |= {("word", w) for w in changed_tokens(pairs)}
        for key in keys:
            if key in owners:
                parent[find(i)] = find(owners[key])
            else:
                owners[key] = i
    groups: dict[int, list[int]] = {}
    for i in indices:
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def change_span(old: str, new: str) -> tuple[str, str]:
    """The one span an edit changed, old and new text: common tokens trimmed off both ends, then widened by a token
    on each side (at most 3 times) until the old text holds a word, so that an insertion is anchored to what it was
    inserted next to (`str` -> `Sequence[str] | str` rather than "" -> `Sequence[str] | `)."""
    a, b = TOKEN.findall(old), TOKEN.findall(new)
    p, q = common_ends(a, b)
    for _ in range(3):
        if re.search(r"\w", "".join(a[p:len(a) - q])):
            break
        p, q = max(0, p - 1), max(0, q - 1)
    return "".join(a[p:len(a) - q]), "".join(b[p:len(b) - q])


def repeats_change(last_old: str, last_new: str, next_old: str, next_new: str) -> bool:
    """Substitution-like: the next hunk is the last edit's change made again where its old text stands (every
    occurrence in the hunk replaced), which is what model-free propagation is meant to find."""
    span_old, span_new = change_span(last_old, last_new)
    return bool(span_old.strip()) and span_old in next_old and next_old.replace(span_old, span_new) == next_new


def stable_fraction(*parts: Any) -> float:
    """A deterministic pseudo-random number in [0, 1) from the parts (reproducible sampling without a seed)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


def task_points(sequence_length: int) -> list[int]:
    """How many hunks of a sequence are replayed, per task: 1, 2 and the last but one (next-edit tasks)."""
    points = sorted({k for k in (1, 2, sequence_length - 1) if 1 <= k < sequence_length})
    return points[:TASKS_PER_SEQUENCE]


def file_record(language: str, package: str, versions: tuple[str, str], path: str, old: str, new: str,
                no_edit_rate: float) -> dict[str, Any] | None:
    """The JSON record of one file's tasks (None: nothing usable). `tasks` are (sequence, replayed hunks); a
    sequence replayed whole is a "no next edit" task, kept with probability `no_edit_rate`."""
    old, new = normalise(old), normalise(new)
    if old == new or max(len(old), len(new)) > MAX_FILE_CHARS:
        return None
    a, b = split_lines(old), split_lines(new)
    if max(len(a), len(b)) > MAX_FILE_LINES:
        return None
    hunks = line_hunks(a, b)
    changed = sum(max(h.end - h.start, len(h.new)) for h in hunks)
    if changed > MAX_CHANGED_SHARE * max(len(a), 1):
        return None
    sequences = group_hunks(a, hunks)
    tasks: list[tuple[int, int]] = []
    for s, seq in enumerate(sequences):
        tasks += [(s, k) for k in task_points(len(seq))]
        if stable_fraction(package, versions, path, s, "none") < no_edit_rate:
            tasks.append((s, len(seq)))
    if not tasks:
        return None
    if len(tasks) > TASKS_PER_FILE:
        tasks = sorted(tasks, key=lambda t: stable_fraction(package, versions, path, *t))[:TASKS_PER_FILE]
        tasks.sort()
    used = sorted({s for s, _ in tasks})
    renumber = {s: n for n, s in enumerate(used)}
    return {"language": language, "package": package, "from": versions[0], "to": versions[1], "path": path,
            "old": old, "hunks": [h.to_json() for h in hunks],
            "sequences": [sequences[s] for s in used],
            "tasks": [[renumber[s], k] for s, k in tasks]}


# ---------------------------------------------------------------------------------------------------------------------
# Replaying a record


@dataclass(frozen=True)
class Change:
    """One didChange: replace [start, end) (line, UTF-16 column) by `text`; the cursor ends at `cursor`."""

    start: tuple[int, int]
    end: tuple[int, int]
    text: str
    cursor: tuple[int, int]


@dataclass(frozen=True)
class Task:
    task_id: str
    language: str
    package: str
    versions: tuple[str, str]
    path: str
    base: str                       # the file when the session starts (unrelated hunks applied)
    changes: tuple[Change, ...]     # the replayed hunks, as the user's edits
    current: str                    # the text after them (what the request sees)
    cursor: tuple[int, int]         # line, UTF-16 column: the end of the last replayed edit
    expected: str | None            # the text after the true next edit; None: no next edit
    expected_lines: tuple[int, int] | None   # the true next hunk's lines [start, end) in `current`
    pending: tuple[str, ...]        # the text after each remaining hunk of the sequence (any of them is "an" edit)
    substitution_like: bool         # the next hunk repeats a substitution of the last replayed one
    replayed: int
    sequence_length: int


def apply_hunks(lines: Sequence[str], hunks: Iterable[Hunk]) -> str:
    out: list[str] = []
    pos = 0
    for h in sorted(hunks, key=lambda h: (h.start, h.end)):
        out += lines[pos:h.start]
        out += h.new
        pos = h.end
    out += lines[pos:]
    return "".join(out)


def shifted_start(hunk: Hunk, applied: Iterable[Hunk]) -> int:
    """Where `hunk` starts in the old file with `applied` (hunks before it or elsewhere) applied."""
    return hunk.start + sum(len(a.new) - (a.end - a.start) for a in applied if a.end <= hunk.start and a != hunk)


def utf16_column(line: str, index: int) -> int:
    return len(line[:index].encode("utf-16-le")) // 2


def position(text: str, offset: int) -> tuple[int, int]:
    """(line, UTF-16 column) of a code-point offset."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return line, utf16_column(text[start:], offset - start)


def minimal_change(before: str, region_start: int, region_old: str, region_new: str) -> Change:
    """The single replacement of `region_old` (at offset `region_start` of `before`) by `region_new`, common ends
    trimmed inside the region only: what typing the hunk would send (a whole inserted line stays a whole line)."""
    prefix = 0
    limit = min(len(region_old), len(region_new))
    while prefix < limit and region_old[prefix] == region_new[prefix]:
        prefix += 1
    suffix = 0
    while (suffix < limit - prefix
           and region_old[len(region_old) - 1 - suffix] == region_new[len(region_new) - 1 - suffix]):
        suffix += 1
    inserted = region_new[prefix:len(region_new) - suffix]
    start = region_start + prefix
    end = region_start + len(region_old) - suffix
    after = before[:start] + inserted + before[end:]
    # after typing a new line the cursor is at its end, not at the start of the next one
    cursor = start + len(inserted) - (1 if inserted.endswith("\n") else 0)
    return Change(position(before, start), position(before, end), inserted, position(after, cursor))


def hunk_change(old: Sequence[str], hunk: Hunk, applied: Sequence[Hunk]) -> Change:
    """The didChange that makes `hunk` in the text `old` + `applied`."""
    before = apply_hunks(old, applied)
    lines = split_lines(before)
    start_line = shifted_start(hunk, applied)
    offset = sum(len(line) for line in lines[:start_line])
    return minimal_change(before, offset, old_text(old, hunk), "".join(hunk.new))


def expand(record: dict[str, Any], split: str) -> list[Task]:
    """The tasks of one file record."""
    old = split_lines(record["old"])
    hunks = [Hunk.from_json(h) for h in record["hunks"]]
    tasks = []
    for s, k in record["tasks"]:
        seq = [hunks[i] for i in record["sequences"][s]]
        in_seq = set(record["sequences"][s])
        background = [h for i, h in enumerate(hunks) if i not in in_seq]
        texts = [apply_hunks(old, background + seq[:j]) for j in range(len(seq) + 1)]
        changes = tuple(hunk_change(old, seq[j], background + seq[:j]) for j in range(k))
        current = texts[k]
        expected = expected_lines = None
        substitution_like = False
        if k < len(seq):
            nxt = seq[k]
            expected = apply_hunks(old, background + seq[:k] + [nxt])
            start = shifted_start(nxt, background + seq[:k])
            expected_lines = (start, start + nxt.end - nxt.start)
            last = seq[k - 1]
            # substitutions only: a line added or removed whole is no substitution
            whole_lines = any(h.start == h.end or not h.new for h in (last, nxt))
            substitution_like = not whole_lines and repeats_change(old_text(old, last), "".join(last.new),
                                                                   old_text(old, nxt), "".join(nxt.new))
        pending = tuple(apply_hunks(old, background + seq[:k] + [h]) for h in seq[k:])
        cursor = changes[-1].cursor if changes else (0, 0)
        tasks.append(Task(
            task_id=f"{split}/{record['language']}/{record['package']}@{record['to']}/{record['path']}#{s}.{k}",
            language=record["language"], package=record["package"], versions=(record["from"], record["to"]),
            path=record["path"], base=texts[0], changes=changes, current=current, cursor=cursor, expected=expected,
            expected_lines=expected_lines, pending=pending, substitution_like=substitution_like, replayed=k,
            sequence_length=len(seq)))
    return tasks
