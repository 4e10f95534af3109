"""Infill's benchmarks, grouped by what they measure. Each benchmark is a command that prints a table and writes JSON
under bench/results/; run them from the repository root with `python -m bench.<group>.<module>` (`--help` lists the
options). docs/benchmarks.md has today's figures and the full command table.

- bench.replay: typing replays, a simulated user typing real files through the language server;
- bench.quality: completion quality (HumanEval / SantaCoder infilling, cut simulation, cross-file tasks);
- bench.latency: what single steps cost (keystroke, LSP overhead, backends, post-processing, stop words, retrieval);
- bench.reliability: fuzzing, memory, cancellation;
- bench.common: helpers the groups share (LSP client driving, paths, statistics, plots); no benchmark itself."""
