"""The engine's `redis-cell` limiter against the real module: redis-cell 0.2.2, built from
its crate on crates.io by .ci/run into target/redis-cell, loaded into a redis-server whose
clock stands at each request's microsecond (frozen_redis). Every request of a keyed request
log, a seeded bursty stream (equal times, steps of a microsecond and a millisecond, weighed)
and the 2015–2025 catalog goes through `CL.THROTTLE`, and the replay must decide each alike.
"""

from __future__ import annotations

import csv
import json
import datetime as dt
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import ratelimit_replay as rl
from conftest import PROGRAM, REPO
from frozen_redis import FrozenRedis
from peer_streams import Event, agree, bursty, catalog, request_log, table

#: Where .ci/run builds the module (`cargo build` of the crate redis-cell 0.2.2).
MODULE = REPO / "target" / "redis-cell" / "libredis_cell.so"

@pytest.fixture(scope="module")
def cell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrozenRedis]:
    assert MODULE.exists(), f"{MODULE} is missing: .ci/run builds it from the crate redis-cell 0.2.2"
    server = FrozenRedis(tmp_path_factory.mktemp("redis-cell"), modules=(MODULE,))
    yield server
    server.stop()


def ours(events: list[Event], rate: str, max_burst: int) -> list[bool]:
    replay = rl.replay(table(events), algo="redis-cell", rate=rate, burst=max_burst, key="key", cost="cost")
    return replay.decisions.to_pylist()


def theirs(cell: FrozenRedis, events: list[Event], count: int, period: int, max_burst: int) -> list[bool]:
    """`CL.THROTTLE` for each request, the server's clock at its microsecond; a fresh
    keyspace for each run."""
    client = redis.Redis(host="127.0.0.1", port=cell.port)
    client.flushall()
    decided = []
    for t, key, cost in events:
        cell.set_micros(t)
        limited, *_ = client.execute_command("CL.THROTTLE", f"rl:{key}", max_burst, count, period, cost)
        decided.append(limited == 0)
    client.close()
    return decided


def test_redis_cell_decides_as_the_real_module(
    cell: FrozenRedis, tmp_path_factory: pytest.TempPathFactory, m5: Path
) -> None:
    streams = [
        ("the request log", request_log(tmp_path_factory.mktemp("cell")), [(30, 60, 4)]),
        ("the bursty stream", bursty(30_000), [(5, 2, 4), (8, 4, 0)]),
        ("the catalog", catalog(m5), [(5, 3600, 4)]),
    ]
    total = 0
    for name, events, rates in streams:
        for count, period, max_burst in rates:
            want = theirs(cell, events, count, period, max_burst)
            got = ours(events, f"{count}/{period}s", max_burst)
            total += agree(f"redis-cell on {name} at {count}/{period}s, max_burst {max_burst}", want, got)
    assert total >= 100_000
    print(f"redis-cell: {total} decisions, 0 apart")


def test_min_bucket_for_redis_cell_is_the_least_max_burst_the_module_refuses_none_with(
    cell: FrozenRedis, tmp_path_factory: pytest.TempPathFactory
) -> None:
    events = bursty(10_000)
    path = tmp_path_factory.mktemp("cell") / "bursty.csv"
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["time", "k", "cost"])
        for t, key, cost in events:
            when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=t)
            writer.writerow([when.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), key, cost])
    asked = ["min-bucket", str(path), "--rate", "5/2s", "--key", "k", "--cost", "cost", "--for", "redis-cell"]
    found = subprocess.run([str(PROGRAM), *asked, "--format", "json"], capture_output=True, text=True, check=True)
    max_burst = json.loads(found.stdout)[0]["system_size"]["value"]
    assert max_burst > 1
    # The module itself: none refused with it, some with one less.
    assert all(theirs(cell, events, 5, 2, max_burst))
    assert not all(theirs(cell, events, 5, 2, max_burst - 1))
