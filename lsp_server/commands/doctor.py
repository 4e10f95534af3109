"""`infill doctor`: can this machine run the local backend, and how fast?

It walks the same path as the language server, one step at a time, so a failure says which step broke: find
llama-server and ask its version, resolve the model (the default one is assembled if needed; nothing is downloaded),
start the server, run one completion, and print llama-server's own timings. It exits non-zero with advice when a
step fails. The server it starts is always stopped before it returns."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from engine.config import EngineConfig, ModelConfig
from engine.errors import ConfigError, InfillError
from engine.prompt import PromptTemplate

from . import CONFIG_HELP

if TYPE_CHECKING:
    from lsp_server.config import ServerSettings

SAMPLE_PREFIX = 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n    '
SAMPLE_SUFFIX = "\n\nprint(fibonacci(10))\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", metavar="PATH_OR_ID", help="model to check (default: the configured completion "
                                                              "model, else the built-in default)")
    parser.add_argument("--binary", metavar="PATH", help="llama-server to use (default: completion.local.binary, "
                                                         "else discovery)")
    parser.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    parser.add_argument("--cache-dir", metavar="DIR", help="model cache directory")
    parser.add_argument("--n-predict", type=int, default=32, metavar="N", help="tokens to generate (default 32)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")


@dataclass
class Step:
    name: str
    ok: bool | None = None  # None: not run
    detail: str = ""
    advice: str = ""


@dataclass
class Report:
    steps: list[Step] = field(default_factory=list)
    timings: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(step.ok for step in self.steps)

    def step(self, name: str) -> Step:
        step = Step(name)
        self.steps.append(step)
        return step


# ---------------------------------------------------------------------------------------------------------------------
# One completion against a running llama-server, with its timings (also used by bench/latency/local_backend.py)


@dataclass(frozen=True)
class CompletionTiming:
    endpoint: str
    text: str
    first_token_seconds: float | None
    total_seconds: float
    prompt_tokens: int | None
    prompt_per_second: float | None
    generated_tokens: int | None
    generated_per_second: float | None


def measure_completion(base_url: str, *, fim: bool, prompt_template: str | None = None,
                       prefix: str = SAMPLE_PREFIX, suffix: str = SAMPLE_SUFFIX, n_predict: int = 32,
                       timeout: float = 300.0) -> CompletionTiming:
    """Streams one completion (`/infill` when the model has FIM tokens, else `/completion`) and returns the time to
    the first token plus llama-server's `timings` from the final event."""
    import httpx

    body: dict[str, Any] = {"n_predict": n_predict, "temperature": 0.0, "seed": 1, "stream": True,
                            "cache_prompt": False}
    if fim:
        endpoint = "/infill"
        body.update(input_prefix=prefix, input_suffix=suffix)
    else:
        endpoint = "/completion"
        # a family name or a template string, rendered as the engine renders it
        body["prompt"] = PromptTemplate.from_setting(prompt_template).render(prefix, suffix)
    parts: list[str] = []
    first: float | None = None
    timings: dict[str, Any] = {}
    start = time.perf_counter()
    with httpx.Client(trust_env=False, timeout=httpx.Timeout(timeout, connect=5.0)) as client:
        with client.stream("POST", base_url + endpoint, json=body) as response:
            if response.status_code != 200:
                response.read()
                raise InfillError(f"llama-server {endpoint} answered HTTP {response.status_code}: "
                                  f"{response.text[:200]}")
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[5:].strip())
                if event.get("content") and first is None:
                    first = time.perf_counter() - start
                parts.append(event.get("content", ""))
                if event.get("stop"):
                    timings = event.get("timings") or {}
                    break
    return CompletionTiming(
        endpoint=endpoint, text="".join(parts), first_token_seconds=first,
        total_seconds=time.perf_counter() - start,
        prompt_tokens=timings.get("prompt_n"), prompt_per_second=timings.get("prompt_per_second"),
        generated_tokens=timings.get("predicted_n"), generated_per_second=timings.get("predicted_per_second"))


