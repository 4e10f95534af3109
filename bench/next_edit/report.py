"""The measures of a run, per mode and language, and the printed table.

- exact: of the tasks with a next edit, the share where the proposed edit gives exactly the text after the true
  next edit (whole file compared);
- exact_any: ... or after another pending hunk of the same sequence (right, but not the one the user made next);
- step: exact, or a part of the true next edit (nothing changed outside its lines, which got closer to their next
  state: one of a hunk's two occurrences renamed, which accepting and the next suggestion would complete);
- exact_in_window (scripted model): exact over the tasks whose true next edit lies inside the window the prompt
  showed, so that a right rewrite exists: the pipeline's own losses (target 98 %);
- location: of the tasks with a next edit, the share where the proposed edit overlaps the true hunk's lines;
- false positives: of ALL tasks, the share with an edit proposed where the true next edit is elsewhere (no overlap)
  or where there is none; `fp_wrong` leaves out proposals that are a LATER hunk of the same sequence (right, out of
  the user's order); `fp_none` is the share of the "no next edit" tasks that got an edit;
- helps / distracts (a real model): right suggestions (exact) against wrong ones (proposed, not exact) per task;
- latency p50 / p95 of the copilotInlineEdit requests (client side, ms)."""

from __future__ import annotations

import difflib
from typing import Any, Iterable, Sequence

from .harness import Outcome, apply_edit
from .tasks import Task


def percentile(values: Sequence[float], q: float) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def share(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 1) if whole else None


