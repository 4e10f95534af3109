"""How sure the model was of a suggestion's first line, from its tokens' log-probabilities.

A small model that writes the wrong first line is a distraction, not a help: on the real-code benchmark's tune split
the mean log-probability of the first line's tokens tells a right first line from a wrong one with an AUC of 0.89
(Gemma 3 270M, 192 tasks), far better than any rule on the text; Copilot filters its suggestions on the same kind of
score. The server drops a suggestion under `confidence_floor` before it is cached (lsp_server/pipeline.py); this
module only measures. Log-probabilities exist where the backend reports them (llama-server's `n_probs`)."""

from __future__ import annotations


def first_line_confidence(text: str, token_logprobs: tuple[tuple[int, float], ...] | None) -> float | None:
    """The mean log-probability of the tokens that write `text`'s first line of code, from its first character of
    code to its end (blank lines and indentation before it and the line break after it do not count: the model is
    always sure of those); None without log-probabilities or without code.

    `token_logprobs`: (offset in `text` where a token starts, its log-probability), in order, as
    `engine.types.Completion.token_logprobs` gives them."""
    if not token_logprobs:
        return None
    start = len(text) - len(text.lstrip())
    if start == len(text):
        return None
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    values = []
    for index, (offset, logprob) in enumerate(token_logprobs):
        token_end = token_logprobs[index + 1][0] if index + 1 < len(token_logprobs) else len(text)
        if offset >= end:
            break
        if token_end > start:  # the token writes part of the line's code
            values.append(logprob)
    return sum(values) / len(values) if values else None
