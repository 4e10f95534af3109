"""`infill complete --quiet`: nothing on stderr but errors, also the warnings logged while the model starts."""

from __future__ import annotations

import logging

from lsp_server.commands.complete import only_errors_logged


def test_quiet_keeps_warnings_out_and_errors_in(caplog):
    engine = logging.getLogger("engine.models")
    before = logging.getLogger("engine").level
    with only_errors_logged():
        engine.warning("the model has no FIM tokens")
        engine.error("llama-server could not start")
    engine.warning("a warning after the command")
    assert logging.getLogger("engine").level == before  # the levels are given back
    assert [r.getMessage() for r in caplog.records] == ["llama-server could not start", "a warning after the command"]