# ---------------------------------------------------------------------------------------------------------------------
# The checks


def _engine_config(args: argparse.Namespace, engine: EngineConfig) -> tuple[EngineConfig, ModelConfig]:
    if args.cache_dir:
        engine = replace(engine, model_cache_dir=args.cache_dir)
    cfg = engine.completion if engine.completion.kind == "local" else ModelConfig()
    if args.model:
        cfg = replace(cfg, model=args.model)
    if args.binary:
        cfg = replace(cfg, local=replace(cfg.local, binary=args.binary))
    return engine, cfg


def speculation_step(settings: ServerSettings) -> Step:
    """What the language server decides about speculative prefetch for the configured completion endpoint, and
    why: a user of a self-hosted OpenAI-compatible server should see that it counts as self-hosted (or how to say
    so), a user of a hosted API that prefetch stays off there."""
    from lsp_server.speculation import prefetch_decision

    decision = prefetch_decision(settings)
    where = "self-hosted" if decision.self_hosted else "hosted"
    return Step("speculation", True, f"{decision.describe()} ({where})")


def check(args: argparse.Namespace, on_progress=lambda message: None) -> Report:
    from engine.local.binary import INSTALL_ADVICE, binary_version, require_llama_server
    from engine.local.server import server_settings
    from engine.local.shared import report as machine_server_report
    from engine.local.supervisor import LlamaServerSupervisor, child_environment
    from engine.models import resolve_model
    from lsp_server.config import load_settings_file, parse_settings

    from .models import human_size

    report = Report()
    step = report.step("config")
    try:
        user = parse_settings(load_settings_file(args.config))  # read once: the engine's part and speculation's
        engine, cfg = _engine_config(args, user.engine)
    except (ConfigError, InfillError) as exc:
        step.ok, step.detail, step.advice = False, str(exc), "fix the setting named above in the config file"
        return report
    step.ok, step.detail = True, f"completion model: {cfg.model or '(default)'}"
    report.steps.append(speculation_step(user))

    step = report.step("binary")
    try:
        binary = require_llama_server(cfg.local.binary)
        version = binary_version(binary)
    except InfillError as exc:
        step.ok, step.detail, step.advice = False, str(exc), INSTALL_ADVICE
        return report
    step.ok, step.detail = True, f"{binary} (version {version})"
    _, dropped = child_environment(os.environ)
    if dropped:  # names only: LLAMA_API_KEY's value is a secret
        report.steps.append(Step("environment", True, f"left out of llama-server's environment: {', '.join(dropped)} "
                                 "(Infill writes its command line itself; other flags go in completion.local."
                                 "extra_args)"))

    step = report.step("model")
    started = time.perf_counter()
    try:
        resolved = resolve_model(cfg, engine, on_status=lambda event: on_progress(event.message))
    except InfillError as exc:
        step.ok, step.detail = False, str(exc)
        step.advice = ("set --model to a .gguf file, a model directory or a model id, or download one with "
                       "`infill models download ID`")
        return report
    report.timings["model_resolve_s"] = round(time.perf_counter() - started, 3)
    info = resolved.info
    features = "FIM tokens" if resolved.has_fim else "prompt template" if resolved.prompt_template else \
        "no FIM tokens, no template: prefix-only"
    step.ok = True
    step.detail = (f"{resolved.path} ({resolved.source}; {info.architecture if info else '?'}, "
                   f"{human_size(resolved.path.stat().st_size)}, {features})")
    for warning in resolved.warnings:
        report.steps.append(Step("model note", True, warning))
    report.steps.append(Step("model server", True, machine_server_report(binary, resolved.path,
                                                                         server_settings(cfg.local, resolved))))

    step = report.step("server")
    settings = replace(cfg.local, parallel=1)
    supervisor = LlamaServerSupervisor(binary, resolved.path, settings)
    supervisor.crash_limit = 1  # a doctor reports the first failure instead of retrying it
    try:
        on_progress("Starting llama-server…")
        started = time.perf_counter()
        try:
            base_url = supervisor.start_blocking()
        except InfillError as exc:
            tail = "\n".join(supervisor.stderr_tail()[-8:])
            step.ok, step.detail = False, str(exc) + (f"\nlast server output:\n{tail}" if tail else "")
            step.advice = ("see the reason above; a smaller model, fewer GPU layers (completion.local.gpu_layers) "
                           "or a smaller ctx_size helps with memory errors")
            return report
        load = time.perf_counter() - started
        report.timings["load_s"] = round(load, 3)
        step.ok, step.detail = True, f"healthy in {load:.2f} s at {base_url} (pid {supervisor.pid})"

        step = report.step("completion")
        on_progress("Running one completion…")
        try:
            result = measure_completion(base_url, fim=resolved.has_fim and not resolved.prompt_template,
                                        prompt_template=resolved.prompt_template, n_predict=args.n_predict)
        except Exception as exc:  # any failure here is the finding; report it rather than crash
            step.ok, step.detail = False, f"{type(exc).__name__}: {exc}"
            step.advice = "llama-server started but could not complete; check its output with --log-level debug"
            return report
        preview = result.text.replace("\n", "⏎")[:60]
        step.ok, step.detail = True, f"{result.endpoint}: {preview!r}"
        report.timings.update({
            "first_token_s": _round(result.first_token_seconds, 3),
            "completion_s": round(result.total_seconds, 3),
            "prompt_tokens": result.prompt_tokens, "prompt_tok_per_s": _round(result.prompt_per_second, 1),
            "generated_tokens": result.generated_tokens,
            "generated_tok_per_s": _round(result.generated_per_second, 1),
        })
    finally:
        supervisor.stop_blocking()
    return report


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def format_report(report: Report) -> str:
    width = max(len(s.name) for s in report.steps)
    lines = ["Infill doctor", ""]
    for step in report.steps:
        status = "ok" if step.ok else "FAILED" if step.ok is False else "-"
        detail_lines = step.detail.splitlines() or [""]
        lines.append(f"  {step.name:<{width}}  {status:<6}  {detail_lines[0]}")
        lines += [f"  {'':<{width}}  {'':<6}  {extra}" for extra in detail_lines[1:]]
    t = report.timings
    if "load_s" in t:
        rows = [("load (start → healthy)", f"{t['load_s']:.2f} s")]
        if "completion_s" in t:
            first = f"{t['first_token_s']:.3f} s" if t.get("first_token_s") is not None else "n/a"
            rows += [
                ("first token", first),
                ("prompt", f"{t['prompt_tokens']} tokens, {t['prompt_tok_per_s']} tokens/s"),
                ("generation", f"{t['generated_tokens']} tokens, {t['generated_tok_per_s']} tokens/s"),
            ]
        label = max(len(r[0]) for r in rows)
        lines += ["", "Timings"] + [f"  {name:<{label}}  {value}" for name, value in rows]
    failed = [s for s in report.steps if s.ok is False]
    if failed:
        lines += ["", "Advice"] + [f"  {s.name}: {s.advice}" for s in failed if s.advice]
        lines.append("\nResult: FAILED")
    else:
        lines.append("\nResult: all checks passed")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    # Warnings (e.g. "prefix-only") appear as rows of the report; keep logging's last-resort handler from repeating
    # them.
    logging.getLogger("engine").addHandler(logging.NullHandler())
    report = check(args, on_progress=lambda message: print(message, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps({"ok": report.ok, "steps": [vars(s) for s in report.steps], "timings": report.timings},
                         indent=2))
    else:
        print(format_report(report))
    return 0 if report.ok else 1
