"""Shared fixtures. The tiny model and the llama-server fixtures are session-scoped (see tests/fixtures)."""

from __future__ import annotations

import os
import tempfile
from typing import Iterator

import pytest

pytest_plugins = ["tests.fixtures.llama"]


def pytest_configure(config: pytest.Config) -> None:
    """Infill processes on one machine share their llama-server through a run directory (engine/local/shared.py).
    The tests never use the user's: fixtures wider than one test (started before `_own_run_dir`) get one for the
    session, and every test its own below, so that no two tests share a server unless they mean to."""
    os.environ["INFILL_RUN_DIR"] = tempfile.mkdtemp(prefix="infill-test-run-")


@pytest.fixture(autouse=True)
def _own_run_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A run directory for this test alone (servers it starts in-process or as `infill serve` children inherit it)."""
    monkeypatch.setenv("INFILL_RUN_DIR", str(tmp_path_factory.mktemp("run")))
    yield
