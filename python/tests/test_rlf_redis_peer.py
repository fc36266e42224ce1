"""The engine's `rate-limiter-flexible` limiter with `store=redis` against the real package:
`RateLimiterRedis` of rate-limiter-flexible (tests/npm pins it, with ioredis), run by
tests/npm/peer.js on a redis-server whose clock the helper stands at each request's µs
(frozen_redis). Every request of a keyed request log, a seeded bursty stream (equal times,
steps of a microsecond and a millisecond, weighed) and the 2015–2025 catalog must be decided
alike: the store's whole-second windows, their last millisecond, and a window under a second
that never ends.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import ratelimit_replay as rl
from conftest import REPO
from frozen_redis import FrozenRedis
from peer_streams import Event, agree, bursty, catalog, request_log, table

NPM = REPO / "tests" / "npm"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrozenRedis]:
    assert (NPM / "node_modules" / "ioredis").is_dir(), "the npm peers are not installed: npm ci --prefix tests/npm"
    frozen = FrozenRedis(tmp_path_factory.mktemp("rlf"))
    yield frozen
    frozen.stop()


def ours(events: list[Event], spec: str) -> list[bool]:
    layered = rl.replay(table(events), limits=[f"{spec},store=redis,key=key,cost=cost"])
    # A layered replay's decisions: whether each passed, and what each layer said.
    return [row["passed"] for row in layered.decisions.to_pylist()]


def theirs(server: FrozenRedis, events: list[Event], words: list[str]) -> list[bool]:
    redis.Redis(host="127.0.0.1", port=server.port).flushall()
    lines = "".join(f"{t},{k},{c}\n" for t, k, c in events)
    args = ["node", "--no-warnings", "peer.js", "rate-limiter-flexible", *words]
    args += [f"port={server.port}", f"clock={server.clock}"]
    done = subprocess.run(args, cwd=NPM, input=lines, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    # The helper moved the server's clock; the fixture's record of it is stale.
    server.micros = None
    return [line == "1" for line in done.stdout.splitlines()]


def test_rate_limiter_flexible_in_redis_decides_as_the_real_package(
    server: FrozenRedis, tmp_path_factory: pytest.TempPathFactory, m5: Path
) -> None:
    # (points, duration in ms, blockDuration in ms): 1.5 s is a window of 1 s in Redis,
    # 0.5 s one that never ends.
    streams = [
        ("the request log", request_log(tmp_path_factory.mktemp("rlf")), [(30, 60_000, 0)]),
        ("the bursty stream", bursty(30_000), [(5, 1_500, 3_000), (40, 500, 0)]),
        ("the catalog", catalog(m5), [(5, 3_600_000, 0)]),
    ]
    total = 0
    for name, events, settings in streams:
        for points, ms, block in settings:
            seconds = lambda ms: f"{ms / 1000:g}"  # noqa: E731
            spec = f"algo=rate-limiter-flexible,points={points},duration={seconds(ms)}"
            words = [f"points={points}", f"duration={seconds(ms)}"]
            if block:
                spec += f",block={block}ms"
                words.append(f"blockDuration={seconds(block)}")
            want, got = theirs(server, events, words), ours(events, spec)
            total += agree(f"rate-limiter-flexible store=redis on {name} at {spec}", want, got)
    assert total >= 100_000
    print(f"rate-limiter-flexible store=redis: {total} decisions, 0 apart")
