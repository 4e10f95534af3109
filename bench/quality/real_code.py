"""Completion quality on real package code, with the cursor where an editor user has it, for the default model.

HumanEval and SantaCoder put the cursor at column 0 of an empty line; the cut simulation scores a scripted model.
This benchmark asks the real model (default: Gemma 3 270M, prefix-only) on real files of registry packages, at the
places a user asks for a suggestion:

- **after the indentation** an editor inserts on a new line, where one statement (`line`), a run of two or three
  statements (`statements`) or one statement over several lines (`block`) is missing (the cut simulation's hole
  finder, tree-sitter statement spans);
- **in the middle of a one-line statement**, the rest of it missing: after a space (`return `, `= `, `new `,
  `raise `, …: position `space`), inside a word (`word`), after `(`, `.` or `[` (`punct`).

Tasks are drawn in fixed shares of those places (`SHARES`), uniformly over every such place in a language's files
(a file with more code gives more tasks, as it would to its user), with a fixed seed. Two splits of different
packages: `tune` (the cut simulation's packages) to work on, `heldout` (other packages) to report.

Per task: *raw* (the engine without stop rules, cut only at the token limit), *ours* (the LSP server's own code path
over that generation: `build_context`, `CompletionService.generate` with the real `CodeGeneration` stop words over
the streamed text; greedy decoding makes it the text a live request gets, and it halves the model time on a shared
machine; `--live-ours` asks the pipeline too) and the *oracle* (the best character prefix of raw). Where the
prompt ends mid-token (after a blank, `engine.prompt.healing_split`) raw is also asked with the prompt ended at the
last whole token, its answer with the removed text taken off (`raw_healed`), and the oracle is the better of the two
raws. Scores: exact
match and edit similarity (`bench/quality/metrics.py`), per language, hole kind and position; too long one-line
holes (a suggestion of more lines than the hole); empty answers after a space against elsewhere.

The JSON keeps every task's document and every model text, so `--replay FILE` runs today's pipeline over the
recorded raw texts without a model (a scripted engine streams them through the real stop words), which is how a cut
rule is checked before it is kept.

    python3 -m bench.quality.real_code --fetch                  # the packages of both splits (pip, npm, apt-get)
    python3 -m bench.quality.real_code --split tune             # default model, ~15 minutes on 2 cores
    python3 -m bench.quality.real_code --split heldout
    python3 -m bench.quality.real_code --replay FILE [FILE …]   # today's cuts over recorded texts, no model
    python3 -m bench.quality.real_code --smoke                  # tiny test model, this repository's files
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Sequence

from engine.prompt import healing_split
from engine.types import ContextSnippet
from lsp_server.workspace.provider import after_cursor
from lsp_server.workspace.settings import ContextSettings

from ..common.packages import Packages, fetch_packages
from ..common.paths import REPO_ROOT, RESULTS_DIR
from . import cut_simulation as sim
from .metrics import edit_similarity, exact_match, oracle_edit_similarity, oracle_exact_match
from .suites_data import Task as QualityTask

RESULTS = RESULTS_DIR
LANGUAGES = ("python", "java", "typescript", "go", "javascript")
DEFAULT_LANGUAGES = ("python", "java", "typescript", "go")
#: The tuning split is the cut simulation's corpus; the held-out split other packages of the same registries
#: (never looked at while writing the rules).
SPLITS = {"tune": sim.CORPUS, "heldout": RESULTS / "corpus-heldout"}
HELDOUT_PACKAGES: Packages = {
    "python": (("pip", "requests==2.32.3"), ("pip", "attrs==24.2.0")),
    "javascript": (("npm", "axios@1.7.9"),),
    "typescript": (("npm", "@tanstack/query-core@5.59.0"),),
    "go": (("apt", "golang-github-pkg-errors-dev"), ("apt", "golang-github-google-uuid-dev")),
    "java": (("npm", "@capacitor/android@6.2.0"),),
}
#: (hole kind, cursor position) → share of a language's tasks. Most requests come on a new line; a third in the
#: middle of a statement.
SHARES: dict[tuple[str, str], float] = {
    ("line", "indent"): 0.25, ("statements", "indent"): 0.17, ("block", "indent"): 0.17,
    ("line", "space"): 0.17, ("line", "word"): 0.12, ("line", "punct"): 0.12,
}
POSITIONS = ("indent", "space", "word", "punct")
DEFAULT_TASKS = 50  # per language: 4 languages ≈ 200 tasks ≈ 15 minutes of generation on 2 cores
SMOKE_TASKS = 6
#: Where a user has typed a keyword or an operator and a space and waits for the rest (the issue's cases).
_AFTER_SPACE = re.compile(r"(?:\b(?:return|raise|throw|new|yield|await)|[-+*/|&:]?=(?!=)) (?=\S)")
_IN_WORD = re.compile(r"[A-Za-z_]\w{3,}")
_AFTER_PUNCT = re.compile(r"[(.\[](?=\w)")


@dataclass(frozen=True)
class RealTask:
    language: str
    kind: str  # line | statements | block
    position: str  # indent | space | word | punct
    path: str
    line: int  # 1-based line of the cursor
    prefix: str
    middle: str
    suffix: str

    @property
    def task_id(self) -> str:
        return f"{self.path}:{self.line}:{self.kind}:{self.position}:{len(self.prefix)}"

    @property
    def label(self) -> str:
        """The file's path inside its package (`rich/text.py`), as the server labels a workspace file."""
        parts = Path(self.path).parts
        roots = [i for i in range(len(parts) - 3) if parts[i].startswith("corpus") and parts[i + 1] == "src"]
        return "/".join(parts[roots[-1] + 3:] if roots else parts[-1:])  # corpus*/src/<archive>/<inside>

    def as_quality_task(self, next_lines: int = 0) -> QualityTask:
        """With `next_lines`, the request carries the "after the cursor" block the server adds for a prefix-only
        model (lsp_server/workspace `next_lines`), so that the raw text is the one an editor user gets."""
        below = after_cursor(self.suffix, next_lines) if next_lines > 0 else ""
        context = (ContextSnippet(f"{self.label} (after the cursor)", below),) if below else ()
        return QualityTask(suite="real-code", task_id=self.task_id, language=self.language, prefix=self.prefix,
                           suffix=self.suffix, reference=self.middle, context=context,
                           relative_path=self.label if context else None)


