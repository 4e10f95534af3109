"""Typing replays: what a user feels. A simulated user types real source files (replay_files/ by default) keystroke
by keystroke through the real language server over stdio, as an editor does, and the replay records keystroke →
suggestion latency, suggestions shown and how much of them was right, model calls and prefilled prompt tokens.
Two users: the passive one types everything and only judges suggestions; the accepting one (`accepting_user`) takes
right suggestions whole or word by word. Timing benchmarks: run them alone on the machine.

    python -m bench.replay.typing_replay                      # passive user: ours against the naive pipeline
    python -m bench.replay.typing_replay --user accepting     # accepting user: ours against ours without speculation
    python -m bench.replay.typing_replay --smoke              # tiny test model, a few keystrokes"""
