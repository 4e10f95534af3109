"""Machine-wide sharing of the local llama-server (engine/local/shared.py): the key, the run directory, the record,
and an attached SharedLlamaServer against the real llama-server (the session's, which the test "owns" by holding
the lock itself). Whole `infill serve` processes sharing one server: tests/e2e/test_lsp_share.py."""

from __future__ import annotations

import asyncio
import dataclasses
import fcntl
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import EngineConfig, LocalServerSettings, ModelConfig
from engine.errors import BackendUnavailable
from engine.local import shared
from engine.local.server import start_local_server
from engine.local.shared import (Record, RunDirError, SharedLlamaServer, plausible, prepare_run_dir, read_record,
                                 run_dir, server_key, write_record)
from engine.local.supervisor import LlamaServerSupervisor
from engine.types import CompletionOptions, Prompt, StatusEvent

from .test_supervisor import wait_until_dead

SETTINGS = LocalServerSettings(parallel=1, ctx_size=1024, start_timeout=30.0)
PROMPT = Prompt(text="def add(a, b):", prefix="def add(a, b):", suffix="\n")
OPTIONS = CompletionOptions(max_decoding_tokens=4, sampling_temperature=0.0)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return path


# --- the key ---------------------------------------------------------------------------------------------------------


def test_key_is_stable_and_short(model: Path) -> None:
    key = server_key("/usr/bin/llama-server", model, SETTINGS)
    assert key == server_key("/usr/bin/llama-server", model, dataclasses.replace(SETTINGS))
    assert len(key) == 16 and int(key, 16) >= 0


@pytest.mark.parametrize("change", [{"ctx_size": 2048}, {"parallel": 2}, {"threads": 2}, {"gpu_layers": 1},
                                    {"embedding": True}, {"chat_template": "{{ x }}"}, {"cache_ram": 0},
                                    {"extra_args": ("--metrics",)}])
def test_key_changes_with_what_shapes_the_server(model: Path, change: dict) -> None:
    assert server_key("/bin/llama-server", model, dataclasses.replace(SETTINGS, **change)) != \
        server_key("/bin/llama-server", model, SETTINGS)


@pytest.mark.parametrize("change", [{"start_timeout": 5.0}, {"share": False}, {"binary": "/bin/llama-server"}])
def test_key_ignores_what_does_not_shape_the_server(model: Path, change: dict) -> None:
    assert server_key("/bin/llama-server", model, dataclasses.replace(SETTINGS, **change)) == \
        server_key("/bin/llama-server", model, SETTINGS)


def test_key_changes_with_the_binary_and_the_model_file(model: Path, tmp_path: Path) -> None:
    key = server_key("/bin/llama-server", model, SETTINGS)
    assert server_key("/opt/llama-server", model, SETTINGS) != key
    other = tmp_path / "other.gguf"
    other.write_bytes(model.read_bytes())
    assert server_key("/bin/llama-server", other, SETTINGS) != key
    os.utime(model, ns=(1_000_000_000, 1_000_000_000))  # rewritten (a new download): another mtime
    assert server_key("/bin/llama-server", model, SETTINGS) != key
    link = tmp_path / "link.gguf"
    link.symlink_to(model)  # the same file by another name is the same server
    assert server_key("/bin/llama-server", link, SETTINGS) == server_key("/bin/llama-server", model, SETTINGS)


# --- the run directory -----------------------------------------------------------------------------------------------


