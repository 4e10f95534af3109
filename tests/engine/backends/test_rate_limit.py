"""The leaky bucket: rpm → whole requests per second (rounded up), bursts of that size, then even spacing."""

from __future__ import annotations

import pytest

from engine.backends import create_completion_stream, create_embedding
from engine.backends.rate_limit import RateLimiter, limiter_for, per_second
from engine.config import ModelConfig


@pytest.mark.parametrize("rpm,rps", [(1, 1), (59, 1), (60, 1), (61, 2), (600, 10), (90, 2)])
def test_rpm_to_per_second_rounds_up(rpm, rps):
    assert per_second(rpm) == rps


class FakeClock:
    def __init__(self):
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.slept.append(delay)
        self.now += delay


async def test_burst_then_spacing():
    clock = FakeClock()
    limiter = RateLimiter(2, clock=clock, sleep=clock.sleep)
    for _ in range(5):
        await limiter.acquire()
    # two at once, then one every half second
    assert clock.slept == [0.5, 0.5, 0.5]


async def test_the_bucket_refills_while_idle():
    clock = FakeClock()
    limiter = RateLimiter(1, clock=clock, sleep=clock.sleep)
    await limiter.acquire()
    clock.now += 10
    await limiter.acquire()
    assert clock.slept == []
    await limiter.acquire()
    assert clock.slept == [1.0]


def test_reservations_are_queued_in_order():
    clock = FakeClock()
    limiter = RateLimiter(1, clock=clock, sleep=clock.sleep)
    assert [limiter.reserve() for _ in range(4)] == [0.0, 1.0, 2.0, 3.0]


async def test_one_bucket_per_model_shared_by_completion_and_embedding():
    a = limiter_for("openai/completion", "https://api.example.com/v1", "m", 120)
    assert limiter_for("openai/embedding", "https://api.example.com/v1/", "m", 120) is a
    assert limiter_for("openai/completion", "https://api.example.com/v1", "other", 120) is not a


async def test_defaults_no_limit_for_loopback_generous_for_remote():
    local = create_completion_stream(ModelConfig(kind="openai/completion", api_endpoint="http://127.0.0.1:1/v1",
                                                 model="m"))
    remote = create_completion_stream(ModelConfig(kind="openai/completion", api_endpoint="https://h.example/v1",
                                                  model="m"))
    limited = create_embedding(ModelConfig(kind="openai/embedding", api_endpoint="http://127.0.0.1:1/v1",
                                           model="m", rate_limit_rpm=30))
    try:
        assert local._limiter is None
        assert remote._limiter is not None and remote._limiter.rate == 10
        assert limited._limiter is not None and limited._limiter.rate == 1
    finally:
        for backend in (local, remote, limited):
            await backend.close()


async def test_the_wrapper_waits_before_each_request(serve):
    from . import vendor_formats as vf
    from engine.types import CompletionOptions, Prompt

    async def handler(request, rs):
        await rs.start()
        await rs.send(vf.openai_text("x"))
        await rs.send("data: [DONE]\n\n")
        await rs.end()

    server, base = await serve(handler)
    stream = create_completion_stream(ModelConfig(kind="openai/completion", api_endpoint=base + "/v1", model="m",
                                                  rate_limit_rpm=60))
    clock = FakeClock()
    stream._limiter = RateLimiter(1, clock=clock, sleep=clock.sleep)
    try:
        for _ in range(3):
            assert [c async for c in stream.generate(Prompt("a", "a"), CompletionOptions())] == ["x"]
    finally:
        await stream.close()
    assert clock.slept == [1.0, 1.0] and len(server.requests) == 3
