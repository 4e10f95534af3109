"""A CrossCodeEval-style task set built from real packages installed from the registries.

Each task is one line of a package's file where the code at the cursor uses an identifier defined in ANOTHER file of
the same package and not mentioned earlier in the current file: the middle (reference) is the rest of that line
from the identifier on. The workspace is the package's folder, so the model can only get the identifier from
cross-file context (CrossCodeEval's construction, Ding et al. 2023, with tree-sitter tags instead of static analysis).

Packages (installed by `ensure_packages`, see docs/context.md):
- Python: pure-Python packages from PyPI already installed with Infill's dependencies (httpx, huggingface_hub,
  pygls, _pytest).
- JavaScript: npm `express@4` (and its dependencies' sources), `semver@7`, `lodash@4` (one module per function).
- TypeScript: npm `rxjs@7.8.2` (ships its TypeScript sources under src/).
- Go: Debian `golang-*-dev` packages (sources under /usr/share/gocode/src).
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from lsp_server.workspace.scan import EXTENSIONS, scan
from lsp_server.workspace.tags import definitions

NPM_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "infill-bench" / "crosscode-npm"
NPM_PACKAGES = ("express@4.21.2", "semver@7.6.3", "lodash@4.17.21", "rxjs@7.8.2")
DEBIAN_GO_PACKAGES = ("golang-github-spf13-cobra-dev", "golang-github-sirupsen-logrus-dev",
                      "golang-github-stretchr-testify-dev", "golang-github-google-go-cmp-dev",
                      "golang-github-gorilla-mux-dev", "golang-github-spf13-pflag-dev")
PYTHON_PACKAGES = ("httpx", "huggingface_hub", "pygls", "_pytest")
GO_ROOT = Path("/usr/share/gocode/src")
GO_PACKAGES = ("github.com/spf13/cobra", "github.com/sirupsen/logrus", "github.com/stretchr/testify",
               "github.com/google/go-cmp", "github.com/gorilla/mux", "github.com/spf13/pflag")
JS_PACKAGES = ("express", "body-parser", "send", "serve-static", "semver", "qs", "finalhandler", "iconv-lite",
               "negotiator", "http-errors", "debug", "mime-types", "raw-body", "path-to-regexp", "lodash")
TS_PACKAGES = ("rxjs/src",)

LANGUAGES = ("python", "javascript", "typescript", "go")
#: Short names are mostly locals or builtins that merely share a name with some definition elsewhere.
MIN_NAME = 6
#: A name defined in more files than this is ambiguous (`close`, `handler`): the usage may mean any of them.
MAX_DEFINING_FILES = 2
#: Builtins and keywords that tags queries report as definitions in some file (constructor, toString…).
NOT_CROSS_FILE = frozenset(dir(__import__("builtins"))) | frozenset("""
constructor toString valueOf hasOwnProperty require exports module prototype length arguments
append delete string float64 float32 uint64 int64 uint32 int32 interface struct return default
""".split())
MIN_MIDDLE, MAX_MIDDLE = 4, 100
PER_FILE = 2
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SKIP_LINE = re.compile(r"^\s*(import|from|package|export\s*[{*]|#|//|/\*|\*)|.*(require\(|\bfrom\s+['\"])")


@dataclass(frozen=True)
class CrossTask:
    language: str
    task_id: str
    root: str          # the workspace (the package folder)
    path: str          # the file of the task
    prefix: str
    suffix: str
    reference: str
    identifier: str
    #: Workspace-relative files defining the identifier (a snippet from one of them is a retrieval hit).
    defined_in: tuple[str, ...]


def ensure_packages(languages: Iterable[str]) -> list[str]:
    """Install the npm packages into the bench cache (npm registry) when a JavaScript or TypeScript set is asked for;
    report what else the asked-for languages miss."""
    languages = set(languages)
    problems = []
    npm_ready = all((NPM_DIR / "node_modules" / name.split("@")[0]).is_dir() for name in NPM_PACKAGES)
    if {"javascript", "typescript"} & languages and not npm_ready:
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(NPM_DIR),
                                 *NPM_PACKAGES], capture_output=True, text=True)
        if result.returncode != 0:
            problems.append(f"npm install failed: {result.stderr.strip()[-300:]}")
    if "go" in languages and not any((GO_ROOT / p).is_dir() for p in GO_PACKAGES):
        problems.append("no Go sources: apt-get install -y --no-install-recommends " + " ".join(DEBIAN_GO_PACKAGES))
    return problems


def package_roots(language: str) -> list[Path]:
    if language == "python":
        roots = []
        for name in PYTHON_PACKAGES:
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.submodule_search_locations:
                roots.append(Path(list(spec.submodule_search_locations)[0]))
        return roots
    if language == "go":
        return [GO_ROOT / p for p in GO_PACKAGES if (GO_ROOT / p).is_dir()]
    names = JS_PACKAGES if language == "javascript" else TS_PACKAGES
    return [NPM_DIR / "node_modules" / n for n in names if (NPM_DIR / "node_modules" / n).is_dir()]


def _language_files(root: Path, language: str) -> list[tuple[str, str, str]]:
    wanted = {ext for ext, lang in EXTENSIONS.items() if lang == language}
    out = []
    for file in scan([str(root)], max_files=3000, max_bytes=200_000, excluded=lambda p: False):
        if os.path.splitext(file.path)[1] in wanted and not file.label.endswith(".d.ts") \
                and ".min." not in file.label:
            out.append((file.path, file.label, file.text))
    return out


def _in_string_or_comment(before: str) -> bool:
    """A rough test (an odd count of a quote character, or a comment marker, before the identifier)."""
    return any(before.count(q) % 2 for q in ("'", '"', "`")) or "#" in before or "//" in before


_CODE_NODES = ("identifier", "property_identifier", "field_identifier", "type_identifier", "shorthand_property")


def _usage_at(tree, line: int, column: int, name: str, rest: str) -> bool:
    """An API use in code (not in a string or comment, not a parameter): a call, a member access or a type/class."""
    node = tree.root_node.descendant_for_point_range((line, column), (line, column + len(name)))
    if node is None or node.type not in _CODE_NODES:
        return False
    kinds = []
    parent = node.parent
    while parent is not None and len(kinds) < 3:
        kinds.append(parent.type)
        parent = parent.parent
    if any("parameter" in k or "comment" in k or "string" in k for k in kinds):
        return False
    after = rest[len(name):].lstrip()
    return after.startswith(("(", ".", "<", "{")) or name[0].isupper()


def _without_imports(prefix: str) -> str:
    return "\n".join(line for line in prefix.split("\n") if not _SKIP_LINE.match(line))


def package_tasks(root: Path, language: str, rng: random.Random) -> list[CrossTask]:
    from lsp_server.workspace.tags import _tagger

    tagger = _tagger(language)
    files = _language_files(root, language)
    defined: dict[str, set[str]] = {}
    for _, label, text in files:
        for d in definitions(text, language):
            defined.setdefault(d.name, set()).add(label)
    tasks: list[CrossTask] = []
    for path, label, text in files:
        candidates = []
        offset = 0
        tree = tagger[0].parse(text.encode("utf-8")) if tagger else None
        ascii_only = text.isascii()  # tree-sitter columns are bytes
        for number, line in enumerate(text.split("\n")):
            if number >= 3 and not _SKIP_LINE.match(line):
                for match in _IDENT.finditer(line):
                    name = match.group(0)
                    where = defined.get(name)
                    if len(name) < MIN_NAME or not where or label in where or len(where) > MAX_DEFINING_FILES \
                            or name in NOT_CROSS_FILE or _in_string_or_comment(line[:match.start()]):
                        continue
                    start = offset + match.start()
                    # CrossCodeEval keeps the imports: the name may be imported, but not used before the cursor.
                    if name in _without_imports(text[:start]):
                        continue
                    middle = line[match.start():].rstrip()
                    if tree is None or not ascii_only or not _usage_at(tree, number, match.start(), name, middle):
                        continue
                    if not MIN_MIDDLE <= len(middle) <= MAX_MIDDLE or not text[:start].strip():
                        continue
                    end = offset + len(line)
                    candidates.append(CrossTask(language, f"{root.name}/{label}:{number + 1}", str(root), path,
                                                text[:start], text[end:], middle, name, tuple(sorted(where))))
                    break  # one task per line
            offset += len(line) + 1
        rng.shuffle(candidates)
        tasks += candidates[:PER_FILE]
    return tasks


def load_tasks(language: str, count: int = 100, seed: int = 1234) -> list[CrossTask]:
    """`count` tasks of `language`, spread over its packages and files, the same ones run after run."""
    rng = random.Random(seed)
    pools = []
    for root in package_roots(language):
        tasks = package_tasks(root, language, rng)
        rng.shuffle(tasks)
        pools.append(tasks)
    chosen: list[CrossTask] = []
    while len(chosen) < count and any(pools):  # round robin: no package dominates
        for tasks in pools:
            if tasks and len(chosen) < count:
                chosen.append(tasks.pop())
    return sorted(chosen, key=lambda t: (t.root, t.path, len(t.prefix)))
