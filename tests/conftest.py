"""Shared fixtures. The tiny model and the llama-server fixtures are session-scoped (see tests/fixtures)."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Iterator

import pytest

pytest_plugins = ["tests.fixtures.llama"]


def pytest_configure(config: pytest.Config) -> None:
    """Infill processes on one machine share their llama-server through a run directory (engine/local/shared.py).
    The tests never use the user's: fixtures wider than one test (started before `_own_run_dir`) get one for the
    session, and every test its own below, so that no two tests share a server unless they mean to.

    The servers' homes (tests/e2e/lsp_support.py) go under the same scratch directory, which a passing session
    removes: a suite run left some 60 directories in /tmp before. A session with a failed test (or stopped by the
    user) keeps it for its logs."""
    scratch = tempfile.mkdtemp(prefix="infill-tests-")
    os.environ["INFILL_TEST_SCRATCH"] = scratch
    os.environ["INFILL_RUN_DIR"] = os.path.join(scratch, "run")
    os.mkdir(os.environ["INFILL_RUN_DIR"])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    scratch = os.environ.get("INFILL_TEST_SCRATCH")
    if scratch and exitstatus not in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED):
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(autouse=True)
def _own_run_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A run directory for this test alone (servers it starts in-process or as `infill serve` children inherit it)."""
    monkeypatch.setenv("INFILL_RUN_DIR", str(tmp_path_factory.mktemp("run")))
    yield
