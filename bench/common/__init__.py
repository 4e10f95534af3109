"""Helpers the benchmark groups share, no benchmark of their own: `lsp_support` (a llama-server with the tiny model
and an LSP client driving `infill serve --stdio` over pipes), `paths` (repository root, bench/results/, writing a
report there), `packages` (registry packages as corpora: downloaded with pip, npm or apt-get and unpacked), `stats`
(percentiles and plain-text tables) and `plots`, which draws docs/benchmarks-*.png from benchmark JSON:

    python -m bench.common.plots            # the newest full quality and typing-replay results"""
