"""The VS Code extension's checks, reported through pytest.

- its TypeScript compiles under `strict` (`npm run compile`);
- its Node tests pass (`node --test`): the pure parts, and the real `infill serve --stdio` driven over
  vscode-languageserver-protocol + vscode-jsonrpc (the stack vscode-languageclient is built on) with the tiny model;
- every server setting the extension contributes in package.json exists in the server's typed configuration.

Skips only when node/npm or the installed node packages are missing (`bash scripts/editors.sh` installs them)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import types
import typing
from pathlib import Path

import pytest

from engine.config import EngineConfig
from lsp_server.config import ServerSettings

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
PACKAGE = json.loads((EXTENSION / "package.json").read_text())
#: Settings that configure the extension itself and are never sent to the server (see src/settings.ts).
CLIENT_ONLY = ("server", "trace", "editor")  # `infill.editor.*`: the extension's own (e.g. sendCopies)


@pytest.fixture(scope="module")
def node_project() -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed (Node 20+ is needed for the VS Code extension's tests)")
    if not (EXTENSION / "node_modules" / "vscode-languageserver-protocol").is_dir():
        pytest.skip("the extension's node packages are not installed: run bash scripts/editors.sh")
    if compiled_output_is_stale(EXTENSION):
        result = subprocess.run([npm, "run", "--silent", "compile"], cwd=EXTENSION, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, f"npm run compile failed (strict TypeScript):\n{result.stdout}{result.stderr}"
    return EXTENSION


def compiled_output_is_stale(project: Path) -> bool:
    """Whether `out/` is missing or older than a TypeScript source or the compiler settings.

    scripts/editors.sh compiles once (tsc takes tens of seconds on a busy 2-core machine); the tests recompile only
    when a source changed since, so they always run the current code."""
    for source in [*project.glob("src/**/*.ts"), *project.glob("test/**/*.ts")]:
        target = project / "out" / source.relative_to(project).with_suffix(".js")
        if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
            return True
    newest_config = max((project / name).stat().st_mtime for name in ("tsconfig.json", "package-lock.json"))
    outputs = list((project / "out").rglob("*.js"))
    return not outputs or min(p.stat().st_mtime for p in outputs) < newest_config


def run_node_tests(files: list[str], env: dict[str, str]) -> str:
    result = subprocess.run(["node", "--test", "--test-reporter=tap", *files], cwd=EXTENSION, env=env,
                            capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"node --test failed:\n{output[-8000:]}"
    return output


def tap_count(output: str, name: str) -> int:
    match = re.search(rf"^# {name} (\d+)$", output, re.MULTILINE)
    assert match, f"no '# {name}' line in the node test output:\n{output[-4000:]}"
    return int(match.group(1))


def test_extension_unit_tests(node_project: Path) -> None:
    output = run_node_tests(["out/test/unit.test.js"], dict(os.environ))
    assert tap_count(output, "fail") == 0
    assert tap_count(output, "pass") >= 12


def test_real_server_through_vscode_protocol_stack(node_project: Path, tiny_model: Path, llama_server_binary: str,
                                                   tmp_path: Path) -> None:
    settings = {"completion": {"kind": "local", "model": str(tiny_model), "local": {"binary": llama_server_binary}}}
    env = {
        **os.environ,
        "INFILL_SERVER_COMMAND": json.dumps([sys.executable, "-m", "lsp_server", "serve", "--stdio"]),
        "INFILL_TEST_SETTINGS": json.dumps(settings),
        "INFILL_TEST_CWD": str(REPO),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "TMPDIR": str(tmp_path),
    }
    output = run_node_tests(["out/test/server.test.js"], env)
    assert tap_count(output, "fail") == 0
    assert tap_count(output, "skipped") == 0, output[-4000:]
    assert tap_count(output, "pass") >= 6


# --- package.json mirrors the server's configuration ------------------------------------------------------------


def _snake(name: str) -> str:
    return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), name)


def _field_type(cls: type, name: str) -> typing.Any:
    hints = typing.get_type_hints(cls)
    if name not in hints:
        return None
    tp = hints[name]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        tp = args[0] if len(args) == 1 else tp
    return tp


def _resolve(path: list[str]) -> typing.Any:
    """The type a dotted server setting path points at, or None when the server has no such setting."""
    head = _snake(path[0])
    engine_keys = {f.name for f in dataclasses.fields(EngineConfig)}
    cls: typing.Any = EngineConfig if head in engine_keys else ServerSettings
    for part in path:
        if not dataclasses.is_dataclass(cls):
            return None
        cls = _field_type(cls, _snake(part))
        if cls is None:
            return None
    return cls


def test_contributed_settings_exist_in_the_server_configuration() -> None:
    properties = PACKAGE["contributes"]["configuration"]["properties"]
    server_keys = [key for key in properties if key.split(".")[1] not in CLIENT_ONLY]
    assert len(server_keys) >= 10
    missing = [key for key in server_keys if _resolve(key.split(".")[1:]) is None]
    assert not missing, f"package.json contributes settings the server does not have: {missing}"
    # The list: backend kind, endpoint, model, API-key variable, max tokens, debounce, multi-line policy,
    # excluded files, log level.
    for key in ("infill.completion.kind", "infill.completion.apiEndpoint", "infill.completion.model",
                "infill.completion.apiKeyEnv", "infill.maxTokens", "infill.debounce.mode", "infill.multiline",
                "infill.exclude", "infill.logLevel"):
        assert key in properties, key


def test_contributed_enums_match_the_server_literals() -> None:
    properties = PACKAGE["contributes"]["configuration"]["properties"]
    for key, schema in properties.items():
        if "enum" not in schema or key.split(".")[1] in CLIENT_ONLY:
            continue
        tp = _resolve(key.split(".")[1:])
        if typing.get_origin(tp) is typing.Literal:
            assert sorted(schema["enum"]) == sorted(typing.get_args(tp)), key


def test_commands_and_keybindings_are_declared() -> None:
    commands = {c["command"] for c in PACKAGE["contributes"]["commands"]}
    for required in ("infill.enable", "infill.disable", "infill.restartServer", "infill.showLog",
                     "infill.triggerCompletion", "infill.acceptNextWord", "infill.acceptNextLine"):
        assert required in commands
    source = (EXTENSION / "src" / "extension.ts").read_text()
    for command in commands:  # the registration itself: the name also stands in menus and the status item
        assert f"register('{command}'" in source, f"{command} is declared in package.json but not registered"
    for binding in PACKAGE["contributes"]["keybindings"]:
        assert binding["command"] in commands


def _server_default(path: list[str]) -> typing.Any:
    """The server's default of a dotted setting path (a nested dataclass's own default for inner keys)."""
    head = _snake(path[0])
    value: typing.Any = EngineConfig() if head in {f.name for f in dataclasses.fields(EngineConfig)} \
        else ServerSettings()
    for part in path:
        value = getattr(value, _snake(part))
    return list(value) if isinstance(value, tuple) else value


def test_contributed_defaults_are_the_server_defaults() -> None:
    properties = PACKAGE["contributes"]["configuration"]["properties"]
    for key, schema in properties.items():
        if key.split(".")[1] not in CLIENT_ONLY:
            assert schema.get("default") == _server_default(key.split(".")[1:]), key


def _documented_vscode_settings() -> dict[str, str]:
    """docs/editors.md, "## VS Code" → "### Settings": each setting of its tables → its Default cell. A row may
    name siblings (`infill.a.b` / `c` / `d`, defaults `1 / 2 / 3`)."""
    text = (REPO / "docs" / "editors.md").read_text()
    section = text[text.index("## VS Code"):text.index("## Neovim")]
    section = section[section.index("### Settings"):section.index("### Commands and keys")]
    out: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split(" | ")] if line.startswith("| `") else []
        if not cells:
            continue
        names = re.findall(r"`([\w.]+)`", cells[0])
        defaults = cells[1].split(" / ") if len(names) > 1 else [cells[1]]
        for i, name in enumerate(names):
            full = name if name.startswith("infill.") else f"{names[0].rsplit('.', 1)[0]}.{name}"
            out[full] = defaults[min(i, len(defaults) - 1)].strip("`")
    return out


def test_every_contributed_setting_is_in_the_editors_doc_with_its_default() -> None:
    documented = _documented_vscode_settings()
    properties = PACKAGE["contributes"]["configuration"]["properties"]
    missing = sorted(set(properties) - set(documented))
    assert not missing, f"docs/editors.md's VS Code settings tables lack {missing}"
    assert sorted(set(documented) - set(properties)) == [], "docs/editors.md lists settings package.json lacks"
    for key, schema in properties.items():
        default = schema.get("default")
        shown = "—" if default is None else json.dumps(default, separators=(", ", ": ")).strip('"')
        assert documented[key] == shown, f"{key}: docs/editors.md says {documented[key]}, package.json {shown}"
