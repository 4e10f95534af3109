"""Next-edit benchmark (issue 23): how well the server predicts the user's NEXT edit from the edits just made.

What it measures. Tasks come from real code changes: the same file in two consecutive releases of a package from the
registries (PyPI wheels for Python, PyPI source archives for C, npm tarballs for JavaScript and TypeScript). The
diff's hunks are grouped into edit sequences (hunks sharing a changed token: a rename, an added argument); the first
hunks of a sequence are replayed as the user's edits and the task is the next hunk, or — after a sequence's last
hunk — no edit at all (bench/next_edit/tasks.py says exactly how). Every task goes through the real server,
`python -m lsp_server serve --stdio`, as an NES client drives it: didOpen, one didChange per replayed hunk,
`textDocument/copilotInlineEdit` at the cursor (bench/next_edit/harness.py). Measures (bench/next_edit/report.py):
exact match of the proposed edit, location accuracy, false positives, latency p50/p95, the substitution-like subset,
and right against wrong suggestions, for

- `propagation`: model-free propagation alone (no next-edit model);
- `scripted-sweep`, `scripted-zeta2`, `scripted-instruction`: each prompt form with a scripted loopback model that
  returns the TRUE rewrite of the window it is shown (bench/next_edit/scripted.py), so that every task still lost
  is lost by the pipeline (history, window, prompt, parsing, diff, discard rules);
- `default-sweep`, `default-zeta2`, `default-instruction`: the default model (Gemma 3 270M, from its PyPI package)
  on a real llama-server in each form;
- `combined-scripted`, `combined-default-FORM`: propagation first and the model where it has nothing (the server's
  ranking when both are on).

How to run (from the checkout, with the project's environment):

    python -m bench.next_edit describe                        # what the committed task files hold
    python -m bench.next_edit run                             # propagation + the three scripted forms, dev split
    python -m bench.next_edit run --modes default-sweep default-zeta2 default-instruction --model-limit 40
    python -m bench.next_edit run --split heldout             # the final check on packages never tuned on
    python -m bench.next_edit build                           # re-download the releases, rewrite data/*.jsonl.gz
    python -m bench.next_edit compare BEFORE.json AFTER.json  # task by task: exact answers gained, lost, new wrong

It prints a table and writes bench/results/next_edit-{split}.json (measures, losses by cause, every task's outcome).
Latency figures need a quiet machine: run under `flock /tmp/infill-bench.lock`. The data files are small and
committed; `build` needs the registries (pip, npm) and is deterministic (packages.toml pins every release)."""