def measures(outcomes: Iterable[Outcome]) -> dict[str, Any]:
    items = list(outcomes)
    with_next = [o for o in items if o.has_next]
    none = [o for o in items if not o.has_next]
    subst = [o for o in with_next if o.substitution_like]
    fp = [o for o in items if o.proposed and not o.location]
    # of those, the ones that are not even a later hunk of the same sequence (right, but out of the user's order)
    fp_wrong = [o for o in fp if not o.exact_any]
    latencies = [o.latency_ms for o in items if not o.error]
    right = sum(o.exact for o in with_next)
    # scripted modes: the tasks whose true next edit lies inside the window the prompt showed (a right rewrite
    # exists), where every miss is the pipeline's own loss
    seen = [o for o in with_next if o.scripted == "rewrite"]
    wrong = sum(o.proposed and not o.exact for o in items)
    return {
        "tasks": len(items), "with_next": len(with_next), "no_next": len(none),
        "exact": share(right, len(with_next)),
        "exact_any": share(sum(o.exact_any for o in with_next), len(with_next)),
        "in_window": len(seen), "exact_in_window": share(sum(o.exact for o in seen), len(seen)),
        "step": share(sum(o.step for o in with_next), len(with_next)),
        "location": share(sum(o.location for o in with_next), len(with_next)),
        "proposed": share(sum(o.proposed for o in items), len(items)),
        "false_positives": share(len(fp), len(items)),
        "fp_wrong": share(len(fp_wrong), len(items)),
        "fp_none": share(sum(o.proposed for o in none), len(none)),
        "substitution_like": len(subst),
        "subst_exact": share(sum(o.exact for o in subst), len(subst)),
        "subst_step": share(sum(o.step for o in subst), len(subst)),
        "right": right, "wrong": wrong,
        "errors": sum(bool(o.error) for o in items),
        "p50_ms": _round(percentile(latencies, 50)), "p95_ms": _round(percentile(latencies, 95)),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def breakdown(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Overall and per-language measures."""
    languages = sorted({o.language for o in outcomes})
    return {"all": measures(outcomes), **{lang: measures(o for o in outcomes if o.language == lang)
                                          for lang in languages}}


def losses(outcomes: Sequence[Outcome]) -> dict[str, int]:
    """Why tasks with a next edit were not exact: the server's discard reason, the scripted model's view, or the
    shape of the wrong answer."""
    out: dict[str, int] = {}
    for o in outcomes:
        if o.has_next and not o.exact:
            if o.error:
                why = "error"
            elif o.proposed:
                why = "wrong edit (right place)" if o.location else "wrong place"
            elif o.scripted and o.scripted != "rewrite":
                why = f"model saw: {o.scripted}"
            else:
                why = f"no edit: {o.discarded or 'nothing proposed'}"
            out[why] = out.get(why, 0) + 1
        elif not o.has_next and o.proposed:
            out["edit where none is due"] = out.get("edit where none is due", 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


COLUMNS = (("tasks", "tasks"), ("exact", "exact%"), ("exact_any", "any%"), ("step", "step%"), ("location", "loc%"),
           ("false_positives", "FP%"), ("fp_wrong", "FPwrong%"), ("fp_none", "FPnone%"), ("subst_exact", "subst%"),
           ("subst_step", "sstep%"),
           ("substitution_like", "n_sub"), ("in_window", "n_win"), ("exact_in_window", "winEx%"),
           ("right", "right"), ("wrong", "wrong"), ("p50_ms", "p50ms"), ("p95_ms", "p95ms"))


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def table(results: dict[str, dict[str, Any]]) -> str:
    """One row per mode and language: `results[mode] = breakdown(...)`."""
    header = f"{'mode':<22}{'lang':<12}" + "".join(f"{title:>9}" for _, title in COLUMNS)
    rows = [header, "-" * len(header)]
    for mode, by_language in results.items():
        for language, m in by_language.items():
            rows.append(f"{mode:<22}{language:<12}" + "".join(f"{_cell(m.get(key)):>9}" for key, _ in COLUMNS))
    return "\n".join(rows)


def _diff(before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), n=0)
    return "".join(f"    {line}" if line.endswith("\n") else f"    {line}\n"
                   for line in lines if not line.startswith(("---", "+++")))


def listing(tasks: Sequence[Task], outcomes: Sequence[Outcome]) -> str:
    """Every substitution-like task that was not exact and every false positive, with the user's last edit, the
    true next edit and the proposed one as line diffs: what a rule change has to look at (tune on dev only)."""
    by_id = {t.task_id: t for t in tasks}
    out = []
    for o in outcomes:
        miss = o.substitution_like and not o.exact
        false_positive = o.proposed and not o.location
        task = by_id.get(o.task_id)
        if task is None or not (miss or false_positive):
            continue
        kinds = [k for k, on in (("substitution-like miss", miss), ("false positive", false_positive)) if on]
        out.append(f"== {o.task_id} ({', '.join(kinds)}; cursor {task.cursor[0] + 1}:{task.cursor[1] + 1})")
        last = task.changes[-1] if task.changes else None
        if last is not None:
            out.append(f"  last edit: lines {last.start[0] + 1}-{last.end[0] + 1} -> {last.text[:300]!r}")
        out.append("  true next edit:" if task.expected is not None else "  true next edit: none")
        if task.expected is not None:
            out.append(_diff(task.current, task.expected).rstrip("\n"))
        if o.edit is not None:
            out.append("  proposed:")
            out.append(_diff(task.current, apply_edit(task.current, o.edit)[0]).rstrip("\n"))
        else:
            out.append(f"  proposed: nothing ({o.discarded or 'no edit'})")
    return "\n".join(out) + ("\n" if out else "")


def compare(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """Two runs' outcomes of one mode (the `outcomes` of two results files), task by task: the tasks that became
    exact (`gained`), stopped being exact (`lost`), got a wrong proposal (`new_wrong`) or lost one (`gone_wrong`).
    How a propagation rule is judged: kept when it gains, loses nothing and adds no wrong proposal (docs/next-edit.md,
    "How rules were added")."""
    a, b = {o["task_id"]: o for o in before}, {o["task_id"]: o for o in after}
    common = sorted(set(a) & set(b))

    def wrong(o: dict[str, Any]) -> bool:
        return bool(o["proposed"]) and not o["exact"]
    gained = [t for t in common if b[t]["exact"] and not a[t]["exact"]]
    lost = [t for t in common if a[t]["exact"] and not b[t]["exact"]]
    return {"gained": gained, "lost": lost,
            "new_wrong": [t for t in common if wrong(b[t]) and not wrong(a[t]) and t not in lost],
            "gone_wrong": [t for t in common if wrong(a[t]) and not wrong(b[t]) and t not in gained],
            "only_before": sorted(set(a) - set(b)), "only_after": sorted(set(b) - set(a))}

