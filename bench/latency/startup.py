"""Start-up: how long after spawn `initialize` is answered, for `infill serve --stdio` and for a bare pygls 2 server
with one inline-completion feature, spawned interleaved by the same client (so the machine's load hits both alike).

Why a hand-written client: the time is spent in the server's imports and its initialize handler; a client library's
own start (importing lsprotocol takes longer than some of what is measured) must not sit between spawn and clock.
The client answers what the server asks (`workspace/configuration`, `window/workDoneProgress/create`,
`client/registerCapability`) like an editor, so a server that waits for an answer is measured as it would be used.

`--first-completion MODEL.gguf` also measures spawn → the first non-empty inline completion with the local backend
(Infill only; llama-server's own start is part of it), `--baseline-root DIR` adds Infill from another checkout
(e.g. a `git worktree` of the previous commit) so that before and after are measured in the same run.

    python3 -m bench.latency.startup                     # 12 spawns of each, median, table + JSON
    python3 -m bench.latency.startup --runs 3 --first-completion /tmp/infill-bench/tiny-fim.gguf
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common.paths import REPO_ROOT as ROOT
from bench.common.paths import RESULTS_DIR as RESULTS
from bench.common.paths import scratch_dir

#: The reference: pygls 2 with one inline-completion feature and nothing else (what the issue compares against).
BARE_SERVER = """
from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("bare", "0")

@server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
def inline(ls, params):
    return types.InlineCompletionList(items=[])

server.start_io()
"""

SAMPLE = 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n    if n < 2:\n        return n\n    '


@dataclass
class Spawn:
    """One server process and a blocking JSON-RPC reader over its pipes."""

    proc: subprocess.Popen
    started: float
    buffer: bytes = b""
    next_id: int = 1
    notifications: list[dict[str, Any]] = field(default_factory=list)

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> int:
        request_id = self.next_id
        self.next_id += 1
        self.send({"id": request_id, "method": method, "params": params})
        return request_id

    def _read_message(self, deadline: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            header_end = self.buffer.find(b"\r\n\r\n")
            if header_end >= 0:
                length = 0
                for line in self.buffer[:header_end].split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                end = header_end + 4 + length
                if len(self.buffer) >= end:
                    body, self.buffer = self.buffer[header_end + 4:end], self.buffer[end:]
                    return json.loads(body)
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError("the server did not answer in time")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise EOFError(f"the server exited (code {self.proc.poll()})")
                self.buffer += chunk

    def wait_response(self, request_id: int, timeout: float, answers: dict[str, Any] | None = None
                      ) -> dict[str, Any]:
        """Read until the response to `request_id`, answering the server's own requests meanwhile."""
        deadline = time.perf_counter() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == request_id and "method" not in message:
                return message
            if "method" in message and "id" in message:  # a server → client request
                result = (answers or {}).get(message["method"])
                if message["method"] == "workspace/configuration":
                    result = [result] * len(message["params"]["items"])
                self.send({"id": message["id"], "result": result})
            elif "method" in message:
                self.notifications.append(message)

    def stop(self) -> None:
        try:
            self.send({"id": 10_000, "method": "shutdown", "params": None})
            self.wait_response(10_000, 10.0)
            self.send({"method": "exit", "params": None})
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait(10)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def initialize_params(root: Path, options: dict[str, Any] | None) -> dict[str, Any]:
    return {"processId": os.getpid(), "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "initializationOptions": options,
            "capabilities": {"general": {"positionEncodings": ["utf-16"]},
                             "window": {"workDoneProgress": True},
                             "workspace": {"configuration": True},
                             "textDocument": {"inlineCompletion": {},
                                              "synchronization": {"dynamicRegistration": False}}}}


def spawn(command: list[str], env: dict[str, str], cwd: Path) -> Spawn:
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=str(cwd))
    return Spawn(proc, started)


