"""Smoke test of bench/replay/several_editors.py: one and two editors (`infill serve` processes) with the tiny
model, sharing one llama-server and not. Counts, never timings: with `share = true` two editors run exactly one
llama-server (the second editor uses the first's), with `share = false` two; every request is answered and no
llama-server is left running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.replay import several_editors


@pytest.mark.llama_server
def test_two_editors_with_and_without_sharing(llama_server_binary: str, tiny_model: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "several.json"
    assert several_editors.main(["--model", str(tiny_model), "--binary", llama_server_binary, "--editors", "1", "2",
                                 "--max-keystrokes", "6", "--output", str(output), "--quiet"]) == 0
    report = json.loads(output.read_text())
    cells = report["cells"]
    assert set(cells) == {"one-typing/1/share", "one-typing/1/no-share", "one-typing/2/share",
                          "one-typing/2/no-share"}
    expected_servers = {"one-typing/1/share": 1, "one-typing/1/no-share": 1, "one-typing/2/share": 1,
                        "one-typing/2/no-share": 2}
    for key, cell in cells.items():
        pooled = cell["pooled"]
        (run,) = cell["runs"]
        assert pooled["llama_servers_all_up"] == [expected_servers[key]], key
        assert pooled["llama_servers_max"] == expected_servers[key], key
        assert pooled["llama_servers_left"] == 0 and run["llama_servers_left"] == []
        assert run["memory"]["samples"] > 0 and pooled["llama_rss_peak_mb"] > 0 and pooled["llama_pss_peak_mb"] > 0
        assert pooled["editors_rss_peak_mb"] > 0
        assert len(run["editors"]) == cell["editors_n"]
        assert all(e["ready_ms"] is not None and e["ready_ms"] > 0 for e in run["editors"])
        assert len(pooled["later_ready_ms"]) == cell["editors_n"] - 1
        # editor 1 types, the other is an idle window on another file
        assert [e["typing"] for e in run["editors"]] == [True, False][:cell["editors_n"]]
        assert len({e["file"] for e in run["editors"]}) == cell["editors_n"]
        assert pooled["typing_editors"] == 1 and pooled["requests"] > 0 and pooled["answered_share"] == 100.0
        assert pooled["model_calls"] > 0
        assert len(run["loadavg_start"]) == 3 and len(run["loadavg_end"]) == 3
    first, second = cells["one-typing/2/share"]["runs"][0]["editors"]
    assert (first["role"], second["role"]) == ("owner", "attached")
    assert f"using the llama-server started by Infill process {first['pid']}" in second["ready_detail"]
    assert [e["role"] for e in cells["one-typing/2/no-share"]["runs"][0]["editors"]] == ["own", "own"]
    out = capsys.readouterr().out
    assert "| one-typing | 2 | on | 1 |" in out and "| one-typing | 2 | off | 2 |" in out


def test_a_llama_server_is_told_by_its_model(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"")
    assert several_editors.is_llama_server_of(["/x/bin/llama-server", "-m", str(model), "--port", "1"], model)
    assert not several_editors.is_llama_server_of(["/x/bin/llama-server", "-m", str(tmp_path / "o.gguf")], model)
    assert not several_editors.is_llama_server_of(["python", "-m", str(model)], model)
    assert not several_editors.is_llama_server_of([], model)


def test_roles_from_the_ready_detail() -> None:
    assert several_editors.role("this process runs the model server (llama-server pid 1) for every …") == "owner"
    assert several_editors.role("using the llama-server started by Infill process 42\nprefetch on") == "attached"
    assert several_editors.role("prefetch on: Infill's own llama-server") == "own"
