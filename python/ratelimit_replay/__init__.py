"""Replay recorded events through exact rate limiters, as the ``ratelimit`` program does.

Every function takes its data as a path (read as the program reads a FILE) or as anything
that speaks the Arrow PyCapsule interface: a pyarrow ``Table``, ``RecordBatch`` or
``RecordBatchReader``, a polars ``DataFrame``, a DuckDB result's ``.arrow()``, a pandas
frame through ``pyarrow.Table.from_pandas``. The columns are read where they are, without
a copy, and the GIL is released while the engine works.

Keyword arguments are named as the program's flags are (``time_format`` is
``--time-format``), and every answer is the program's own: ``replay(...).to_dict()`` is the
object ``ratelimit replay --format json`` prints for the same rows. Bad input raises
``ValueError`` with the program's one-line message, naming the column and the row.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import os
from typing import Any, Iterable, Mapping

import pyarrow

from . import _native

__all__ = ["Report", "replay", "compare", "min_bucket", "min_rate", "curve", "report", "Limiter", "Outcome"]

# The program's flag for each keyword whose name is not the flag's own.
_RENAMED = {"time": "time_column", "limits": "limit", "where": "where", "algos": "algo"}


class Report:
    """What a replay did: the object ``ratelimit replay --format json`` prints, and each
    row's decision.

    Its top-level fields (``passed``, ``dropped``, ``events``, ``promise``, ...) are
    attributes; ``to_dict()`` gives the whole object.
    """

    def __init__(self, fields: dict[str, Any], decisions: pyarrow.BooleanArray | pyarrow.Table | None):
        self._fields = fields
        #: Each row's decision, in the input's row order, as a pyarrow ``BooleanArray``:
        #: True passed, False dropped, null for a row that made no event (left out by
        #: ``since``, ``until`` or ``where``). With ``limits``, a pyarrow ``Table``: its
        #: column ``passed`` is the decision of all the layers together, and a column for
        #: each layer, named by its SPEC, says whether that layer admitted the row (a row
        #: one layer admits may be dropped by another).
        self.decisions = decisions

    def to_dict(self) -> dict[str, Any]:
        """Returns the object ``ratelimit replay --format json`` prints, as a new dict."""
        return copy.deepcopy(self._fields)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        return f"Report({json.dumps(self._fields)})"


def replay(
    data: Any,
    *,
    algo: str | None = None,
    rate: str | None = None,
    burst: int | None = None,
    window: str | None = None,
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    servers: int | None = None,
    limits: Iterable[str] | None = None,
    **flags: Any,
) -> Report:
    """Replays ``data`` through one limiter (``algo`` at ``rate``, with ``burst``), or
    through several at once (``limits``: the program's ``--limit`` SPECs, such as
    ``"algo=gcra,rate=500/m,burst=500"``), and returns what passed and what was dropped.

    ``key`` names the column whose values each get a limiter of their own; ``cost`` the
    column (or a number) of what each event spends. Any other flag of ``ratelimit replay``
    is a keyword too: ``time_format="unix-ms"``, ``since="2025-01-01"``, ``redis=URL``.
    """
    stdout, decisions = _run(
        "replay",
        data,
        dict(
            algo=algo,
            rate=rate,
            burst=burst,
            window=window,
            key=key,
            cost=cost,
            time=time,
            servers=servers,
            limits=limits,
            **flags,
        ),
        decisions=True,
    )
    fields = json.loads(stdout)
    if decisions is not None:
        columns = [pyarrow.array(column) for column in decisions]
        if "layers" in fields:
            names = ["passed"] + [layer["spec"] for layer in fields["layers"]]
            decisions = pyarrow.table(columns, names=names)
        else:
            decisions = columns[0]
    return Report(fields, decisions)


def compare(
    data: Any,
    *,
    rate: str | None = None,
    burst: int | None = None,
    algos: Iterable[str] | None = None,
    key: str | None = None,
    cost: str | int | None = None,
    limits: Iterable[str] | None = None,
    time: str = "time",
    **flags: Any,
) -> Any:
    """Replays ``data`` through several limiters side by side (``algos``, by default all
    six of the program's own), and returns ``ratelimit compare --format json``'s list.

    With ``limits`` instead of a rate, each a whole configuration as ``compare --limit``
    takes it (``"algo=nginx,rate=10r/s,burst=20,nodelay,key=client"``), returns its object:
    each configuration's report and, with two, what changes from the first to the second
    (``changes``: the events newly refused and newly passed, and the keys that change most).
    """
    args = dict(rate=rate, burst=burst, algos=algos, key=key, cost=cost, limits=limits, time=time, **flags)
    return json.loads(_run("compare", data, args)[0])


def min_bucket(
    data: Any,
    *,
    rate: str | None = None,
    key: str | None = None,
    cost: str | int | None = None,
    cover: str | None = None,
    time: str = "time",
    **flags: Any,
) -> list[dict[str, Any]]:
    """Returns the smallest token bucket at ``rate`` that loses none of ``data``, as
    ``ratelimit min-bucket --format json`` does: one object for each rate (with ``key``,
    each key's too)."""
    args = dict(rate=rate, key=key, cost=cost, cover=cover, time=time, **flags)
    return json.loads(_run("min-bucket", data, args)[0])


def min_rate(
    data: Any,
    *,
    burst: int,
    cost: str | int | None = None,
    time: str = "time",
    **flags: Any,
) -> list[dict[str, Any]]:
    """Returns the smallest rate at which a bucket of ``burst`` loses none of ``data``, as
    ``ratelimit min-rate --format json`` does: one object for each burst."""
    args = dict(burst=burst, cost=cost, time=time, **flags)
    return json.loads(_run("min-rate", data, args)[0])


def curve(
    data: Any, *, key: str | None = None, cost: str | int | None = None, time: str = "time", **flags: Any
) -> pyarrow.Table:
    """Returns the whole burst-rate curve of ``data`` as a pyarrow table of (rate,
    min_bucket): a row for each rate where the curve bends, with the smallest lossless
    bucket there, exact; between one row's rate and the next, the bucket falls by
    ``r·span_s`` as the rate r rises. The other columns are the rest of ``ratelimit
    min-bucket --curve --format json``'s fields: ``rate_per_hour``, ``to``, ``events``,
    ``span_s``, ``start``, ``end`` (the stretch that sets the bucket on the piece)."""
    args = dict(curve=True, key=key, cost=cost, time=time, **flags)
    return _curve_table(json.loads(_run("min-bucket", data, args)[0]))


_CURVE = pyarrow.schema(
    [
        ("rate", pyarrow.string()),
        ("min_bucket", pyarrow.int64()),
        ("rate_per_hour", pyarrow.float64()),
        ("to", pyarrow.string()),
        ("to_per_hour", pyarrow.float64()),
        ("events", pyarrow.int64()),
        ("span_s", pyarrow.float64()),
        ("start", pyarrow.string()),
        ("end", pyarrow.string()),
    ]
)


def _curve_table(pieces: list[dict[str, Any]]) -> pyarrow.Table:
    """The pieces of ``min-bucket --curve --format json`` as ``curve``'s table: with no
    events, a table of no rows, its columns the same."""
    names = {"from": "rate", "from_per_hour": "rate_per_hour"}
    rows = [{names.get(name, name): value for name, value in piece.items()} for piece in pieces]
    return pyarrow.Table.from_pylist(rows, schema=_CURVE)


def report(data: Any, path: str | os.PathLike[str], **flags: Any) -> None:
    """Writes ``ratelimit report``'s HTML page on ``data`` to ``path``; the keywords are
    ``replay``'s."""
    _run("report", data, dict(output=os.fspath(path), **flags))


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A live decision, and what a service may tell its client, as ``ratelimit check``
    tells it."""

    #: Whether the event passed.
    passed: bool
    #: How many more units would pass at once, after this decision.
    remaining: int
    #: How long until an event of this cost would pass: zero if this one did, ``None`` if
    #: it never would (a cost larger than the limit holds).
    retry_after: dt.timedelta | None
    #: How long a passed event waits before it is served, rounded up to the microsecond:
    #: only a leaky queue, and nginx without ``nodelay``, delay.
    wait: dt.timedelta


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICROSECOND = dt.timedelta(microseconds=1)


class Limiter:
    """One limit, decided event by event as it happens: in memory, at the times given (or
    the clock's), or in Redis (``redis="redis://host:6379"``), at the server's clock and
    shared with every process that uses the same keys.

    The keywords are ``ratelimit filter``'s flags: ``algo``, ``rate``, ``burst``, and a
    limiter's own (``nodelay=True``). Threads may share a Limiter: each decision is made
    whole, one at a time, with the GIL released (a Redis round trip holds no other thread
    back).
    """

    def __init__(self, *, algo: str = "gcra", rate: str, burst: int | None = None, redis: str | None = None, **flags: Any):
        argv = ["ratelimit", "filter"]
        for name, value in dict(algo=algo, rate=rate, burst=burst, redis=redis, **flags).items():
            argv += _flag(name, value)
        self._native = _native.Limiter(argv)

    def decide(self, time: dt.datetime | None = None, key: str | bytes | None = None, cost: int = 1) -> Outcome:
        """Decides on an event of ``key`` (one limit for all if ``None``; an empty key
        is a key, which nginx, HAProxy and envoy-ratelimit let through uncounted) that costs
        ``cost`` units, at ``time`` (a datetime with a zone; the clock's time if ``None``,
        and always in Redis). Times must not go back."""
        micros = None
        if time is not None:
            if time.tzinfo is None:
                raise ValueError(f"{time} has no zone: give a datetime with one, such as UTC")
            micros = (time - _EPOCH) // _MICROSECOND
        if key is None or isinstance(key, bytes):
            name = key
        elif isinstance(key, str):
            name = key.encode()
        else:
            raise TypeError(f"key is a {type(key).__name__}: give a str, bytes or None")
        passed, wait, remaining, retry = self._native.decide(micros, name, cost)
        retry_after = None if retry is None else dt.timedelta(microseconds=retry)
        return Outcome(passed, remaining, retry_after, dt.timedelta(microseconds=wait))


def _run(
    command: str, data: Any, args: Mapping[str, Any], decisions: bool = False
) -> tuple[bytes, Any]:
    """Runs ``ratelimit COMMAND`` on ``data`` with ``args`` as its flags."""
    argv = _argv(command, args)
    if isinstance(data, (str, os.PathLike)):
        return _native.call(argv + ["--", os.fspath(data)], None, decisions)
    if not (hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__")):
        raise TypeError(
            f"data is a {type(data).__name__}: give a path or Arrow data "
            "(anything with __arrow_c_stream__, such as a pyarrow Table or a polars DataFrame)"
        )
    return _native.call(argv, data, decisions)


def _argv(command: str, args: Mapping[str, Any]) -> list[str]:
    """Returns the command line of ``ratelimit COMMAND`` with ``args`` as its flags, its
    output JSON (but a report's, which is a page)."""
    argv = ["ratelimit", command] + ([] if command == "report" else ["--format", "json"])
    for name, value in args.items():
        argv += _flag(name, value)
    return argv


def _flag(name: str, value: Any) -> list[str]:
    """Returns the command-line words of keyword ``name`` given ``value``."""
    if value is None or value is False:
        return []
    # The time column's default is the program's; said only when it is another.
    if name == "time" and value == "time":
        return []
    flag = "--" + _RENAMED.get(name, name).replace("_", "-")
    if value is True:
        return [flag]
    if isinstance(value, (list, tuple)):
        return [word for item in value for word in (flag, str(item))]
    return [flag, str(value)]