# ---------------------------------------------------------------------------------------------------------------------
# Corpus and tasks


def _in_string(text: str) -> bool:
    """An odd number of quotes before: the place is inside a string literal (or a comment's prose)."""
    return any(text.count(q) % 2 for q in "\"'`") or "#" in text or "//" in text


def _mid_line(task: sim.Task, position: str, rng: random.Random) -> RealTask | None:
    """The same one-line statement with the cursor inside it, the rest of the statement missing."""
    pattern = {"space": _AFTER_SPACE, "word": _IN_WORD, "punct": _AFTER_PUNCT}[position]
    matches = [m for m in pattern.finditer(task.middle) if not _in_string(task.middle[:m.start()])]
    if not matches:
        return None
    match = rng.choice(matches)
    if position == "word":
        cut = match.start() + rng.randint(2, len(match.group()) - 2)
    else:
        cut = match.end()
    if not re.search(r"\w", task.middle[cut:]):
        return None
    return RealTask(task.language, "line", position, task.path, task.line + 1, task.prefix + task.middle[:cut],
                    task.middle[cut:], task.suffix)


def load_tasks(language: str, files: Sequence[Path], count: int, seed: int) -> list[RealTask]:
    """`count` tasks of the language in the fixed shares, each share drawn uniformly from every place."""
    pools: dict[str, list[sim.Task]] = defaultdict(list)
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if len(text) > sim.MAX_FILE_CHARS or "\r" in text:
            continue
        for kind, tasks in sim.file_tasks(language, path, text).items():
            pools[kind].extend(tasks)
    rng = random.Random(f"{seed}:{language}:real")
    chosen: list[RealTask] = []
    for (kind, position), share in SHARES.items():
        want = max(1, round(count * share))
        pool = list(pools.get(kind, []))
        rng.shuffle(pool)
        got = 0
        for hole in pool:
            if got >= want:
                break
            task = (RealTask(language, kind, position, hole.path, hole.line + 1, hole.prefix, hole.middle,
                             hole.suffix) if position == "indent" else _mid_line(hole, position, rng))
            if task is not None:
                chosen.append(task)
                got += 1
    return chosen


