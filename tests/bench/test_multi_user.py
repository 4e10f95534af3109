"""Smoke test of bench/replay/multi_user.py: two users through their own servers on one shared llama-server
(tiny model); every request answered, the server sampled, the table and JSON written."""

from __future__ import annotations

import json

import pytest

from bench.replay import multi_user


@pytest.mark.llama_server
def test_two_users_share_one_server(llama_server_binary, tmp_path, capsys):
    output = tmp_path / "multi.json"
    assert multi_user.main(["--smoke", "--users", "2", "--variant", "ours", "--max-keystrokes", "6", "--repeat", "2",
                            "--binary", llama_server_binary, "--output", str(output), "--quiet"]) == 0
    report = json.loads(output.read_text())
    cell = report["cells"]["2/ours"]
    assert cell["kind"] == "llama.cpp/infill" and cell["parallel"] == 2
    # two runs pooled: each user twice, the server's samples of both
    assert cell["runs"] == 2
    assert [u["file"] for u in cell["per_user"]] == ["editor_extension.ts", "event_queue.js"] * 2
    assert all(u["answered_share"] == 100.0 for u in cell["per_user"])
    assert cell["server"]["slots"] == 2 and cell["server"]["samples"] > 0
    assert cell["overall"]["model_calls"] > 0
    # the demand per user and minute, what carries over to a GPU's capacity on paper
    assert cell["overall"]["calls_per_user_minute"] > 0 and cell["overall"]["prompt_tokens_per_user_minute"] > 0
    assert "2" in report["targets"]["per_n"]
    out = capsys.readouterr().out
    assert "| 2 | ours |" in out and "Per user and minute of typing" in out


def test_p95_against_a_variant_that_showed_nothing():
    """A p95 over no shown suggestion is no figure: the users of that variant never got one."""
    assert multi_user.p95_not_worse(480.0, None) is True
    assert multi_user.p95_not_worse(None, None) is None
    assert multi_user.p95_not_worse(None, 900.0) is False
    assert multi_user.p95_not_worse(700.0, 950.0) is True and multi_user.p95_not_worse(1000.0, 950.0) is False


def test_pooled_server_samples_add_up():
    a = multi_user.ServerSamples(slots=4, samples=10, busy_sum=20, deferred_samples=2, deferred_max=3,
                                 deferred_behind_guess=1, behind_guess_detail=[{"deferred": 1}])
    b = multi_user.ServerSamples(slots=4, samples=30, busy_sum=40, deferred_samples=0, deferred_max=1)
    a.add(b)
    summary = a.summary()
    assert (summary["samples"], summary["deferred_max"], summary["deferred_behind_guess_samples"]) == (40, 3, 1)
    assert summary["occupancy_share"] == 100.0 * 60 / (40 * 4) and summary["deferred_share"] == 5.0
    assert summary["behind_guess_detail"] == [{"deferred": 1}]