def test_run_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("INFILL_RUN_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    assert run_dir() == tmp_path / "explicit"
    monkeypatch.delenv("INFILL_RUN_DIR")
    assert run_dir() == tmp_path / "runtime" / "infill"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert run_dir() == tmp_path / "cache" / "infill" / "run"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert run_dir() == tmp_path / "home" / ".cache" / "infill" / "run"


def test_run_dir_is_created_private(tmp_path: Path) -> None:
    path = prepare_run_dir(tmp_path / "a" / "run")
    assert path.is_dir() and (path.stat().st_mode & 0o777) == 0o700


@pytest.mark.parametrize("mode", [0o770, 0o777, 0o722])
def test_a_run_dir_others_may_write_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "run"
    path.mkdir()
    path.chmod(mode)
    with pytest.raises(RunDirError, match=f"{path}.*may be written by other users"):
        prepare_run_dir(path)


def test_a_run_dir_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.raises(RunDirError, match=f"{tmp_path / 'run'} belongs to another user"):
        prepare_run_dir(tmp_path / "run")


def test_a_file_as_run_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("")
    with pytest.raises(RunDirError, match="run"):
        prepare_run_dir(tmp_path / "run")


async def test_without_file_locks_each_process_runs_its_own_server(tiny_model: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Windows has no `fcntl`: the local backend must still import and run, each process with its own server."""
    from engine.local.server import _machine_server
    from engine.models import resolve_model

    monkeypatch.setattr(shared, "fcntl", None)
    monkeypatch.setenv("INFILL_RUN_DIR", str(tmp_path / "run"))
    cfg = ModelConfig(kind="local", model=str(tiny_model))
    model = await asyncio.to_thread(resolve_model, cfg, EngineConfig(completion=cfg), lambda event: None)
    backing = _machine_server("/bin/true", model, cfg.local, None)
    assert isinstance(backing, LlamaServerSupervisor) and not (tmp_path / "run").exists()
    assert "no POSIX file locks" in caplog.text


def test_attached_pids_come_from_the_shared_flocks_on_the_users_file() -> None:
    locks = ("1: FLOCK  ADVISORY  READ 11175 fe:00:2466609 0 EOF\n"
             "2: FLOCK  ADVISORY  WRITE 11153 fe:00:2466609 0 EOF\n"   # the owner's moment of checking, not a user
             "3: FLOCK  ADVISORY  READ 4242 fe:00:777 0 EOF\n"        # another file
             "4: -> FLOCK  ADVISORY  READ 5151 fe:00:2466609 0 EOF\n"  # waiting, not holding
             "5: POSIX  ADVISORY  READ 6161 fe:00:2466609 0 EOF\n"
             "6: FLOCK  ADVISORY  READ 3131 fe:00:2466609 0 EOF\n")
    assert shared.attached_pids_in(locks, 2466609) == [11175, 3131]
    assert shared.attached_pids_in("garbage\n1: FLOCK\n", 1) == []


# --- the record ------------------------------------------------------------------------------------------------------

RECORD = Record(pid=1234, port=4567, base_url="http://127.0.0.1:4567", owner_pid=1230, model="/m.gguf",
                generation=7)


def test_record_round_trip_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "k.json"
    write_record(path, RECORD)
    assert read_record(path) == RECORD
    assert (path.stat().st_mode & 0o777) == 0o600
    with open(path) as reader:  # a reader holding the old file keeps reading all of it: the new one is renamed in
        newer = dataclasses.replace(RECORD, generation=8)
        write_record(path, newer)
        assert json.loads(reader.read())["generation"] == 7
    assert read_record(path) == newer

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(json, "dump", broken)
    with pytest.raises(OSError):
        write_record(path, dataclasses.replace(RECORD, generation=9))
    assert read_record(path) == newer  # a failed write leaves the last record as it was
    assert [p.name for p in tmp_path.iterdir()] == ["k.json"]  # and no temporary file


@pytest.mark.parametrize("text", [
    "", "not json", "[]", json.dumps({"pid": 1}),
    json.dumps({**dataclasses.asdict(RECORD), "port": "4567"}),
    json.dumps({**dataclasses.asdict(RECORD), "pid": True}),
    json.dumps({**dataclasses.asdict(RECORD), "port": 70000, "base_url": "http://127.0.0.1:70000"}),
    json.dumps({**dataclasses.asdict(RECORD), "base_url": "http://example.com:4567"}),
    json.dumps({**dataclasses.asdict(RECORD), "base_url": "http://127.0.0.1:4568"}),
    json.dumps({**dataclasses.asdict(RECORD), "base_url": "http://0.0.0.0:4567"}),
    json.dumps({**dataclasses.asdict(RECORD), "owner_pid": -1}),
])
def test_a_malformed_record_is_none(tmp_path: Path, text: str) -> None:
    path = tmp_path / "k.json"
    path.write_text(text)
    assert read_record(path) is None


def test_a_missing_record_is_none(tmp_path: Path) -> None:
    assert read_record(tmp_path / "none.json") is None


def test_a_failed_health_look_at_a_running_server_keeps_it_in_use(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Under load one /health look may time out; while the record still names a live server the attached process
    keeps using it (no "starting" flicker, no requests held); once the record goes, it waits."""
    attached = SharedLlamaServer("/bin/true", tmp_path / "m.gguf", LocalServerSettings(), tmp_path, "k")
    events: list[StatusEvent] = []
    attached._on_status = events.append
    healthy = iter([True, False, False])
    monkeypatch.setattr(shared, "read_record", lambda path: RECORD)
    monkeypatch.setattr(shared, "plausible", lambda record: True)
    monkeypatch.setattr(shared, "_healthy", lambda client, url: next(healthy))
    attached._look(None)  # type: ignore[arg-type]
    assert attached.state == "ready" and attached.base_url == RECORD.base_url
    attached._look(None)  # type: ignore[arg-type]
    assert attached.state == "ready" and attached.base_url == RECORD.base_url
    assert [e.kind for e in events] == ["ready"]
    monkeypatch.setattr(shared, "read_record", lambda path: None)  # the owner withdrew it: its server is gone
    attached._look(None)  # type: ignore[arg-type]
    assert attached.state == "waiting" and [e.kind for e in events] == ["ready", "starting"]


async def test_a_request_after_the_owner_died_waits_for_the_takeover_instead_of_its_dead_port(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between an owner's death and the watch's next look (half a second; longer on a loaded machine) the attached
    process still held the dead server's URL, and a request sent then went to a port nobody listens on. Each request
    now checks that the owner and its server live, and if not waits (and wakes the watch, which takes over)."""
    attached = SharedLlamaServer("/bin/true", tmp_path / "m.gguf", LocalServerSettings(), tmp_path, "k")
    monkeypatch.setattr(shared, "read_record", lambda path: RECORD)
    monkeypatch.setattr(shared, "plausible", lambda record: True)
    monkeypatch.setattr(shared, "_healthy", lambda client, url: True)
    attached._look(None)  # type: ignore[arg-type]
    living = {RECORD.owner_pid, RECORD.pid}
    monkeypatch.setattr(shared, "_own_process_alive", lambda pid: pid in living)
    assert await attached.wait_ready(0.0) == RECORD.base_url and not attached._wake.is_set()
    living.discard(RECORD.owner_pid)  # killed: its llama-server dies with it (PR_SET_PDEATHSIG)
    with pytest.raises(BackendUnavailable, match="not ready after"):
        await attached.wait_ready(0.2)
    assert attached.state == "waiting" and attached._wake.is_set()  # the watch looks at once


def test_a_stale_record_is_not_plausible() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    me = os.getpid()
    assert not plausible(dataclasses.replace(RECORD, pid=gone.pid, owner_pid=me))  # its server is dead
    assert not plausible(dataclasses.replace(RECORD, pid=me, owner_pid=gone.pid))  # its owner is dead
    assert not plausible(dataclasses.replace(RECORD, pid=me, owner_pid=me))  # alive, but not a server on the port


@pytest.mark.llama_server
def test_a_record_of_the_real_server_is_plausible_only_with_its_port(llama_server_supervisor: LlamaServerSupervisor
                                                                      ) -> None:
    port = int(llama_server_supervisor.base_url.rsplit(":", 1)[1])
    pid = llama_server_supervisor.pid
    assert pid is not None
    real = Record(pid=pid, port=port, base_url=f"http://127.0.0.1:{port}", owner_pid=os.getpid(), model="m",
                  generation=1)
    assert plausible(real)
    assert not plausible(dataclasses.replace(real, port=port + 1, base_url=f"http://127.0.0.1:{port + 1}"))


# --- attached to a real llama-server ---------------------------------------------------------------------------------


def hold_lock(path: Path) -> int:
    """Take the owner's lock as another process would (a second open file description conflicts in flock)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def can_lock(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


@pytest.mark.llama_server
async def test_attached_ignores_a_stale_record_uses_a_live_one_and_takes_over(
        llama_server_binary: str, tiny_model: Path, llama_server_supervisor: LlamaServerSupervisor,
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="engine.local")
    directory = prepare_run_dir(tmp_path / "run")
    settings = dataclasses.replace(SETTINGS, start_timeout=1.0)
    key = server_key(llama_server_binary, tiny_model, settings)
    owner_lock = hold_lock(directory / f"{key}.lock")
    events = []
    attached = SharedLlamaServer(llama_server_binary, tiny_model, settings, directory, key, on_status=events.append)
    attached.poll_interval = 0.05
    url = llama_server_supervisor.base_url
    pid = llama_server_supervisor.pid
    assert pid is not None
    port = int(url.rsplit(":", 1)[1])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    record_path = directory / f"{key}.json"
    # a record whose owner is gone: not used, although its server answers
    write_record(record_path, Record(pid=pid, port=port, base_url=url, owner_pid=dead.pid, model=str(tiny_model),
                                     generation=1))
    try:
        with pytest.raises(BackendUnavailable, match="not ready after 1 s"):
            await attached.start()
        assert not attached.owns and attached._base_url is None

        attached = SharedLlamaServer(llama_server_binary, tiny_model, settings, directory, key,
                                     on_status=events.append)
        attached.poll_interval = 0.05
        write_record(record_path, Record(pid=pid, port=port, base_url=url, owner_pid=os.getpid(),
                                         model=str(tiny_model), generation=2))
        assert await attached.start() == url
        assert not attached.owns and attached.pid == pid and attached.owner_pid == os.getpid()
        assert "using the llama-server started by Infill process" in attached.describe()
        assert any(e.kind == "ready" and f"Infill process {os.getpid()}" in e.message for e in events)
        assert not can_lock(directory / f"{key}.users")  # it is registered as a user of the owner's server

        # the owner goes away (releases its lock): the attached one starts its own server and publishes it
        os.unlink(record_path)
        os.close(owner_lock)
        owner_lock = -1
        for _ in range(1200):  # the next look takes the lock (a safety net, not a speed assertion)
            if attached.owns:
                break
            await asyncio.sleep(0.05)
        new_url = await attached.wait_ready(30.0)
        assert attached.owns and attached.takeovers == 1 and new_url != url
        supervisor = attached.supervisor
        assert supervisor is not None and supervisor.pid is not None
        record = read_record(record_path)
        assert record is not None and record.pid == supervisor.pid and record.base_url == new_url
        assert "this process runs the model server" in attached.describe()
        assert can_lock(directory / f"{key}.users") and not attached.others_attached()  # no longer a user
        child = supervisor.pid
    finally:
        await attached.stop()
        if owner_lock >= 0:
            os.close(owner_lock)
    assert wait_until_dead(child)
    assert not record_path.exists()  # withdrawn
    released = hold_lock(directory / f"{key}.lock")  # and the lock is free
    os.close(released)
    assert llama_server_supervisor.state == "ready"  # the session's server was only used, never stopped


@pytest.mark.llama_server
async def test_in_process_owner_publishes_and_reports(llama_server_binary: str, tiny_model: Path,
                                                      monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    directory = tmp_path / "run"
    monkeypatch.setenv("INFILL_RUN_DIR", str(directory))
    cfg = ModelConfig(kind="local", model=str(tiny_model),
                      local=LocalServerSettings(binary=llama_server_binary, parallel=1, ctx_size=1024))
    assert shared.report(llama_server_binary, tiny_model, cfg.local).startswith("shared: no Infill process runs")
    server = await start_local_server(cfg, EngineConfig(completion=cfg))
    try:
        assert isinstance(server.backing, SharedLlamaServer) and server.backing.owns
        assert server.slot_router is not None and not server.shared_with_others
        (record_file,) = directory.glob("*.json")
        record = read_record(record_file)
        assert record is not None and record.owner_pid == os.getpid() and record.base_url == server.endpoint
        assert shared.report(llama_server_binary, tiny_model, cfg.local).startswith(
            f"shared: Infill process {os.getpid()} runs llama-server (pid {record.pid}")
        assert "this process runs the model server" in (server.describe() or "")

        # alone, it pins its requests to slots; while another process is attached (holds the users file),
        # llama-server chooses the slots; guesses go on unasked either way (one person's editors: no gate, and a
        # cache warm-up is sent to the real server)
        stream = server.completion_stream()
        try:
            assert stream.gate is None and stream._pin({}, PROMPT, OPTIONS) == 0
            stream.router.end(0)
            user = os.open(directory / f"{record_file.stem}.users", os.O_RDWR)
            fcntl.flock(user, fcntl.LOCK_SH | fcntl.LOCK_NB)
            try:
                assert server.shared_with_others and server.backing.others_attached()
                assert server.backing.attached_pids() == [os.getpid()]  # what the thread policy leaves out
                assert stream.gate is None and stream._pin({}, PROMPT, OPTIONS) is None
                await stream.warm(PROMPT)
            finally:
                os.close(user)
            assert not server.shared_with_others and stream.gate is None
        finally:
            await stream.close()
    finally:
        await server.close()
    assert not list(directory.glob("*.json"))


@pytest.mark.llama_server
async def test_an_unsafe_run_dir_falls_back_to_a_server_of_its_own(llama_server_binary: str, tiny_model: Path,
                                                                   monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "run"
    directory.mkdir()
    directory.chmod(0o777)
    monkeypatch.setenv("INFILL_RUN_DIR", str(directory))
    cfg = ModelConfig(kind="local", model=str(tiny_model),
                      local=LocalServerSettings(binary=llama_server_binary, parallel=1, ctx_size=1024))
    server = await start_local_server(cfg, EngineConfig(completion=cfg))
    try:
        assert isinstance(server.backing, LlamaServerSupervisor)
        assert server.describe() is None
    finally:
        await server.close()
    assert f"not sharing llama-server with other Infill processes: the run directory {directory}" in caplog.text
    assert list(directory.iterdir()) == []


async def test_share_false_never_touches_the_run_dir(tiny_model: Path, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    from engine.local.server import _machine_server
    from engine.models import resolve_model

    monkeypatch.setenv("INFILL_RUN_DIR", str(tmp_path / "run"))
    cfg = ModelConfig(kind="local", model=str(tiny_model), local=LocalServerSettings(share=False))
    model = await asyncio.to_thread(resolve_model, cfg, EngineConfig(completion=cfg), lambda event: None)
    backing = _machine_server("/bin/true", model, cfg.local, None)
    assert isinstance(backing, LlamaServerSupervisor) and not (tmp_path / "run").exists()
    assert shared.report("/bin/true", tiny_model, cfg.local).startswith("not shared")