def split_files(split: str, language: str) -> list[Path]:
    root = SPLITS[split] / "src"
    roots = [p for p in sorted(root.glob("*")) if p.is_dir()] if root.is_dir() else []
    return sim.corpus_files(language, roots)


# ---------------------------------------------------------------------------------------------------------------------
# Scoring


def normalise(text: str) -> str:
    return sim.normalise(text)


def line_count(text: str) -> int:
    return sum(1 for line in text.split("\n") if line.strip())


def score_task(row: dict[str, Any]) -> dict[str, Any]:
    """EM / ES of raw, ours and the oracle (the best prefix of either raw), and the outcome of ours."""
    reference = row["middle"]
    raws = [row["raw"]["text"]] + ([row["raw_healed"]["text"]] if row.get("raw_healed") else [])
    ours = row["ours"]["text"]
    scores = {
        "raw": {"exact_match": exact_match(raws[0], reference), "edit_similarity": edit_similarity(raws[0], reference)},
        "ours": {"exact_match": exact_match(ours, reference), "edit_similarity": edit_similarity(ours, reference)},
        "oracle": {"exact_match": any(oracle_exact_match(r, reference) for r in raws),
                   "edit_similarity": max(oracle_edit_similarity(r, reference) for r in raws)},
    }
    outcome = "empty" if not ours.strip() else sim.score(ours, reference)
    return {"scores": scores, "outcome": outcome,
            "too_long_lines": line_count(ours) > line_count(reference)}


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return statistics.fmean(values) if values else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def group(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"tasks": len(rows)}
    for variant in ("raw", "ours", "oracle"):
        out[f"{variant}_em"] = _mean(100.0 * r["scores"][variant]["exact_match"] for r in rows)
        out[f"{variant}_es"] = _mean(r["scores"][variant]["edit_similarity"] for r in rows)
    out["em_efficiency"] = _ratio(out["ours_em"], out["oracle_em"])
    out["es_efficiency"] = _ratio(out["ours_es"], out["oracle_es"])
    out["empty"] = _mean(100.0 * (r["outcome"] == "empty") for r in rows)
    out["too_long"] = _mean(100.0 * r["too_long_lines"] for r in rows)
    return out


#: A model whose first line is at least this similar to the hole's first line wrote the right line. Where it did not,
#: no cut that does not know the answer can do much: the oracle's edge there is cutting wrong text where it happens
#: to overlap the hole most (a line inside a line, or more wrong lines sharing more characters with the hole).
FIRST_LINE_RIGHT_ES = 75.0


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


