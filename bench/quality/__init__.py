"""Completion quality: how often a suggestion is what the user would have written. Scores (exact match, edit
similarity, HumanEval pass rate) do not depend on the machine's load.

    python -m bench.quality.suites           # HumanEval infilling and SantaCoder FIM: raw, ours, oracle cut
    python -m bench.quality.cut_simulation   # where suggestions end, with a scripted model over real code
    python -m bench.quality.crosscode        # repository-level tasks without and with workspace context

Each has `--smoke` (tiny test model, a handful of tasks). The data sets of `suites` are read from ../shared/data
(`--data-dir`); `crosscode` and `cut_simulation` build their tasks from packages of the registries."""
