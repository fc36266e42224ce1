"""The streams the peer tests replay through a real system and through the engine alike:
a keyed request log from the program's own generator, a seeded bursty stream, and a real
catalog; each event is (µs since 1970, key, cost)."""

from __future__ import annotations

import csv
import datetime as dt
import random
import subprocess
from pathlib import Path

import pyarrow

from conftest import PROGRAM

Event = tuple[int, str, int]


def micros(text: str) -> int:
    when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (when - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)


def request_log(folder: Path) -> list[Event]:
    """106,462 requests of 300 clients and three bots in a day (whole milliseconds)."""
    path = folder / "requests.csv"
    args = ["synth", "requests", "--clients", "300", "--requests", "100000", "--seed", "7"]
    subprocess.run([str(PROGRAM), *args, "--days", "1", "-o", str(path)], check=True)
    with path.open() as file:
        return sorted(((micros(r["time"]), r["client"], 1) for r in csv.DictReader(file)), key=lambda e: e[0])


def bursty(count: int) -> list[Event]:
    """A seeded stream over five keys, each costing 1 to 3: a quarter at the time of the one
    before, a quarter under a millisecond later, a fifth a millisecond later, the rest up to
    3 s or 10 s later."""
    rng = random.Random(52)
    t, out = 1_735_689_600_000_000, []
    for _ in range(count):
        kind = rng.randrange(20)
        if kind < 5:
            step = 0
        elif kind < 10:
            step = rng.randrange(1, 1000)
        elif kind < 14:
            step = 1000
        elif kind < 19:
            step = 1000 * rng.randrange(1, 3001)
        else:
            step = 10_000_000
        t += step
        out.append((t, f"k{rng.randrange(5)}", rng.randrange(1, 4)))
    return out


def catalog(path: Path) -> list[Event]:
    with path.open() as file:
        return sorted(((micros(r["time"]), "all", 1) for r in csv.DictReader(file)), key=lambda e: e[0])


def table(events: list[Event]) -> pyarrow.Table:
    """The events as the engine reads them: `time` (µs, UTC), `key` and `cost`."""
    return pyarrow.table(
        {
            "time": pyarrow.array([t for t, _, _ in events], pyarrow.timestamp("us", tz="UTC")),
            "key": [k for _, k, _ in events],
            "cost": [c for _, _, c in events],
        }
    )


def agree(what: str, theirs: list[bool], ours: list[bool]) -> int:
    """Asserts that the real system and the engine decided every event alike, and that the
    system refused some and passed some; says so, and returns how many were compared."""
    apart = [i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b]
    assert len(theirs) == len(ours) and apart == [], f"{what}: {apart[:5]}"
    refused = theirs.count(False)
    assert 0 < refused < len(theirs), f"{what}: {refused} refused"
    print(f"{what}: {len(theirs)} requests, {refused} refused, 0 apart")
    return len(theirs)