def first_line_right(row: dict[str, Any]) -> bool:
    """Whether the model's first line (of either raw text, as for the oracle) is the hole's first line, near enough."""
    target = _first_line(row["middle"])
    raws = [row["raw"]] + ([row["raw_healed"]] if row.get("raw_healed") else [])
    return any(edit_similarity(_first_line(raw.get("text") or ""), target) >= FIRST_LINE_RIGHT_ES for raw in raws)


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Overall, per language, hole kind and position; after a space against everything else; and apart where the
    model's first line was right, so that the pipeline's own losses show apart from the model's."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups["all"].append(row)
        groups[f"language/{row['language']}"].append(row)
        groups[f"kind/{row['kind']}"].append(row)
        groups[f"position/{row['position']}"].append(row)
        groups["space: yes" if row["position"] == "space" else "space: no (elsewhere)"].append(row)
        right = "right" if first_line_right(row) else "wrong"
        groups[f"model's first line: {right}"].append(row)
        groups[f"model's first line: {right}, kind/{row['kind']}"].append(row)
    return {name: group(members) for name, members in sorted(groups.items())}


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def table(summary: dict[str, dict[str, Any]]) -> str:
    lines = ["| group | tasks | EM raw / ours / oracle | EM eff. | ES raw / ours / oracle | ES eff. | empty % | "
             "more lines than the hole % |", "|---|---|---|---|---|---|---|---|"]
    for name, g in summary.items():
        lines.append(f"| {name} | {g['tasks']} | {_fmt(g['raw_em'])} / {_fmt(g['ours_em'])} / {_fmt(g['oracle_em'])}"
                     f" | {_fmt(g['em_efficiency'], 2)} | {_fmt(g['raw_es'])} / {_fmt(g['ours_es'])} / "
                     f"{_fmt(g['oracle_es'])} | {_fmt(g['es_efficiency'], 2)} | {_fmt(g['empty'])} | "
                     f"{_fmt(g['too_long'])} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------------
# Generation with the model


#: llama-server's GBNF: the removed text, then anything (`[^\\x00]` is every character a model writes).
GRAMMAR = 'root ::= {literal} [^\\x00]*'


async def grammar_generation(pipeline: Any, task: QualityTask, removed: str) -> dict[str, Any]:
    """Token healing by a grammar (the other way tried): the healed prompt, and llama-server's `grammar` forcing the
    generation to begin with the removed text. Asked directly, as the engine does not send grammars."""
    from engine.errors import BackendError
    from engine.types import CompletionRequest

    generation = pipeline.engine.generation
    run = await generation._start(CompletionRequest(prefix=task.prefix, suffix=task.suffix, language=task.language,
                                                    context=task.context, relative_path=task.relative_path),
                                  heal=True)
    body = {"prompt": (run.sent or run.prompt).text, "n_predict": pipeline.max_tokens, "temperature": 0.0,
            "seed": 42, "cache_prompt": True, "grammar": GRAMMAR.format(literal=json.dumps(removed))}
    started = time.perf_counter()
    try:
        reply = await generation.stream.post_json("/completion", body)
    except BackendError as exc:  # not streamed: on a loaded machine it can outlast the read timeout
        return {"error": str(exc), "model_text": "", "text": "", "stop_reason": "error",
                "latency_ms": (time.perf_counter() - started) * 1000.0}
    text = str(reply.get("content", ""))
    return {"model_text": text, "text": text[len(removed):] if text.startswith(removed) else text,
            "stop_reason": "token_limit" if reply.get("stop_type") == "limit" else "end_of_stream",
            "latency_ms": (time.perf_counter() - started) * 1000.0,
            "generated_tokens": (reply.get("timings") or {}).get("predicted_n")}


async def generate(tasks: Sequence[RealTask], pipeline: Any, progress: bool = True, grammar: bool = False,
                   live_ours: bool = False, time_budget: float | None = None,
                   partial: Path | None = None, next_lines: int = 0) -> list[dict[str, Any]]:
    """The model's raw answers (and the healed prompt's where the prompt ends mid-token; the grammar's with
    `grammar`). "ours" comes from `replay_rows` over them unless `live_ours` asks the pipeline itself too.

    With `time_budget` (seconds) no task starts after it is spent; the tasks are in an order that mixes languages
    and places (`interleave`), so a shortened run is a smaller sample of the same kind. `partial`: the rows so far
    are written there after each task (a run stopped early keeps them; `--replay` reads the file)."""
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    for index, task in enumerate(tasks, start=1):
        if time_budget is not None and time.monotonic() - started > time_budget:
            print(f"  time budget spent: {len(rows)} of {len(tasks)} tasks", file=sys.stderr, flush=True)
            break
        quality_task = task.as_quality_task(next_lines)
        raw = await pipeline.raw(quality_task)
        row: dict[str, Any] = {**asdict(task), "task_id": task.task_id, "raw": raw.to_json()}
        if live_ours:
            row["live_ours"] = (await pipeline.ours(quality_task)).to_json()
        kept, removed = healing_split(task.prefix)
        if removed:
            healed = await pipeline.raw(replace(quality_task, prefix=kept))
            text = healed.text[len(removed):] if healed.text.startswith(removed) else healed.text
            row["raw_healed"] = {**healed.to_json(), "text": text, "model_text": healed.text, "removed": removed}
            if grammar and task.position == "space":
                row["raw_grammar"] = await grammar_generation(pipeline, quality_task, removed)
        rows.append(row)
        if partial is not None:
            partial.write_text(json.dumps({"rows": rows}), encoding="utf-8")
        if progress and (index % 5 == 0 or index == len(tasks)):
            print(f"  generated {index}/{len(tasks)} in {time.monotonic() - started:.0f} s", file=sys.stderr,
                  flush=True)
    return rows


# ---------------------------------------------------------------------------------------------------------------------
# Replay: today's pipeline over recorded raw texts


class ReplayStream(sim.ScriptedStream):
    """The scripted stream, and where the recording has the model's tokens with their log-probabilities, those
    tokens as the chunks, each reported with its log-probability when the request asks for them."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[list[Any]] | None = None

    async def generate(self, prompt: Any, options: Any, stats: Any = None):  # type: ignore[no-untyped-def]
        tokens = self.tokens
        if tokens is None or "".join(t[0] for t in tokens) != self.script:
            async for piece in super().generate(prompt, options, stats):
                yield piece
            return
        from engine.types import TokenLogprob

        for text, logprob in tokens:
            self.chunks_sent += 1
            if stats is not None and options.logprobs:
                stats.add_token(TokenLogprob(text, float(logprob)))
            yield text
        if stats is not None and self.hit_limit:
            stats.hit_token_limit = True


class ReplayEngine(sim.ScriptedEngine):
    """The cut simulation's scripted engine, for a prefix-only model: streams a recorded raw text through the real
    CodeGeneration (stop words, token healing), and says it hit the token limit when the recording did."""

    def __init__(self) -> None:
        super().__init__(None)
        self.stream = self.generation.stream = ReplayStream()


HEALING = ("strip", "none", "grammar")


#: `replay_rows`' confidence floor when none is given: the server's own default.
SERVER_DEFAULT = "default"


async def replay_rows(rows: Sequence[dict[str, Any]], healing: str = "strip",
                      confidence_floor: float | None | str = SERVER_DEFAULT) -> list[dict[str, Any]]:
    """Each row's "ours" recomputed from its recorded raw text: where the prompt ends mid-token, the text of the
    healed prompt (`strip`: as the engine heals; `grammar`: the grammar-forced one, where recorded) or of the prompt as
    it is (`none`, healing off)."""
    from lsp_server.config import parse_settings
    from lsp_server.context import build_context
    from lsp_server.documents import Document
    from lsp_server.pipeline import CompletionService
    from lsp_server.postprocess import parse_clean

    # The parse-clean cut keeps an item whole past its time budget: on a loaded machine that changed replayed
    # suggestions from run to run (a list literal cut to its first line or not). Scores are not to depend on load.
    budget, parse_clean.BUDGET_MS = parse_clean.BUDGET_MS, math.inf
    engine = ReplayEngine()
    settings: dict[str, Any] = {"temperature": 0.0, "cache_size": 0}
    if confidence_floor != SERVER_DEFAULT:
        settings["confidence_floor"] = confidence_floor
    service = CompletionService(parse_settings(settings),
                                engine_factory=lambda config, on_status=None: engine)
    await service.start()
    out = []
    try:
        for n, row in enumerate(rows):
            prefix, suffix = row["prefix"], row["suffix"]
            source = row["raw"]
            _, removed = healing_split(prefix)
            healed = row.get("raw_grammar" if healing == "grammar" else "raw_healed") if healing != "none" else None
            if healed and healed.get("error"):
                healed = None
            if removed and healed:
                source = {**healed, "text": healed["model_text"]}
            engine.generation.token_healing = bool(removed and healed)
            engine.stream.script = source["text"]
            engine.stream.tokens = source.get("tokens")
            engine.stream.hit_limit = source.get("stop_reason") == "token_limit"
            document = Document(f"file:///replay/{n}", prefix + suffix, row["language"])
            line = prefix.count("\n")
            ctx = build_context(document, line, len(prefix) - (prefix.rfind("\n") + 1), "utf-32")
            service.cache.clear()
            suggestions = await service.generate(ctx)
            text = suggestions[0].text if suggestions else ""
            last = engine.last
            ours = {"text": text, "model_text": last.text if last else "",
                    "stop_reason": last.stop_reason.value if last else "no_model_call"}
            out.append({**row, "ours": ours, "recorded_ours": row.get("ours", {}).get("text")})
    finally:
        await service.close()
        parse_clean.BUDGET_MS = budget
    return out


# ---------------------------------------------------------------------------------------------------------------------
# Command line


def _floor(value: str) -> float | None | str:
    return value if value == SERVER_DEFAULT else None if value == "off" else float(value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m bench.quality.real_code", description=__doc__.split("\n")[0])
    parser.add_argument("--fetch", action="store_true", help="download both splits' packages first")
    parser.add_argument("--split", choices=tuple(SPLITS), default="tune")
    parser.add_argument("--language", action="append", choices=LANGUAGES,
                        help=f"repeat for several (default: {', '.join(DEFAULT_LANGUAGES)})")
    parser.add_argument("--tasks", type=int, default=DEFAULT_TASKS, help="tasks per language (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--model", help="GGUF path or model id (default: the embedded Gemma 3 270M)")
    parser.add_argument("--binary", help="llama-server binary")
    parser.add_argument("--replay", type=Path, nargs="+",
                        help="result files (full or .partial.json): today's pipeline over their raw texts, no model "
                             "(a task in several files counts once)")
    parser.add_argument("--healing", choices=HEALING, default="strip",
                        help="with --replay: which recorded text a prompt ending mid-token gets (default %(default)s)")
    parser.add_argument("--grammar", action="store_true",
                        help="also ask with token healing by a llama-server grammar, where the prompt ends mid-token")
    parser.add_argument("--live-ours", action="store_true",
                        help="also ask the pipeline itself for each task (slower; 'ours' still comes from the raw "
                             "text, which greedy decoding makes the same generation)")
    parser.add_argument("--max-prefix-tokens", type=int,
                        help="prompt budget before the cursor (default: the server's, 1024); smaller prompts cost "
                             "less prefill on a loaded machine, the same for raw, ours and the oracle")
    parser.add_argument("--next-lines", type=int, default=ContextSettings().next_lines,
                        help="lines after the cursor shown to a prefix-only model as a labelled block, as the server's "
                             "workspace context does (default: the server's, %(default)s; 0: none)")
    parser.add_argument("--resume", type=Path, nargs="+",
                        help="result files of an earlier run with the same settings: their tasks are not asked again")
    parser.add_argument("--confidence-floor", type=_floor, default=SERVER_DEFAULT,
                        help="with --replay: the server's confidence_floor (a number, or 'off'; default: the server's "
                             "default) over the recorded tokens' log-probabilities")
    parser.add_argument("--no-logprobs", action="store_true",
                        help="do not record the tokens' log-probabilities with the raw texts (llama-server's n_probs "
                             "costs ~6 %% of generation speed)")
    parser.add_argument("--time-budget", type=float, help="seconds of generation; no task starts after them")
    parser.add_argument("--smoke", action="store_true", help="tiny test model, a few tasks from this repository")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--quiet", action="store_true")
    return parser


def interleave(tasks: Sequence[RealTask]) -> list[RealTask]:
    """Round-robin over (language, kind, position) groups, so that any first N tasks mix them all."""
    groups: dict[tuple[str, str, str], list[RealTask]] = defaultdict(list)
    for task in tasks:
        groups[(task.language, task.kind, task.position)].append(task)
    queues = list(groups.values())
    out: list[RealTask] = []
    for i in range(max((len(q) for q in queues), default=0)):
        out += [q[i] for q in queues if i < len(q)]
    return out


def tasks_for(args: argparse.Namespace) -> list[RealTask]:
    languages = args.language or (tuple(sim.SMOKE_FILES) if args.smoke else DEFAULT_LANGUAGES)
    tasks: list[RealTask] = []
    for language in languages:
        if args.smoke:
            files = [REPO_ROOT / p for p in sim.SMOKE_FILES.get(language, ())]
        else:
            files = split_files(args.split, language)
        if not files:
            raise SystemExit(f"no {language} files in the {args.split} split: run with --fetch first")
        tasks += load_tasks(language, files, SMOKE_TASKS if args.smoke else args.tasks, args.seed)
    return interleave(tasks)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from .pipeline import Pipeline
    from .suites import engine_config, smoke_model_path

    tasks = tasks_for(args)
    done: list[dict[str, Any]] = []
    for path in args.resume or ():
        done += json.loads(path.read_text(encoding="utf-8"))["rows"]
    known = {row["task_id"] for row in done}
    tasks = [task for task in tasks if task.task_id not in known]
    model = str(smoke_model_path()) if args.smoke and not args.model else args.model
    config = engine_config(model, args.binary)
    if args.max_prefix_tokens:
        config = replace(config, completion=replace(config.completion, max_prefix_tokens=args.max_prefix_tokens))
    pipeline = Pipeline(config, logprobs=not args.no_logprobs)
    started = time.monotonic()
    try:
        await pipeline.start()
        partial = args.output.with_suffix(".partial.json") if args.output else None
        # the server adds the block for prefix-only models only (a FIM model sees the suffix itself)
        next_lines = args.next_lines if pipeline.engine.generation.template.prefix_only else 0
        rows = await generate(tasks, pipeline, progress=not args.quiet, grammar=args.grammar,
                              live_ours=args.live_ours, time_budget=args.time_budget, partial=partial,
                              next_lines=next_lines)
    finally:
        await pipeline.close()
    rows = await replay_rows(done + rows, "strip")  # ours: the pipeline over each generation
    return {"benchmark": "real_code", "split": args.split, "smoke": args.smoke, "seed": args.seed,
            "model": model or "default (Gemma 3 270M)", "max_tokens": pipeline.max_tokens,
            "max_prefix_tokens": config.completion.max_prefix_tokens, "next_lines": next_lines,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "generation_seconds": round(time.monotonic() - started, 1), "rows": rows}


def finish(report: dict[str, Any]) -> dict[str, Any]:
    for row in report["rows"]:
        row.update(score_task(row))
    report["summary"] = summarise(report["rows"])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.next_lines < 0:
        parser.error("--next-lines must not be negative")
    if args.live_ours and args.next_lines:
        parser.error("--live-ours asks the pipeline without workspace context: use it with --next-lines 0")
    if args.fetch:
        fetch_packages(sim.PACKAGES, SPLITS["tune"])
        fetch_packages(HELDOUT_PACKAGES, SPLITS["heldout"])
    if args.replay:
        recorded: dict[str, Any] = {}
        rows: dict[str, dict[str, Any]] = {}
        for path in args.replay:
            data = json.loads(path.read_text(encoding="utf-8"))
            recorded = recorded or data
            for row in data["rows"]:
                rows.setdefault(row["task_id"], row)
        report = {**recorded, "replayed_from": [str(p) for p in args.replay], "healing": args.healing,
                  "confidence_floor": args.confidence_floor,
                  "rows": asyncio.run(replay_rows(list(rows.values()), args.healing, args.confidence_floor))}
        tag = "replay"
    else:
        report = asyncio.run(run(args))
        tag = "smoke" if args.smoke else args.split
    finish(report)
    output = args.output or RESULTS / f"real_code-{tag}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1), encoding="utf-8")
    if not args.quiet:
        print(table(report["summary"]))
        if args.replay:
            changed = [r for r in report["rows"] if r["ours"]["text"] != r.get("recorded_ours")]
            print(f"\n{len(changed)} of {len(report['rows'])} suggestions differ from the recording")
        print(f"\nJSON: {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
