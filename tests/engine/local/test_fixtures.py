"""The shared fixtures themselves: other engineers' tests build on them."""

import hashlib

import httpx

from tests.fixtures.tiny_model import FIM_TOKENS, build_tiny_model


def test_tiny_model_is_deterministic(tiny_model, tmp_path):
    again = build_tiny_model(tmp_path / "again.gguf")
    assert hashlib.sha256(again.read_bytes()).digest() == hashlib.sha256(tiny_model.read_bytes()).digest()
    assert 5_000_000 < tiny_model.stat().st_size < 20_000_000


def test_tiny_model_has_fim_tokens(llama_server):
    """llama-server sees the renamed tokens and accepts /infill (it answers 501 without FIM token ids)."""
    with httpx.Client(trust_env=False) as client:
        for name, token_id in FIM_TOKENS.items():
            assert client.post(f"{llama_server}/detokenize", json={"tokens": [token_id]}).json()["content"] == name
        reply = client.post(f"{llama_server}/infill", json={"input_prefix": "a", "input_suffix": "b", "n_predict": 2})
    assert reply.status_code == 200 and reply.json()["tokens_predicted"] == 2


def test_llama_server_fixture_is_healthy(llama_server):
    assert llama_server.startswith("http://127.0.0.1:")
    with httpx.Client(trust_env=False) as client:
        assert client.get(f"{llama_server}/health").json() == {"status": "ok"}
        assert client.get(f"{llama_server}/props").json()["total_slots"] == 2
