"""The memory probe (lsp_server/memory_probe.py): off without INFILL_TRACEMALLOC, and with it a report that shows
what grew since the baseline."""

from __future__ import annotations

import tracemalloc

from lsp_server import memory_probe
from lsp_server.server import build_server


def test_no_probe_and_no_tracing_without_the_variable(monkeypatch):
    monkeypatch.delenv(memory_probe.ENV, raising=False)
    server = build_server()
    assert memory_probe.METHOD not in server.protocol.fm.features
    assert not tracemalloc.is_tracing()


def test_the_report_names_what_grew_since_the_baseline():
    probe = memory_probe.MemoryProbe(4)
    try:
        probe.report()  # the baseline
        kept = [f"grown-{i}" * 20 for i in range(20_000)]  # about 3 MB allocated here
        report = probe.report(top=5)
        assert report["traced_bytes"] > 2 * 2 ** 20 and report["rss_bytes"] > 0
        top = report["growth"][0]
        assert top["bytes"] > 2 * 2 ** 20 and any("test_memory_probe.py" in where for where in top["where"]), top
        assert report["types"]["dict"] > 0
        assert report["malloc"] is None or report["malloc"]["in_use_bytes"] > 0  # None: not glibc
        assert kept
        again = probe.report(top=5, reset=True)
        assert again["growth"][0]["bytes"] > 2 * 2 ** 20  # compared with the old baseline, then reset
        after = probe.report(top=5)["growth"][0]
        assert after["bytes"] < 2 ** 20, after
    finally:
        tracemalloc.stop()
