"""How each kind's server answers, as the vendors document it, for the loopback fakes.

- OpenAI completions / chat / embeddings: https://platform.openai.com/docs/api-reference (stream chunks `data: {...}`,
  ending with `data: [DONE]`)
- Mistral FIM / chat / embeddings: https://docs.mistral.ai/api/ (FIM stream chunks are chat-completion chunks)
- Azure OpenAI: https://learn.microsoft.com/azure/ai-services/openai/reference (OpenAI bodies, deployment URLs,
  `api-key` header)
- Ollama: https://github.com/ollama/ollama/blob/main/docs/api.md (NDJSON; last object has `done: true`)
- Voyage: https://docs.voyageai.com/reference/embeddings-api
- llama.cpp server: https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md (`/completion` and
  `/infill` stream `data: {"content": ..., "stop": false}` events, no `[DONE]`)"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

SSE = "text/event-stream"
NDJSON = "application/x-ndjson"


def sse(obj) -> str:
    return f"data: {json.dumps(obj)}\n\n"


def openai_text(t: str) -> str:
    return sse({"id": "cmpl-1", "object": "text_completion", "choices": [{"text": t, "index": 0,
                                                                          "finish_reason": None}]})


def openai_text_end() -> str:
    return sse({"id": "cmpl-1", "object": "text_completion",
                "choices": [{"text": "", "index": 0, "finish_reason": "length"}]}) + "data: [DONE]\n\n"


def chat_delta(t: str) -> str:
    return sse({"id": "c1", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": t}, "finish_reason": None}]})


def chat_end() -> str:
    return sse({"id": "c1", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}) + "data: [DONE]\n\n"


def llama_content(t: str) -> str:
    return sse({"index": 0, "content": t, "tokens": [1], "stop": False, "id_slot": 0, "tokens_predicted": 1})


def llama_end() -> str:
    return sse({"index": 0, "content": "", "stop": True, "stop_type": "limit", "tokens_predicted": 2,
                "tokens_evaluated": 5, "truncated": False,
                "timings": {"prompt_n": 5, "predicted_n": 2, "predicted_per_second": 10.0}})


def ollama_gen(t: str) -> str:
    return json.dumps({"model": "m", "created_at": "2024-01-01T00:00:00Z", "response": t, "done": False}) + "\n"


def ollama_gen_end() -> str:
    return json.dumps({"model": "m", "created_at": "2024-01-01T00:00:00Z", "response": "", "done": True,
                       "done_reason": "length", "prompt_eval_count": 5, "eval_count": 2,
                       "total_duration": 1000}) + "\n"


def ollama_chat(t: str) -> str:
    return json.dumps({"model": "m", "created_at": "2024-01-01T00:00:00Z",
                       "message": {"role": "assistant", "content": t}, "done": False}) + "\n"


def ollama_chat_end() -> str:
    return json.dumps({"model": "m", "created_at": "2024-01-01T00:00:00Z",
                       "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "length"}) + "\n"


@dataclass(frozen=True)
class StreamFormat:
    content_type: str
    token: Callable[[str], str]
    end: Callable[[], str]
    malformed: str


OPENAI_TEXT = StreamFormat(SSE, openai_text, openai_text_end, "data: {\"choices\": [{\"text\": \"x\"\n\n")
CHAT = StreamFormat(SSE, chat_delta, chat_end, "data: {oops not json}\n\n")
LLAMA = StreamFormat(SSE, llama_content, llama_end, "data: {\"content\": \"x\", \"stop\": fal\n\n")
OLLAMA_GEN = StreamFormat(NDJSON, ollama_gen, ollama_gen_end, "{\"response\": \"x\", \"done\"\n")
OLLAMA_CHAT = StreamFormat(NDJSON, ollama_chat, ollama_chat_end, "{\"message\": {]\n")


def openai_embedding_body(vector: list[float]) -> dict:
    return {"object": "list", "data": [{"object": "embedding", "embedding": vector, "index": 0}],
            "model": "m", "usage": {"prompt_tokens": 3, "total_tokens": 3}}


def ollama_embedding_body(vector: list[float]) -> dict:
    return {"model": "m", "embeddings": [vector], "total_duration": 10, "prompt_eval_count": 3}
