"""Where suggestions end, measured with a scripted model over real code: does Infill show exactly the missing code?

Statements are cut out of real source files (packages from PyPI, npm and Debian, fetched with their ordinary
clients: `--fetch`), tree-sitter finding the statement spans: one-line holes, runs of several statements, and whole
blocks (a statement over several lines). The cursor sits where an editor leaves it: on the hole's first line, after
the indentation it inserted. A scripted model then writes exactly the missing code and goes on in one of three ways:

- **end of stream**: it stops there (a FIM model's end token);
- **true suffix**: it continues with the code that really follows (a model that re-types what the user has);
- **same shape**: it continues with lines of the suffix's indentation pattern filled with code from other files of
  the language (a prefix-only model writing plausible, wrong code).

The continuation runs until the token limit, which the scripted model reports as a real backend does. Each task runs
through Infill's own pipeline (`lsp_server.context.build_context`, `CompletionService.generate`: the line-mode
decision, the engine's stop words over the streamed chunks, post-processing), once as a model with a FIM template
(it sees the suffix) and once as a prefix-only model. The shown text is scored against the missing code: right, too
long (the right text and more), too short (a beginning of it, or nothing), wrong.

    python3 -m bench.quality.cut_simulation --fetch          # download the default packages into bench/results/corpus
    python3 -m bench.quality.cut_simulation                  # all languages, 150+ tasks each; table + JSON
    python3 -m bench.quality.cut_simulation --smoke          # a few tasks from this repository's own files
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from engine.code import CodeGeneration
from engine.languages import default_table
from engine.prompt import PromptTemplate
from engine.types import CompletionOptions, GenerationStats, Prompt

from ..common.packages import Packages, fetch_packages
from ..common.paths import REPO_ROOT, RESULTS_DIR

CORPUS = RESULTS_DIR / "corpus"

LANGUAGES = ("python", "javascript", "typescript", "go", "rust", "java")
EXTENSIONS = {"python": (".py",), "javascript": (".js",), "typescript": (".ts",), "go": (".go",), "rust": (".rs",),
              "java": (".java",)}
#: The default corpus: real code from each registry, pinned. (client, package) pairs; the client is the registry's
#: ordinary one. Go and Rust sources come from Debian's -dev packages, which ship them; Java from an npm package that
#: ships its Android sources.
PACKAGES: Packages = {
    "python": (("pip", "rich==13.9.4"), ("pip", "click==8.1.7")),
    "javascript": (("npm", "express@4.21.2"), ("npm", "lodash@4.17.21")),
    "typescript": (("npm", "rxjs@7.8.1"),),
    "go": (("apt", "golang-github-spf13-cobra-dev"), ("apt", "golang-github-gorilla-mux-dev")),
    "rust": (("apt", "librust-serde-json-dev"), ("apt", "librust-regex-syntax-dev")),
    "java": (("npm", "cordova-android@13.0.0"),),
}
#: Smoke mode: this repository's own files, so the test suite needs no download.
SMOKE_FILES = {
    "python": ("bench/replay/replay_files/inventory.py", "bench/replay/replay_files/language_server.py"),
    "javascript": ("bench/replay/replay_files/event_queue.js",),
    "typescript": ("bench/replay/replay_files/editor_extension.ts",),
    "go": ("bench/replay/replay_files/wordfreq.go",),
}

HOLE_KINDS = ("line", "statements", "block")
CONTINUATIONS = ("end", "suffix", "same_shape")
MODELS = ("fim", "prefix")
OUTCOMES = ("right", "too_long", "too_short", "wrong")
#: Tree-sitter node types whose named children are statements.
CONTAINERS = frozenset({"block", "module", "statement_block", "statement_list", "class_body", "declaration_list",
                        "program", "source_file"})
#: How much the scripted model writes after the right text before its token limit (characters ≈ 4 per token).
CONTINUATION_CHARS = 240
MAX_FILE_CHARS = 200_000
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


# ---------------------------------------------------------------------------------------------------------------------
# Corpus


def fetch(dest: Path = CORPUS) -> None:
    """Download the default packages with pip, npm and apt-get, and unpack them under dest/src."""
    fetch_packages(PACKAGES, dest)


def corpus_files(language: str, roots: Iterable[Path]) -> list[Path]:
    """Source files of the language: not minified, not declarations, not generated bundles."""
    out = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or not path.name.endswith(EXTENSIONS[language]):
                continue
            if path.name.endswith((".min.js", ".d.ts")) or "/dist/" in str(path) or "/bundles/" in str(path):
                continue
            out.append(path)
    return out


# ---------------------------------------------------------------------------------------------------------------------
# Tasks


@dataclass(frozen=True)
class Task:
    language: str
    kind: str  # line | statements | block
    path: str
    line: int  # 0-based line of the hole's first line
    prefix: str
    middle: str
    suffix: str


def _parser(language: str) -> Any:
    from lsp_server.syntax import _parser as parser_for

    parser = parser_for(language)
    if parser is None:
        raise SystemExit(f"no tree-sitter grammar for {language}: install the `syntax` extra")
    return parser


def _statements(node: Any) -> Iterable[list[Any]]:
    """Runs of statement siblings (named children of a container, comments left out), depth first."""
    if node.type in CONTAINERS:
        run = [child for child in node.named_children if "comment" not in child.type]
        if run:
            yield run
    for child in node.named_children:
        yield from _statements(child)


def _has_body(node: Any) -> bool:
    return any(child.type in CONTAINERS or _has_body(child) for child in node.named_children)


def _hole(text: bytes, first: Any, last: Any) -> tuple[int, int] | None:
    """Byte span from the first node's start to the last node's end, when the nodes own whole lines."""
    start, end = first.start_byte, last.end_byte
    line_start = text.rfind(b"\n", 0, start) + 1
    line_end = text.find(b"\n", end)
    if line_end < 0 or text[line_start:start].strip() or text[end:line_end].strip():
        return None
    return start, end


def file_tasks(language: str, path: Path, text: str) -> dict[str, list[Task]]:
    data = text.encode("utf-8")
    tree = _parser(language).parse(data)
    found: dict[str, list[Task]] = defaultdict(list)

    def add(kind: str, first: Any, last: Any) -> None:
        span = _hole(data, first, last)
        if span is None:
            return
        prefix = data[:span[0]].decode("utf-8", "replace")
        middle = data[span[0]:span[1]].decode("utf-8", "replace")
        suffix = data[span[1]:].decode("utf-8", "replace")
        if not middle.strip() or not suffix.strip() or len(middle) > 600:
            return
        found[kind].append(Task(language, kind, str(path), prefix.count("\n"), prefix, middle, suffix))

    for run in _statements(tree.root_node):
        if run[0].parent is not None and run[0].parent.type in ("program", "source_file", "module") \
                and language not in ("python",):
            continue  # top-level items of brace languages: imports and declarations, not statements
        for i, node in enumerate(run):
            lines = node.end_point[0] - node.start_point[0] + 1
            if lines == 1:
                add("line", node, node)
            elif lines <= 15:
                add("block", node, node)
            for count in (2, 3):
                if i + count <= len(run):
                    last = run[i + count - 1]
                    if last.end_point[0] - node.start_point[0] + 1 <= 12:
                        add("statements", node, last)
    return found


def load_tasks(language: str, files: list[Path], per_kind: int, seed: int) -> list[Task]:
    pools: dict[str, list[Task]] = defaultdict(list)
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if len(text) > MAX_FILE_CHARS or "\r" in text:
            continue
        for kind, tasks in file_tasks(language, path, text).items():
            pools[kind].extend(tasks)
    rng = random.Random(f"{seed}:{language}")
    chosen: list[Task] = []
    for kind in HOLE_KINDS:
        pool = pools.get(kind, [])
        chosen.extend(rng.sample(pool, min(per_kind, len(pool))))
    return chosen


def other_lines(language: str, files: list[Path], seed: int) -> list[str]:
    """Lines of code (stripped) to fill the same-shape continuation with."""
    lines: list[str] = []
    for path in files:
        with contextlib.suppress(UnicodeDecodeError, OSError):
            lines.extend(line.strip() for line in path.read_text(encoding="utf-8").split("\n")
                         if len(line.strip()) > 3 and len(line) < 120)
    random.Random(f"{seed}:{language}:lines").shuffle(lines)
    return lines


def continuation(task: Task, kind: str, rng: random.Random, pool: list[str]) -> str:
    """What the scripted model writes after the right text."""
    if kind == "end":
        return ""
    if kind == "suffix":
        return task.suffix[:CONTINUATION_CHARS]
    out: list[str] = []
    for line in task.suffix.split("\n")[1:13]:
        if not line.strip():
            out.append("")
            continue
        indent = line[:len(line) - len(line.lstrip(" \t"))]
        choice = rng.choice(pool) if pool else "x"
        while choice.rstrip() == line.strip() and len(pool) > 1:  # never the true line by chance
            choice = rng.choice(pool)
        out.append(indent + choice)
    return ("\n" + "\n".join(out))[:CONTINUATION_CHARS]


# ---------------------------------------------------------------------------------------------------------------------
# The scripted model behind Infill's own pipeline


class ScriptedStream:
    """A completion stream that writes a given text in token-sized chunks and then reports how it ended."""

    native_fim = False

    def __init__(self) -> None:
        self.script = ""
        self.hit_limit = False
        self.chunks_sent = 0

    async def generate(self, prompt: Prompt, options: CompletionOptions,
                       stats: GenerationStats | None = None):
        for piece in _TOKEN.findall(self.script):
            self.chunks_sent += 1
            yield piece
        if stats is not None and self.hit_limit:
            stats.hit_token_limit = True

    async def close(self) -> None:
        pass


class ScriptedEngine:
    """What CompletionService needs of an Engine, over CodeGeneration with the scripted stream (the real stop
    words, prompt building and stop reasons)."""

    def __init__(self, template: str | None) -> None:
        self.stream = ScriptedStream()
        self.last: Any = None
        self.generation = CodeGeneration(self.stream, PromptTemplate.from_setting(template), default_table())

    async def start(self) -> None:
        pass

    async def wait_ready(self, timeout: float) -> None:
        pass

    async def complete(self, request: Any, options: CompletionOptions, ready_timeout: float = 0.0,
                       deadline: float | None = None, on_text: Any = None) -> Any:
        self.last = await self.generation.generate(request, options, deadline, on_text)
        return self.last

    async def complete_choices(self, *args: Any) -> None:
        return None  # separate requests, as a backend without n_cmpl

    async def close(self) -> None:
        pass


def normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def score(shown: str, middle: str) -> str:
    shown, middle = normalise(shown), normalise(middle)
    if shown == middle:
        return "right"
    if shown.startswith(middle):
        return "too_long"
    if middle.startswith(shown):
        return "too_short"
    return "wrong"


@dataclass
class Row:
    language: str
    kind: str
    model: str
    continuation: str
    outcome: str
    path: str
    line: int
    line_mode: str
    stop_reason: str
    shown: str = field(repr=False, default="")
    middle: str = field(repr=False, default="")


async def simulate(tasks_by_language: dict[str, list[Task]], pools: dict[str, list[str]], seed: int,
                   models: Iterable[str] = MODELS) -> list[Row]:
    from lsp_server.config import parse_settings
    from lsp_server.context import build_context
    from lsp_server.documents import Document
    from lsp_server.pipeline import CompletionService

    rows: list[Row] = []
    for model in models:
        engine = ScriptedEngine("starcoder" if model == "fim" else None)
        service = CompletionService(parse_settings({"temperature": 0.0, "cache_size": 0}),
                                    engine_factory=lambda config, on_status=None, engine=engine: engine)
        await service.start()
        for language, tasks in tasks_by_language.items():
            rng = random.Random(f"{seed}:{language}:{model}")
            for n, task in enumerate(tasks):
                document = Document(f"file:///sim/{language}/{n}", task.prefix + task.suffix, language)
                character = len(task.prefix) - (task.prefix.rfind("\n") + 1)
                ctx = build_context(document, task.line, character, "utf-32")
                for kind in CONTINUATIONS:
                    tail = continuation(task, kind, rng, pools.get(language, []))
                    engine.stream.script = task.middle + tail
                    engine.stream.hit_limit = kind != "end"
                    service.cache.clear()
                    suggestions = await service.generate(ctx)
                    shown = suggestions[0].text if suggestions else ""
                    last = engine.last
                    stop = f"{last.stop_reason.value}:{last.stop_word!r}" if last.stop_word else last.stop_reason.value
                    rows.append(Row(language, task.kind, model, kind, score(shown, task.middle), task.path,
                                    task.line + 1, ctx.line_mode, stop, shown, task.middle))
        await service.close()
    return rows


# ---------------------------------------------------------------------------------------------------------------------
# Report


def summarise(rows: list[Row]) -> dict[str, Any]:
    """Shares of each outcome per (model, continuation), overall, per hole kind and per language."""
    groups: dict[tuple[str, ...], Counter] = defaultdict(Counter)
    for row in rows:
        for key in ((row.model, row.continuation, "all", "all"),
                    (row.model, row.continuation, "kind", row.kind),
                    (row.model, row.continuation, "language", row.language)):
            groups[key][row.outcome] += 1
    out: dict[str, Any] = {}
    for (model, cont, axis, value), counts in sorted(groups.items()):
        total = sum(counts.values())
        out.setdefault(model, {}).setdefault(cont, {}).setdefault(axis, {})[value] = {
            "tasks": total, **{o: round(100.0 * counts[o] / total, 1) for o in OUTCOMES}}
    return out


def table(summary: dict[str, Any]) -> str:
    lines = ["| model | continuation | group | tasks | right % | too long % | too short % | wrong % |",
             "|---|---|---|---|---|---|---|---|"]
    for model, by_cont in summary.items():
        for cont in CONTINUATIONS:
            axes = by_cont.get(cont, {})
            for axis in ("all", "kind", "language"):
                for value, cell in axes.get(axis, {}).items():
                    group = "all" if axis == "all" else value
                    lines.append(f"| {model} | {cont} | {group} | {cell['tasks']} | {cell['right']} | "
                                 f"{cell['too_long']} | {cell['too_short']} | {cell['wrong']} |")
    return "\n".join(lines)


@contextlib.contextmanager
def _ablation(name: str):
    """Swap one decision of the shipped pipeline for the run (the benchmark's own process only)."""
    import lsp_server.context as context
    from lsp_server.postprocess import line_mode

    saved = context.decide, line_mode.model_ended
    if name == "no-line-rule":
        context.decide = lambda *a: "block"  # type: ignore[assignment]
    elif name == "trust-all-ends":
        ended = saved[1]
        line_mode.model_ended = (  # type: ignore[assignment]
            lambda reason, word, sees, suffix: ended(reason, word, True, suffix))
    try:
        yield
    finally:
        context.decide, line_mode.model_ended = saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fetch", action="store_true", help="download the default packages first")
    parser.add_argument("--corpus", type=Path, default=CORPUS / "src", help="unpacked packages (default: %(default)s)")
    parser.add_argument("--language", action="append", choices=LANGUAGES, help="repeat for several (default: all)")
    parser.add_argument("--per-kind", type=int, default=60, help="tasks per hole kind and language (default 60)")
    parser.add_argument("--model", action="append", choices=MODELS, help="fim, prefix (default: both)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--smoke", action="store_true", help="a few tasks from this repository's own files")
    parser.add_argument("--output", type=Path, help="JSON file (default: bench/results/cut_simulation-<time>.json)")
    parser.add_argument("--ablation", choices=("none", "no-line-rule", "trust-all-ends"), default="none",
                        help="no-line-rule: line and statement situations are treated as blocks (no one-line or "
                             "one-statement cut); trust-all-ends: a prefix-only model's end is trusted as a FIM "
                             "model's is. Shows what the shipped rules are worth.")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.fetch:
        fetch()
    languages = args.language or (tuple(SMOKE_FILES) if args.smoke else LANGUAGES)
    tasks: dict[str, list[Task]] = {}
    pools: dict[str, list[str]] = {}
    for language in languages:
        if args.smoke:
            files = [REPO_ROOT / p for p in SMOKE_FILES.get(language, ())]
        else:
            roots = [p for p in sorted(args.corpus.glob("*")) if p.is_dir()] if args.corpus.is_dir() else []
            files = corpus_files(language, roots)
        if not files:
            raise SystemExit(f"no {language} files under {args.corpus}: run with --fetch first")
        tasks[language] = load_tasks(language, files, 3 if args.smoke else args.per_kind, args.seed)
        pools[language] = other_lines(language, files, args.seed)
    started = time.perf_counter()
    with _ablation(args.ablation):
        rows = asyncio.run(simulate(tasks, pools, args.seed, args.model or MODELS))
    summary = summarise(rows)
    output = args.output or RESULTS_DIR / f"cut_simulation-{time.strftime('%Y%m%d-%H%M%S')}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({
        "seed": args.seed, "smoke": args.smoke, "per_kind": args.per_kind, "ablation": args.ablation,
        "tasks": {language: len(t) for language, t in tasks.items()},
        "seconds": round(time.perf_counter() - started, 1),
        "summary": summary, "rows": [asdict(r) for r in rows]}, indent=1), encoding="utf-8")
    if not args.quiet:
        print(table(summary))
        print(f"\n{len(rows)} runs, {sum(len(t) for t in tasks.values())} tasks; JSON: {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
