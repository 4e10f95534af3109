"""The `infill` command: version, help, and `infill languages`."""

from __future__ import annotations

import json
import re
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from engine import __version__
from engine.languages import default_stop_words, default_table
from lsp_server.cli import main
from lsp_server.commands.complete import only_errors_logged

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    """The user's own settings file must not change what these tests see."""
    monkeypatch.setenv("INFILL_CONFIG", str(tmp_path / "absent.toml"))


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"infill {__version__}"


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    for command in ("serve", "complete", "doctor", "models", "languages"):
        assert command in out


def test_languages_prints_the_table(capsys):
    assert main(["languages"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["language", "language", "ids", "aliases", "comment", "stop", "words"]
    rows = {line.split()[0]: line for line in lines[2:-1]}
    assert set(rows) == {language.name for language in default_table()}
    python = default_table().lookup("python")
    cells = rows["python"].split()
    assert cells[-2:] == ["#", str(len(python.stop_words()))]
    assert "py," in rows["python"] and "python3" in rows["python"]
    assert "typescriptreact" in rows["typescript"]


def test_languages_json(capsys):
    assert main(["languages", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_name = {row["name"]: row for row in rows}
    assert by_name["rust"]["line_comment"] == "//"
    assert by_name["rust"]["stop_words"] == len(default_table().lookup("rust").stop_words())


def test_languages_stop_words_of_one_language(capsys):
    assert main(["languages", "--stop-words", "go", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["known"] and "\nfunc" in data["stop_words"] and "<|endoftext|>" in data["stop_words"]
    assert main(["languages", "--stop-words", "no-such-language"]) == 0
    out = capsys.readouterr().out
    assert "unknown: single-line" in out and '"\\n"' in out


def test_runs_as_a_module():
    result = subprocess.run([sys.executable, "-m", "lsp_server", "languages"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "python" in result.stdout


def test_languages_applies_the_settings_file(tmp_path, capsys):
    config = tmp_path / "config.toml"
    config.write_text('[languages.mylang]\nline_comment = "//"\ntop_level_keywords = ["fn", "pub"]\n'
                      '[languages.python]\nextra_stop_words = ["\\nif __name__"]\n')
    assert main(["languages", "--config", str(config)]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[2:-1]}
    assert rows["mylang"][-2:] == ["//", str(len(default_stop_words()) + 3)]  # defaults, "\n//", "\nfn", "\npub"
    python_words = len(default_table().lookup("python").stop_words())
    assert rows["python"][-1] == str(python_words + 1)


def test_languages_reports_a_bad_settings_file(tmp_path, capsys):
    config = tmp_path / "config.toml"
    config.write_text('[languages.mylang]\nline_comment = 3\n')
    assert main(["languages", "--config", str(config)]) == 2
    assert "languages.mylang.line_comment" in capsys.readouterr().err
    assert main(["languages", "--config", str(tmp_path / "missing.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("command", [
    ["models"],
    ["models", "download", "acme/coder:c.gguf"],
    ["doctor", "--binary", "/nonexistent/llama-server"],
    ["complete", "{source}:1:1", "--kind", "llama.cpp/infill", "--endpoint", "http://127.0.0.1:9"],
    ["languages"],
])
def test_every_command_rejects_a_settings_file_that_does_not_exist(command, tmp_path, capsys):
    # A typo in --config ran `infill models`, `doctor` and `complete` silently with the defaults.
    source = tmp_path / "a.py"
    source.write_text("x = 1\n")
    missing = tmp_path / "missing.toml"
    name, *rest = [arg.format(source=source) for arg in command]
    assert main([name, "--config", str(missing), *rest]) != 0
    captured = capsys.readouterr()
    assert f"{missing}: the settings file does not exist" in captured.out + captured.err


def test_the_config_help_names_where_the_file_is_read_from():
    from lsp_server.cli import COMMANDS, build_parser
    from lsp_server.commands import CONFIG_HELP
    from lsp_server.config import config_file_path

    assert config_file_path({"INFILL_CONFIG": "/a/b.toml"}) == Path("/a/b.toml")
    assert config_file_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/infill/config.toml")
    assert config_file_path({}) == Path("~/.config/infill/config.toml").expanduser()
    for name in ("$INFILL_CONFIG", "$XDG_CONFIG_HOME/infill/config.toml", "~/.config/infill/config.toml"):
        assert name in CONFIG_HELP
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    helps = {name: next((a.help for a in commands[name]._actions if "--config" in a.option_strings), None)
             for name in COMMANDS if name != "serve"}
    assert all(help_text and help_text.startswith(CONFIG_HELP) for help_text in helps.values()), helps


def test_complete_quiet_keeps_warnings_out_and_errors_in(caplog):
    # `infill complete --quiet`: the default model's prefix-only warning came with every run
    engine = logging.getLogger("engine.models")
    before = logging.getLogger("engine").level
    with only_errors_logged():
        engine.warning("the model has no FIM tokens")
        engine.error("llama-server could not start")
    engine.warning("a warning after the command")
    assert logging.getLogger("engine").level == before  # the levels are given back
    assert [r.getMessage() for r in caplog.records] == ["llama-server could not start", "a warning after the command"]


def _options(parser) -> dict[str, set[str]]:
    """Each subcommand (and `models download`) → its option strings."""
    import argparse

    out: dict[str, set[str]] = {}

    def walk(p: argparse.ArgumentParser, name: str) -> None:
        out[name] = {s for action in p._actions for s in action.option_strings}
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    walk(sub, f"{name} {sub_name}".strip())

    walk(parser, "")
    return out


def test_the_readme_lists_every_command_and_the_docs_use_only_real_options():
    from lsp_server.cli import COMMANDS, build_parser

    readme = (ROOT / "README.md").read_text()
    using = readme[readme.index("## Using it"):readme.index("## Configuration")]
    assert set(re.findall(r"^infill (\w+)", using, re.M)) == set(COMMANDS)
    options = _options(build_parser())
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line in doc.read_text().splitlines():
            for match in re.finditer(r"\binfill ((?:models )?(?:download|list)|\w+)((?: +[^\s`|#]+)*)", line):
                command = match.group(1).strip()
                if command.split()[0] not in COMMANDS:
                    continue
                for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", match.group(2)):
                    assert flag in options[command] | options[""], f"{doc.name}: infill {command} has no {flag}"
