"""Seeded LSP fuzzing in CI: ~1,000 random actions per position encoding against the recording, misbehaving loopback
backend, with the prompt oracle (the package bench/reliability/lsp_fuzz/ has the harness, the oracle and the long
mode). Every problem the run counted fails the test with its figures; the seed makes a failure reproducible:
`python3 -m bench.reliability.lsp_fuzz --actions 1000 --seeds 11 --check`."""

from __future__ import annotations

import pytest

from bench.reliability.lsp_fuzz import Fuzz, problems

SEED = 11


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
async def test_fuzz(encoding: str, tmp_path):
    report = await Fuzz(SEED, encoding, actions=1000, big_size=300_000, workdir=tmp_path).run()
    assert report["requests"] > 300 and report["backend_calls"] > 100  # the run did exercise the server
    assert report["suffix_sent"] == report["backend_calls"]
    # The oracle saw every kind's protocol and prompts with a context block (issue 27: none lost its prefix).
    assert set(report["protocols"]) >= {"openai", "completion", "infill"} and report["with_context"] > 0
    assert report["model_requests"] == report["backend_calls"] and report["empty_prefix"] == 0
    assert report["counts"].get("bad_setting", 0) > 0 and report["counts"].get("malformed", 0) > 0
    # next-edit traffic: renames to propagate, requests (some outdated, cancelled or malformed), show and accept
    assert min(report["counts"].get(k, 0) for k in ("next_edit_rename", "next_edit_request",
                                                     "next_edit_notification")) > 0
    assert problems(report, rss_limit_mb=400) == [], report
