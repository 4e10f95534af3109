"""Reliability: the server keeps answering and stays small whatever the editor and the model do. Seeded fuzzing with
invalid traffic and a misbehaving model server (every request answered, documents in sync, no secret sent), resident
memory after many requests, and how soon a superseded generation stops on llama-server.

    python -m bench.reliability.lsp_fuzz --actions 10000 --seeds 1 2 3 --check
    python -m bench.reliability.lsp_memory [--requests 1000]
    python -m bench.reliability.lsp_cancellation [--rounds 20]"""