def cpu_ms(pid: int) -> float | None:
    """CPU time the process (all its threads) has run so far, from Linux's schedstat (nanoseconds); None elsewhere."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as fh:
                total += int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e6


def measure_initialize(command: list[str], env: dict[str, str], cwd: Path, workspace: Path
                       ) -> tuple[float, float | None]:
    """Milliseconds from spawn to the `initialize` response: wall time, and the server's CPU time when it is read
    (a load on the machine stretches the first, hardly the second; the server's work right after the answer, if any,
    may be counted in the second while the client reads: an upper bound for such a server)."""
    server = spawn(command, env, cwd)
    try:
        request_id = server.request("initialize", initialize_params(workspace, None))
        response = server.wait_response(request_id, 60.0)
        elapsed = (time.perf_counter() - server.started) * 1000.0
        cpu = cpu_ms(server.proc.pid)
        if "result" not in response:
            raise RuntimeError(f"initialize failed: {response}")
        server.send({"method": "initialized", "params": {}})
        return elapsed, cpu
    finally:
        server.stop()


def measure_first_completion(command: list[str], env: dict[str, str], cwd: Path, workspace: Path,
                             model: Path) -> tuple[float, float, float | None]:
    """(ms to `initialize`, ms to the first non-empty inline completion, the server's CPU ms by then, llama-server's
    not counted) from spawn, the local backend on `model`. The request is invoked at once after didOpen, as a user
    who opens a file and asks would: it waits for the model."""
    options = {"completion": {"kind": "local", "model": str(model)}}
    server = spawn(command, env, cwd)
    try:
        request_id = server.request("initialize", initialize_params(workspace, options))
        server.wait_response(request_id, 60.0)
        initialized = (time.perf_counter() - server.started) * 1000.0
        server.send({"method": "initialized", "params": {}})
        uri = (workspace / "fib.py").as_uri()
        server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": SAMPLE}}})
        lines = SAMPLE.split("\n")
        position = {"line": len(lines) - 1, "character": len(lines[-1])}
        deadline = time.perf_counter() + 180.0
        while time.perf_counter() < deadline:
            request_id = server.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 1}})
            response = server.wait_response(request_id, 180.0)
            items = (response.get("result") or {}).get("items") or []
            if items:
                return initialized, (time.perf_counter() - server.started) * 1000.0, cpu_ms(server.proc.pid)
        raise TimeoutError("no suggestion within 180 s")
    finally:
        server.stop()


def server_env(root: Path, home: Path) -> dict[str, str]:
    env = dict(os.environ)
    # The warm-up spawn writes each checkout's bytecode, as an installed package has it. With PYTHONDONTWRITEBYTECODE
    # (set in some shells and CI jobs) nothing was written and every Infill spawn compiled its own modules again,
    # tens of milliseconds the bare server (pygls and lsprotocol, compiled at install) never paid.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(PYTHONPATH=str(root), XDG_CONFIG_HOME=str(home / "config"), XDG_STATE_HOME=str(home / "state"),
               XDG_CACHE_HOME=str(home / "cache"), INFILL_CONFIG=str(home / "no-config.toml"))
    return env


def summarize(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"n": len(values), "median": statistics.median(values), "min": ordered[0], "max": ordered[-1],
            "p90": ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]}


def run(runs: int, python: str, baseline_root: Path | None, first_completion: Path | None) -> dict[str, Any]:
    home = Path(scratch_dir("infill-startup-"))
    workspace = home / "workspace"
    workspace.mkdir()
    (workspace / "fib.py").write_text(SAMPLE)
    servers: dict[str, tuple[list[str], dict[str, str], Path]] = {
        "bare pygls": ([python, "-c", BARE_SERVER], server_env(ROOT, home), ROOT),
        "infill": ([python, "-m", "lsp_server", "serve", "--stdio"], server_env(ROOT, home), ROOT),
    }
    if baseline_root is not None:
        servers["infill (baseline)"] = ([python, "-m", "lsp_server", "serve", "--stdio"],
                                        server_env(baseline_root, home), baseline_root)
    for command, env, cwd in servers.values():  # compile the bytecode once, outside the measurement
        measure_initialize(command, env, cwd, workspace)
    times: dict[str, list[float]] = {name: [] for name in servers}
    cpu: dict[str, list[float]] = {name: [] for name in servers}
    completion: dict[str, list[float]] = {}
    completion_cpu: dict[str, list[float]] = {}
    names = list(servers)
    for i in range(runs):
        order = names if i % 2 == 0 else names[::-1]  # interleaved, alternating, so drift in load cancels
        for name in order:
            command, env, cwd = servers[name]
            wall, cpu_time = measure_initialize(command, env, cwd, workspace)
            times[name].append(wall)
            if cpu_time is not None:
                cpu[name].append(cpu_time)
    if first_completion is not None:
        for i in range(runs):
            for name in [n for n in names if n != "bare pygls"][:: 1 if i % 2 == 0 else -1]:
                command, env, cwd = servers[name]
                _, first, first_cpu = measure_first_completion(command, env, cwd, workspace, first_completion)
                completion.setdefault(name, []).append(first)
                if first_cpu is not None:
                    completion_cpu.setdefault(name, []).append(first_cpu)
    bare = statistics.median(times["bare pygls"])
    rows: dict[str, dict[str, Any]] = {
        name: {"initialize_ms": summarize(values), "ratio_to_bare": statistics.median(values) / bare}
        for name, values in times.items()}
    if all(cpu.values()):
        bare_cpu = statistics.median(cpu["bare pygls"])
        for name, values in cpu.items():
            rows[name]["initialize_cpu_ms"] = summarize(values)
            rows[name]["cpu_ratio_to_bare"] = statistics.median(values) / bare_cpu
    for name, values in completion.items():
        rows[name]["first_completion_ms"] = summarize(values)
    for name, values in completion_cpu.items():
        rows[name]["first_completion_cpu_ms"] = summarize(values)
    return {"runs": runs, "python": python, "servers": rows, "raw_ms": times, "cpu_raw_ms": cpu,
            "first_completion_raw_ms": completion, "first_completion_cpu_raw_ms": completion_cpu,
            "first_completion_model": str(first_completion) if first_completion else None}


def table(result: dict[str, Any]) -> str:
    lines = ["| server | initialize median (ms) | min–max | × bare | CPU to initialize median (ms) | × bare | "
             "first completion median (ms) |",
             "|---|---|---|---|---|---|---|"]
    for name, row in result["servers"].items():
        init = row["initialize_ms"]
        cpu = row.get("initialize_cpu_ms")
        first = row.get("first_completion_ms")
        cpu_shown = f"{cpu['median']:.0f} | {row['cpu_ratio_to_bare']:.2f}" if cpu else "n/a | n/a"
        first_cpu = row.get("first_completion_cpu_ms")
        shown = f"{first['median']:.0f}" if first else "n/a"
        if first_cpu:
            shown += f" (server CPU {first_cpu['median']:.0f})"
        lines.append(f"| {name} | {init['median']:.0f} | {init['min']:.0f}–{init['max']:.0f} | "
                     f"{row['ratio_to_bare']:.2f} | {cpu_shown} | {shown} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12, help="spawns of each server (default 12)")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the servers")
    parser.add_argument("--baseline-root", type=Path, help="also measure Infill from this checkout")
    parser.add_argument("--first-completion", type=Path, metavar="MODEL",
                        help="also measure spawn → first suggestion with the local backend on this GGUF")
    parser.add_argument("--smoke", action="store_true", help="2 spawns each (the test suite's check)")
    parser.add_argument("--output", type=Path, help="JSON file (default bench/results/startup-<time>.json)")
    args = parser.parse_args(argv)
    runs = 2 if args.smoke else args.runs
    result = run(runs, args.python, args.baseline_root, args.first_completion)
    result.update(time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  machine={"python": platform.python_version(), "cpus": os.cpu_count(),
                           "loadavg_after": os.getloadavg()})
    output = args.output or RESULTS / f"startup-{time.strftime('%Y%m%d-%H%M%S')}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(f"\nload average after the run: {os.getloadavg()[0]:.1f}; results: {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
