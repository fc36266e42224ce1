"""The engine's `django-ratelimit` limiter against the real package: PyPI django-ratelimit
4.1.0 (installed by .ci/run) on Django's local-memory cache, its clock frozen at each
request's microsecond. Every request of a keyed request log, a seeded bursty stream (equal
times, steps of a microsecond and a millisecond) and the 2015–2025 catalog goes through
`get_usage(..., increment=True)`, as the `@ratelimit` decorator calls it, and the replay
must decide each alike.
"""

from __future__ import annotations

import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

import ratelimit_replay as rl
from conftest import PROGRAM
from peer_streams import Event, agree, bursty, catalog, request_log, table


@pytest.fixture(scope="module")
def django_ratelimit() -> Any:
    """django_ratelimit.core, on Django's LocMemCache: no entry is culled (a cull drops a
    third of the entries when the cache holds MAX_ENTRIES), so the cache keeps every
    window's count as a server's would."""
    import django
    from django.conf import settings

    if not settings.configured:
        cache = {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "ratelimit-peer",
            "OPTIONS": {"MAX_ENTRIES": 10**9},
        }
        settings.configure(CACHES={"default": cache}, RATELIMIT_USE_CACHE="default")
        django.setup()
    from django_ratelimit import core

    return core


class Frozen:
    """A clock for the modules that read `time.time()` (django-ratelimit's core, and the
    cache's expiry), standing where it is set: only theirs, since the process's own clock
    also drives Dask's scheduler, which a clock gone back a year would take for a dead
    worker."""

    def __init__(self) -> None:
        self.t = 0.0

    def time(self) -> float:
        return self.t


def frozen(monkeypatch: pytest.MonkeyPatch, core: Any) -> Frozen:
    from django.core.cache.backends import base, locmem

    clock = Frozen()
    for module in (core, base, locmem):
        monkeypatch.setattr(module, "time", clock)
    return clock


def theirs(core: Any, monkeypatch: pytest.MonkeyPatch, events: list[Event], rate: str, *, keyed: bool = True) -> list[bool]:
    """`get_usage` for each request, `time.time()` (which django-ratelimit and the cache
    both read) frozen at its microsecond; a fresh cache and group for each run. Not keyed,
    every request is of the one key whose text is empty."""
    from django.core.cache import caches
    from django.test import RequestFactory

    caches["default"].clear()
    request = RequestFactory().get("/")
    now = frozen(monkeypatch, core)
    decided = []
    try:
        for t, key, _ in events:
            now.t = t / 1e6
            value = key if keyed else ""
            usage = core.get_usage(request, group=f"peer-{rate}", key=lambda _g, _r: value, rate=rate, increment=True)
            decided.append(not usage["should_limit"])
    finally:
        monkeypatch.undo()
    return decided


def ours(events: list[Event], rate: str, *, keyed: bool = True) -> list[bool]:
    key = {"key": "key"} if keyed else {}
    replay = rl.replay(table(events), algo="django-ratelimit", rate=rate, **key)
    return replay.decisions.to_pylist()


def test_django_ratelimit_decides_as_the_real_package(
    django_ratelimit: Any, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, m5: Path
) -> None:
    streams = [
        ("the request log", request_log(tmp_path_factory.mktemp("django")), ["30/60s", "3/2s"], True),
        ("the bursty stream", bursty(30_000), ["5/2s", "8/1s", "4/7s"], True),
        ("the catalog by one key", catalog(m5), ["5/3600s"], True),
        ("the catalog, not keyed", catalog(m5), ["5/3600s"], False),
    ]
    total = 0
    for name, events, rates, keyed in streams:
        for rate in rates:
            want = theirs(django_ratelimit, monkeypatch, events, rate, keyed=keyed)
            got = ours(events, rate, keyed=keyed)
            total += agree(f"django-ratelimit on {name} at {rate}", want, got)
    assert total >= 100_000
    print(f"django-ratelimit: {total} decisions, 0 apart")


def test_django_ratelimit_shifts_each_keys_windows(django_ratelimit: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # 1 a minute. zlib.crc32 of "a" is 27 mod 60, of "b" 41: "a"'s windows hold seconds
    # 28 to 87 of each 60, "b"'s 42 to 101. Each key twice, at 0:27 and 0:28: "a" passes
    # both (0:28 opens its next window), "b" only the first.
    assert (zlib.crc32(b"a") % 60, zlib.crc32(b"b") % 60) == (27, 41)
    start = 1_735_689_600_000_000
    events = [(start + s * 1_000_000, key, 1) for s, key in [(27, "a"), (27, "b"), (28, "a"), (28, "b")]]
    want = [True, True, True, False]
    assert theirs(django_ratelimit, monkeypatch, events, "1/60s") == want
    assert ours(events, "1/60s") == want


def test_config_for_django_ratelimit_decides_as_its_replay(
    django_ratelimit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What `config --for django-ratelimit` writes, run as it is: the decorated view,
    # keyed by a request header, refuses (raises Ratelimited) exactly where the replay does.
    from django.test import RequestFactory
    from django_ratelimit.exceptions import Ratelimited

    written = subprocess.run(
        [str(PROGRAM), "config", "--for", "django-ratelimit", "--rate", "4/7s", "--key", "x-client"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert '@ratelimit(key="header:x-client", rate="4/7s", block=True)' in written
    code: dict[str, Any] = {"__name__": "views"}
    exec(compile(written, "config", "exec"), code)
    events = bursty(5_000)
    factory, now = RequestFactory(), frozen(monkeypatch, django_ratelimit)
    decided = []
    try:
        for t, key, _ in events:
            now.t = t / 1e6
            try:
                code["view"](factory.get("/", HTTP_X_CLIENT=key))
                decided.append(True)
            except Ratelimited:
                decided.append(False)
    finally:
        monkeypatch.undo()
    agree("config --for django-ratelimit on the bursty stream at 4/7s", decided, ours(events, "4/7s"))
