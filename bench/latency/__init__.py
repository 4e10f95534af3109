"""Latency benchmarks: what a keystroke, a request or a start costs (keystroke cost, overhead, start-up,
post-processing speed, stop condition, retrieval)."""
