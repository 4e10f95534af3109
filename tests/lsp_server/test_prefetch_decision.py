"""Which completion endpoints get speculative prefetch by default (issue 25): self-hosted ones do, hosted vendor
APIs do not unless asked; the decision says why, in the status and in `infill/stats`."""

from __future__ import annotations

import pytest

from engine.config import EngineConfig, ModelConfig
from engine.types import StatusEvent
from lsp_server.config import ServerSettings, SpeculationSettings
from lsp_server.speculation import endpoint_locality, prefetch_decision
from lsp_server.status import StatusReporter


def settings(kind: str, endpoint: str | None = None, self_hosted: bool | None = None,
             **speculation) -> ServerSettings:
    return ServerSettings(engine=EngineConfig(completion=ModelConfig(kind=kind, api_endpoint=endpoint,
                                                                     self_hosted=self_hosted, model="m")),
                          speculation=SpeculationSettings(**speculation))


@pytest.mark.parametrize("endpoint, why", [
    ("http://127.0.0.1:8080/v1", "loopback address 127.0.0.1"),
    ("http://localhost:1234/v1", "local host name localhost"),
    ("http://[::1]:8000/v1", "loopback address ::1"),
    ("http://169.254.10.2:8000", "link-local address 169.254.10.2"),
    ("http://10.0.3.7:8000/v1", "private network address 10.0.3.7"),
    ("https://192.168.1.20/v1", "private network address 192.168.1.20"),
    ("http://172.20.0.5:11434", "private network address 172.20.0.5"),
    ("http://[fd00::5]:8000", "private network address fd00::5"),
    ("http://100.101.102.103:8000", "shared (CGNAT/VPN) address 100.101.102.103"),
    ("http://gpu-box.local:8000/v1", "local host name gpu-box.local"),
])
def test_openai_compatible_endpoints_on_this_machine_or_network_get_prefetch(endpoint: str, why: str):
    assert endpoint_locality(endpoint) == why
    decision = prefetch_decision(settings("openai/completion", endpoint))
    assert decision.enabled and decision.self_hosted
    assert why in decision.describe()


@pytest.mark.parametrize("kind, endpoint", [
    ("openai/completion", "https://api.openai.com/v1"),
    ("openai/completion", None),
    ("deepseek/completion", None),
    ("mistral/completion", "https://api.mistral.ai"),
    ("openai/completion", "http://8.8.8.8/v1"),
    ("openai/completion", "https://gpu-box.example.com/v1"),  # a name does not say where it is: not resolved
])
def test_hosted_vendor_apis_stay_off_unless_asked(kind: str, endpoint: str | None):
    decision = prefetch_decision(settings(kind, endpoint))
    assert not decision.enabled and not decision.self_hosted
    assert "speculation.prefetch_hosted = true" in decision.reason
    assert "completion.self_hosted = true" in decision.reason
    asked = prefetch_decision(settings(kind, endpoint, prefetch_hosted=True))
    assert asked.enabled and not asked.self_hosted


def test_the_user_marks_an_endpoint_self_hosted_or_not():
    marked = prefetch_decision(settings("openai/completion", "https://llm.team.example.com/v1", self_hosted=True))
    assert marked.enabled and marked.describe() == "prefetch on: completion.self_hosted = true"
    # a rented server on a private address that bills per request: the user says so and prefetch stays off
    unmarked = prefetch_decision(settings("openai/completion", "http://10.0.0.9/v1", self_hosted=False))
    assert not unmarked.enabled and unmarked.reason.startswith("completion.self_hosted = false")
    assert not prefetch_decision(settings("vllm/completion", "https://vllm.example.com", self_hosted=False)).enabled


def test_own_and_self_hosted_kinds_and_the_master_switch():
    assert prefetch_decision(settings("local")).describe() == "prefetch on: Infill's own llama-server"
    assert prefetch_decision(settings("llama.cpp/infill", "https://llm.example.com")).enabled
    assert prefetch_decision(settings("ollama/completion")).enabled
    off = prefetch_decision(settings("openai/completion", "http://127.0.0.1:8080/v1", prefetch=False))
    assert not off.enabled and off.reason == "speculation.prefetch = false"


def test_the_ready_status_says_what_was_decided():
    sent: list[tuple[str, dict]] = []
    decision = prefetch_decision(settings("openai/completion", "http://127.0.0.1:8080/v1"))
    reporter = StatusReporter(lambda method, params: sent.append((method, params)),
                              ready_note=decision.describe)
    reporter.on_engine_status(StatusEvent("starting", "Starting"))
    reporter.on_engine_status(StatusEvent("ready", "Infill is ready"))
    assert sent[-1][1] == {"kind": "ready", "message": "Infill is ready",
                           "detail": "prefetch on: the openai/completion endpoint is self-hosted "
                                     "(loopback address 127.0.0.1)"}
    assert "detail" not in sent[0][1]
