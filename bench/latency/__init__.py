"""Latency and cost of single steps, each against a baseline or a target: a keystroke against file size, the LSP
path against a direct llama-server call, typing through a shown suggestion, the local and remote backends,
post-processing, the stop-word check, and workspace retrieval at scale. Timing benchmarks: run them alone on the
machine (`flock /tmp/infill-bench.lock python -m bench.latency.<module>`); each prints a table and writes
bench/results/<module>.json.

    python -m bench.latency.keystroke_cost       python -m bench.latency.lsp_overhead
    python -m bench.latency.lsp_typing_through   python -m bench.latency.local_backend
    python -m bench.latency.remote_overhead      python -m bench.latency.postprocess_speed
    python -m bench.latency.stop_condition       python -m bench.latency.context_retrieval"""
