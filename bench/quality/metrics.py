"""Scores for one completion, and the oracle cut: the best prefix of the raw model output.

Exact match compares the whole suggestion with the reference, both stripped: an editor shows all of it, so trailing
junk makes a suggestion wrong. (This is the SantaCoder harness's `generation.strip() == reference.strip()`.)

The oracle is an upper bound for any rule that only decides where to cut the raw output. For exact match and edit
similarity every character prefix is a candidate. For HumanEval pass@1 running every character prefix would cost
hundreds of executions per task, so the candidates are the prefixes that end at a line break (and the whole output):
a cut inside a line cannot pass where the middle is made of whole lines, except by luck of a shorter expression."""

from __future__ import annotations


def exact_match(completion: str, reference: str) -> bool:
    return completion.strip() == reference.strip()


def levenshtein_row(reference: str, text: str) -> list[int]:
    """Edit distances between all of `reference` and each prefix of `text` (index j = text[:j])."""
    # Dynamic programme with `text` as the outer dimension, so the last cell of each column is the distance to one
    # prefix of `text`: one pass yields every prefix's distance.
    column = list(range(len(reference) + 1))
    out = [column[-1]]
    for j, ch in enumerate(text, start=1):
        new = [j]
        for i, ref_ch in enumerate(reference, start=1):
            new.append(min(column[i] + 1, new[i - 1] + 1, column[i - 1] + (ref_ch != ch)))
        column = new
        out.append(column[-1])
    return out


def edit_similarity(completion: str, reference: str) -> float:
    """Normalised Levenshtein similarity of the stripped texts, 0-100 (100 = identical)."""
    a, b = completion.strip(), reference.strip()
    longest = max(len(a), len(b))
    if longest == 0:
        return 100.0
    return 100.0 * (1 - levenshtein_row(b, a)[-1] / longest)


def oracle_exact_match(raw: str, reference: str) -> bool:
    # Some prefix, stripped, equals the target iff the output without its leading blanks starts with the target
    # (the cut drops whatever follows).
    return raw.lstrip().startswith(reference.strip())


def oracle_edit_similarity(raw: str, reference: str) -> float:
    """The best edit similarity over all prefixes of `raw` (stripping each the way `edit_similarity` does)."""
    best = edit_similarity("", reference)
    target = reference.strip()
    stripped = raw.lstrip()
    distances = levenshtein_row(target, stripped)
    for j, distance in enumerate(distances):
        candidate = stripped[:j]
        if candidate != candidate.rstrip():
            continue  # the same as a shorter prefix, already counted
        longest = max(len(candidate), len(target))
        score = 100.0 if longest == 0 else 100.0 * (1 - distance / longest)
        best = max(best, score)
    return best


def line_cut_candidates(raw: str) -> list[str]:
    """The prefixes of `raw` that end just before a line break, then `raw` itself; without duplicates, shortest
    first (so an oracle search can stop at the first that passes and report the shortest passing cut)."""
    out: list[str] = []
    seen: set[str] = set()
    for index, ch in enumerate(raw):
        if ch == "\n":
            candidate = raw[:index]
            if candidate not in seen:
                seen.add(candidate)
                out.append(candidate)
    if raw not in seen:
        out.append(raw)
    return out


def humaneval_program_middle(completion: str, suffix_after_cursor: str) -> str:
    """What `check_correctness` appends to the problem's prompt: the accepted completion plus the rest of the document.

    `suffix_after_cursor` is the task's suffix as the editor saw it (starting with the empty line's newline)."""
    return completion + suffix_after_cursor
