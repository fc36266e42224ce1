"""Replay recorded events through exact rate limiters, as the ``ratelimit`` program does.

Every function takes its data as a path (read as the program reads a FILE) or as anything
that speaks the Arrow PyCapsule interface: a pyarrow ``Table``, ``RecordBatch`` or
``RecordBatchReader``, a polars ``DataFrame``, a DuckDB result's ``.arrow()``, a pandas
frame through ``pyarrow.Table.from_pandas``. The columns are read where they are, without
a copy, and the GIL is released while the engine works.

A limit is a :class:`Limit`, checked whole when it is built (``Limit("gcra", "5/h",
burst=5)``); limits that decide together, all or nothing, are a :class:`Policy`. Other
keyword arguments are named as the program's flags are (``time_format`` is
``--time-format``), and every answer is the program's own: ``replay(...).to_dict()`` is the
object ``ratelimit replay --format json`` prints for the same rows.

Errors are typed (:mod:`ratelimit_replay.errors`): bad data raises :class:`InputError`,
naming its column and its row (or its file and line); a limit that is no limit
:class:`PolicyError`; Redis :class:`BackendError`; an argument no call takes
``TypeError``. The program's notes are :class:`RatelimitWarning` warnings.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import decimal
import json
import os
from typing import Any, Iterable, Union, overload

import pyarrow

from . import _native
from ._native import Limit, Policy
from ._results import (
    Configurations, LayerNeeds, Limited, MinBucket, MinLimit, MinRate, MinTier, Recommendation, Settled, SettledLayer,
    Span, Window,
    _Figures,
)
from .errors import BackendError, InputError, PolicyError, RatelimitError, RatelimitWarning

__all__ = [
    "Limit",
    "Policy",
    "Report",
    "Window",
    "Layer",
    "Limited",
    "Configurations",
    "MinBucket",
    "MinRate",
    "Recommendation",
    "LayerNeeds",
    "Settled",
    "SettledLayer",
    "MinLimit",
    "MinTier",
    "Span",
    "replay",
    "compare",
    "min_bucket",
    "min_rate",
    "recommend",
    "min_limit",
    "min_tier",
    "presets",
    "curve",
    "report",
    "Limiter",
    "Outcome",
    "SettledLimiter",
    "Admission",
    "RatelimitError",
    "InputError",
    "PolicyError",
    "BackendError",
    "RatelimitWarning",
]

#: A limit alone, or limits all or nothing.
Limits = Union[Limit, Policy]

class _Object:
    """An object of the program's JSON: its fields, each also an attribute."""

    def __init__(self, fields: dict[str, Any]):
        self._fields = fields

    def to_dict(self) -> dict[str, Any]:
        """Returns the object as ``ratelimit replay --format json`` prints it, as a new dict."""
        return copy.deepcopy(self._fields)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({json.dumps(self._fields)})"

    def _field(self, name: str) -> Any:
        return self._fields.get(name)


class Layer(_Object, _Figures):
    """One layer of a :class:`Policy`, in a report: its own figures, and what it refused."""

    @property
    def spec(self) -> str:
        """The layer as ``--limit`` writes it."""
        return str(self._fields["spec"])

    @property
    def refused(self) -> int:
        """The events this layer refused (an event may be refused by several)."""
        return int(self._fields["refused"])

    def __getitem__(self, name: str) -> Any:
        # As the layer's dict is read: report.layers[0]["refused"].
        return self._fields[name]


class Report(_Object, _Figures):
    """What a replay did: the object ``ratelimit replay --format json`` prints, and each
    row's decision.

    Its figures are typed attributes (``passed``, ``dropped``, ``busiest_window``,
    ``min_bucket``, ``layers``, ``keys``, ...); any other top-level field of the JSON is an
    attribute too, and ``to_dict()`` gives the whole object.
    """

    def __init__(self, fields: dict[str, Any], decisions: pyarrow.BooleanArray | pyarrow.Table):
        super().__init__(fields)
        #: Each row's decision, in the input's row order, as a pyarrow ``BooleanArray``:
        #: True passed, False dropped, null for a row that made no event (left out by
        #: ``since``, ``until`` or ``where``). With a :class:`Policy`, a pyarrow ``Table``:
        #: its column ``passed`` is the decision of all the layers together, and a column
        #: for each layer, named by its SPEC, says whether that layer admitted the row (a
        #: row one layer admits may be dropped by another).
        self.decisions = decisions

    @property
    def input(self) -> str:
        """The input's name: its path, or ``<arrow>``."""
        return str(self._fields["input"])

    @property
    def layers(self) -> list[Layer]:
        """Each layer of a policy, in order; empty for one limit."""
        return [Layer(fields) for fields in self._fields.get("layers", [])]

    @property
    def keys(self) -> dict[str, Any] | None:
        """With a key: how many keys, the spread of their figures, and the top keys."""
        keys = self._fields.get("keys")
        return None if keys is None else copy.deepcopy(keys)


@overload
def replay(
    data: Any,
    policy: Limits | None = None,
    *,
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    algo: str | None = None,
    rate: str | None = None,
    burst: int | None = None,
    window: str | None = None,
    servers: int | None = None,
    limits: Iterable[str] | None = None,
    duration: None = None,
    end: None = None,
    **flags: Any,
) -> Report: ...


@overload
def replay(
    data: Any,
    policy: Limits | None = None,
    *,
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    window: str | None = None,
    limits: Iterable[str] | None = None,
    duration: str,
    retry: str | None = None,
    **flags: Any,
) -> Settled: ...


@overload
def replay(
    data: Any,
    policy: Limits | None = None,
    *,
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    window: str | None = None,
    limits: Iterable[str] | None = None,
    end: str,
    retry: str | None = None,
    **flags: Any,
) -> Settled: ...


def replay(
    data: Any,
    policy: Limits | None = None,
    *,
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    algo: str | None = None,
    rate: str | None = None,
    burst: int | None = None,
    window: str | None = None,
    servers: int | None = None,
    limits: Iterable[str] | None = None,
    duration: str | None = None,
    end: str | None = None,
    retry: str | None = None,
    **flags: Any,
) -> Report | Settled:
    """Replays ``data`` through ``policy``: one :class:`Limit`, or a :class:`Policy` of
    several all or nothing, and returns what passed and what was dropped.

    ``key`` names the column whose values each get a limiter of their own; ``cost`` the
    column (or a number) of what each event spends. What to read, and where the limits
    run, are keywords named as the program's flags: ``time_format="unix-ms"``,
    ``since="2025-01-01"``, ``redis=URL``, ``servers=4`` (a simulated fleet).
    In place of a policy, the shorthand ``algo=``, ``rate=``, ``burst=`` (one limit) or
    ``limits=`` (the program's ``--limit`` SPECs) still works.

    With ``duration=`` (the column of each request's duration: bare numbers are
    milliseconds, ``"850ms"`` and ``"1.2s"`` carry a unit) or ``end=`` (the column of its
    end time), each row is a request that completes, and the limits may be settled after
    the response, as LLM limits are: ``Limit("gcra", "10000/m", burst=10000,
    reserve="prompt_tokens+max_tokens", cost="prompt_tokens+completion_tokens")``,
    ``charge="completion"``, or ``Limit("concurrency", max=50, key="user")``. It returns a
    :class:`Settled`, what ``ratelimit replay --duration --format json`` prints. With
    ``retry="after"`` (after the limiter's retry-after) or ``retry="exp:base=1s,cap=60s,
    max=5,seed=1"`` (a seeded backoff with jitter), refused requests come back: a
    simulation, in ``Settled.retry``.
    """
    each, layered, window, options = _resolved(
        policy, key=key, cost=cost, algo=algo, rate=rate, burst=burst, window=window, limits=limits, flags=flags,
        time=time, servers=servers,
    )
    if duration is not None or end is not None or retry is not None or any(limit._of_requests for limit in each):
        if options.pop("servers", None) is not None:
            raise PolicyError("servers= is not taken by limits settled after the response, which run in memory")
        found = _native.settled_replay(_data(data), each, window, duration=duration, end=end, retry=retry,
                                       options=options)
        return Settled(json.loads(found))
    stdout, decisions = _native.replay(_data(data), each, layered, window, options=options)
    return _report(json.loads(stdout), [pyarrow.array(column) for column in decisions])


def min_limit(
    data: Any,
    *,
    per: str | None = None,
    cost: str | int = 1,
    reserve: str | int | None = None,
    charge: str | None = None,
    duration: str | None = None,
    end: str | None = None,
    key: str | None = None,
    concurrency: bool = False,
    time: str = "time",
    **flags: Any,
) -> MinLimit:
    """Returns the smallest limit L that refuses none of the requests of ``data``: a
    provider's bucket of L, refilled at L each ``per`` (``"1m"`` for a limit a minute, as
    TPM and RPM are written), as ``ratelimit min-limit --format json`` does.

    Each request costs ``cost`` (a number, a column, or columns summed:
    ``"prompt_tokens+completion_tokens"``), charged at arrival, or as ``charge`` says:
    ``reserve`` (reserving the estimate ``reserve`` and settling at completion) or
    ``completion``. Requests complete after their ``duration`` column or at their ``end``
    column. With ``key``, the key that needs the most, and each key's quantiles; with
    ``concurrency``, the fewest requests in flight a cap needs instead."""
    options = _keywords(flags, time)
    found = _native.min_limit(
        _data(data), per=per, cost=cost, reserve=reserve, charge=charge, duration=duration, end=end, key=key,
        concurrency=concurrency, options=options,
    )
    return MinLimit(json.loads(found))


def min_tier(data: Any, preset: str, *, duration: str | None = None, end: str | None = None,
             time: str = "time", **flags: Any) -> MinTier:
    """Replays the requests of ``data`` through every tier of a provider's ``preset``
    (``"anthropic:*:claude-sonnet"``, as :func:`presets` lists them) and names the smallest
    that refuses none, as ``ratelimit min-limit --preset --format json`` does. Requests
    complete after their ``duration`` column or at their ``end`` column; the columns
    ``prompt_tokens``, ``max_tokens`` and ``completion_tokens`` are counted as the provider
    counts them."""
    options = _keywords(flags, time)
    found = _native.min_tier(_data(data), preset, duration=duration, end=end, options=options)
    return MinTier(json.loads(found))


def presets() -> list[dict[str, Any]]:
    """The providers' published limits the package carries, as ``ratelimit presets
    --format json`` lists them: each with its ``name`` (what :meth:`Policy.preset` and
    :func:`min_tier` take), its figures, the ``date`` it was read, its ``source``, and the
    ``layers`` it is. Presets go stale: check your own limits before you trust one."""
    listed: list[dict[str, Any]] = json.loads(_native.presets())
    return listed


def _resolved(
    policy: Limits | None,
    *,
    key: str | None,
    cost: str | int | None,
    algo: str | None,
    rate: str | None,
    burst: int | None,
    window: str | None,
    limits: Iterable[str] | None,
    flags: dict[str, Any],
    time: str = "time",
    servers: int | None = None,
    function: str = "replay",
) -> tuple[list[Limit], bool, str | None, dict[str, Any]]:
    """What ``replay`` (or ``function``, which takes its keywords) is asked: each limit
    (with ``key`` and ``cost`` if one alone), whether they are layers, the busiest windows'
    length, and the other keywords (with ``time`` and ``servers``)."""
    if policy is None:
        params, options = _native.shorthand(function, flags)
        if limits is not None:
            if algo is not None or params:
                raise PolicyError("give limits= or algo=, not both")
            if key is not None or cost is not None:
                word = "key" if key is not None else "cost"
                raise PolicyError(f"limits= say their own {word}: give it in each SPEC")
            policy = Policy([Limit.parse(spec) for spec in limits])
        elif algo is not None:
            policy = Limit(algo, rate, burst=burst, window=window, key=key, cost=cost, **params)
            key = cost = None
        else:
            raise PolicyError("give a Limit or a Policy, or algo= and rate=")
    else:
        given = dict(algo=algo, rate=rate, burst=burst, limits=limits)
        named = [name for name, value in given.items() if value is not None]
        if named:
            raise PolicyError(f"give a Limit or a Policy, or {named[0]}=, not both")
        options = flags
    if isinstance(policy, Policy):
        if key is not None or cost is not None:
            word = "key" if key is not None else "cost"
            raise PolicyError(f"a Policy's limits say their own {word}: give it to each Limit")
        windows = [limit.window for limit in policy.limits if limit.window is not None]
        window = window if window is not None else windows[0] if windows else None
        return list(policy.limits), True, window, _keywords(options, time, servers=servers)
    if isinstance(policy, Limit):
        window = window if window is not None else policy.window
        return [_with_columns(policy, key=key, cost=cost)], False, window, _keywords(options, time, servers=servers)
    raise TypeError(f"policy is a {type(policy).__name__}: give a Limit or a Policy")


def _parts(given: dict[str, Any]) -> Any:
    """A replay in parts (``_native.Parts``) of the shorthand keywords ``given`` (``algo=``,
    ``rate=``, ``limits=``, ``key=``, ``time=`` and the reading keywords), as ``replay``
    takes them."""
    flags = dict(given)
    named = {name: flags.pop(name, None) for name in ("key", "cost", "algo", "rate", "burst", "window", "limits")}
    time = flags.pop("time", "time")
    each, layered, window, options = _resolved(None, flags=flags, time=time, **named)
    return _native.Parts(each, layered, window, options=options)


def _keywords(given: dict[str, Any], time: str, **more: Any) -> dict[str, Any]:
    """The keywords of a call as the native part takes them: `given` and `more`, with the
    time column said only when it is not the program's default (``time``)."""
    return dict(given, time=None if time == "time" else time, **more)


def _data(data: Any) -> Any:
    """``data`` as the native calls take it: a path, or Arrow data."""
    if isinstance(data, (str, os.PathLike)):
        return os.fspath(data)
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        return data
    raise TypeError(
        f"data is a {type(data).__name__}: give a path or Arrow data "
        "(anything with __arrow_c_stream__, such as a pyarrow Table or a polars DataFrame)"
    )


def _report(fields: dict[str, Any], columns: list[Any]) -> Report:
    """The Report of a replay's JSON and its decisions' columns."""
    if "layers" in fields:
        names = ["passed"] + [layer["spec"] for layer in fields["layers"]]
        return Report(fields, pyarrow.table(columns, names=names))
    return Report(fields, columns[0])


def _with_columns(limit: Limit, *, key: Any = None, cost: Any = None) -> Limit:
    """``limit`` with the call's ``key`` and ``cost`` where it has none; both is an error
    unless they agree."""
    own_cost = None if limit.cost == 1 else limit.cost
    for word, own, theirs in (("key", limit.key, key), ("cost", own_cost, cost)):
        if own is not None and theirs is not None and own != theirs:
            raise PolicyError(f"{word}={theirs!r} and the Limit's {word}={own!r} say two things: give one")
    if (key is None or key == limit.key) and (cost is None or cost == own_cost):
        return limit
    return Limit(
        limit.algo,
        limit.rate,
        burst=limit.burst,
        window=limit.window,
        key=limit.key if limit.key is not None else key,
        cost=own_cost if own_cost is not None else cost,
        charge=None if limit.reserve is not None else limit.charge,
        reserve=limit.reserve,
        max=limit.max,
        **limit.params,
    )


@overload
def compare(
    data: Any,
    limits: None = None,
    *,
    rate: str,
    burst: int | None = None,
    algos: Iterable[str] | None = None,
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    **flags: Any,
) -> list[Limited]: ...


@overload
def compare(data: Any, limits: Iterable[Limit | str], *, time: str = "time", **flags: Any) -> Configurations: ...


def compare(
    data: Any,
    limits: Iterable[Limit | str] | None = None,
    *,
    rate: str | None = None,
    burst: int | None = None,
    algos: Iterable[str] | None = None,
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    **flags: Any,
) -> list[Limited] | Configurations:
    """Replays ``data`` through several limiters side by side (``algos``, by default all
    six of the program's own), and returns ``ratelimit compare --format json``'s list:
    each limiter's report, a :class:`Limited`.

    With ``limits`` instead of a rate, each a whole configuration: a :class:`Limit`, or a
    SPEC as ``compare --limit`` takes it (``"algo=nginx,rate=10r/s,burst=20,nodelay,key=client"``), returns its object,
    :class:`Configurations`: each configuration's report and, with two, what changes from
    the first to the second (``changes``: the events newly refused and newly passed, and
    the keys that change most).
    """
    if limits is not None:
        given = dict(rate=rate, burst=burst, algos=algos, key=key, cost=cost)
        named = [name for name, value in given.items() if value is not None]
        if named:
            raise PolicyError(f"give limits= or {named[0]}=, not both: each configuration says its own")
        each = [limit if isinstance(limit, Limit) else Limit.parse(limit) for limit in limits]
        options = _keywords(flags, time)
        return Configurations(json.loads(_native.configurations(_data(data), each, options=options)))
    if rate is None:
        raise PolicyError("compare needs rate= (the limiters at one rate), or limits=: each a whole configuration")
    params, options = _native.shorthand("compare", flags)
    options = _keywords(options, time)
    algo_names = None if algos is None else [algos] if isinstance(algos, str) else list(algos)
    found = _native.compare(
        _data(data), rate, burst=burst, algos=algo_names, key=key, cost=cost, params=params, options=options
    )
    return [Limited(row) for row in json.loads(found)]


@overload
def min_bucket(
    data: Any,
    *,
    rate: str | Iterable[str],
    key: str | None = None,
    cost: str | int | None = None,
    cover: str | None = None,
    time: str = "time",
    **flags: Any,
) -> list[MinBucket]: ...


@overload
def min_bucket(data: Any, *, limits: Iterable[Limit | str], time: str = "time", **flags: Any) -> LayerNeeds: ...


def min_bucket(
    data: Any,
    *,
    rate: str | Iterable[str] | None = None,
    key: str | None = None,
    cost: str | int | None = None,
    cover: str | None = None,
    time: str = "time",
    limits: Iterable[Limit | str] | None = None,
    **flags: Any,
) -> list[MinBucket] | LayerNeeds:
    """Returns the smallest token bucket at ``rate`` that loses none of ``data``, as
    ``ratelimit min-bucket --format json`` does: a :class:`MinBucket` for each rate (with
    ``key``, of the key that needs most, and each key's too). ``rate`` is a rate, a comma
    list, a range (``"1/h..20/h"``) or a list of them; ``system="nginx"`` (or ``haproxy``,
    ``traefik``) also answers in the system's own terms, as ``--for`` does. With
    ``limits=`` (layers all or nothing, each a :class:`Limit` or a SPEC) in place of a rate,
    returns each layer's need, :class:`LayerNeeds`."""
    if limits is not None:
        # Each layer's need: the layers replayed all or nothing, as `min-bucket --limit`.
        given = dict(rate=rate, key=key, cost=cost, cover=cover)
        named = [name for name, value in given.items() if value is not None]
        if named:
            raise PolicyError(f"give limits= or {named[0]}=, not both: each layer says its own")
        each = [limit if isinstance(limit, Limit) else Limit.parse(limit) for limit in limits]
        options = _keywords(flags, time)
        needs, _ = _native.replay(_data(data), each, True, options=options, needs=True)
        return LayerNeeds(json.loads(needs))
    if rate is None:
        raise PolicyError("min_bucket needs rate=: a rate, a list or a range (or limits=)")
    rates = [rate] if isinstance(rate, str) else [str(each) for each in rate]
    options = _keywords(flags, time, cover=cover)
    found = _native.min_bucket(_data(data), rates, key=key, cost=cost, options=options)
    return [MinBucket(row) for row in json.loads(found)]


def min_rate(
    data: Any,
    *,
    burst: int | str | Iterable[int],
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    **flags: Any,
) -> list[MinRate]:
    """Returns the smallest rate at which a bucket of ``burst`` loses none of ``data``, as
    ``ratelimit min-rate --format json`` does: a :class:`MinRate` for each burst (an int, a
    comma list, or a list). With ``key``, each value of that column has a bucket of its
    own, as with :func:`min_bucket`: the rate is the highest any key needs, and
    ``worst_key`` names that key."""
    options = _keywords(flags, time)
    bursts = burst if isinstance(burst, (int, str)) else [int(each) for each in burst]
    found = _native.min_rate(_data(data), bursts, key=key, cost=cost, options=options)
    return [MinRate(row) for row in json.loads(found)]


def recommend(
    data: Any,
    *,
    key: str,
    untouched: float | str = 0.999,
    rate: str | Iterable[str] | None = None,
    prefer: str = "fewest-refused",
    window: str | None = None,
    system: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    **flags: Any,
) -> Recommendation:
    """Recommends a limit for ``data``, each value of its ``key`` column a client, as
    ``ratelimit recommend --format json`` does: for each rate (``rate``, a rate, a comma list,
    a range or a list of them; by default 20 round rates spread over the keys' demand), the
    least burst that leaves at least the share ``untouched`` of the keys (0.999, or
    ``"99.9%"``) untouched, what the others lose, and the point recommended (``prefer``:
    ``fewest-refused``, ``smaller-burst`` or ``lower-rate``). ``window="1m"`` adds each key's
    busiest count in a window of that length; ``cost`` the units' limits and both together;
    ``system="nginx"`` (or ``traefik``) writes the point as the system's configuration. The
    share is exact: every key's smallest bucket is counted, none sketched."""
    share = _share(untouched)
    rates = [] if rate is None else [rate] if isinstance(rate, str) else [str(each) for each in rate]
    options = _keywords(flags, time, prefer=prefer, window=window, system=system)
    found = _native.recommend(_data(data), key, rates=rates, untouched=share, cost=cost, options=options)
    return Recommendation(json.loads(found))


def _share(untouched: float | str) -> str:
    """A share as the native part reads it, a percentage: 0.999 is ``99.9%``, read from the
    float's shortest decimal form, so that no binary rounding moves it."""
    if isinstance(untouched, str):
        return untouched
    if isinstance(untouched, bool) or not isinstance(untouched, (int, float)):
        raise PolicyError(f"untouched={untouched!r}: a share is a number above 0 and at most 1, or a percentage")
    percent = decimal.Decimal(repr(float(untouched))) * 100
    if not 0 < percent <= 100:
        raise PolicyError(f"untouched={untouched!r}: a share is above 0 and at most 1")
    return f"{percent.normalize():f}%"


def curve(
    data: Any, *, key: str | None = None, cost: str | int | None = None, time: str = "time", **flags: Any
) -> pyarrow.Table:
    """Returns the whole burst-rate curve of ``data`` as a pyarrow table of (rate,
    min_bucket): a row for each rate where the curve bends, with the smallest lossless
    bucket there, exact; between one row's rate and the next, the bucket falls by
    ``r·span_s`` as the rate r rises. The other columns are the rest of ``ratelimit
    min-bucket --curve --format json``'s fields: ``rate_per_hour``, ``to``, ``events``,
    ``span_s``, ``start``, ``end`` (the stretch that sets the bucket on the piece)."""
    options = _keywords(flags, time)
    return _curve_table(json.loads(_native.curve(_data(data), key=key, cost=cost, options=options)))


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


def report(
    data: Any,
    path: str | os.PathLike[str],
    policy: Limits | None = None,
    *,
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    algo: str | None = None,
    rate: str | None = None,
    burst: int | None = None,
    window: str | None = None,
    servers: int | None = None,
    limits: Iterable[str] | None = None,
    side_by_side: bool = False,
    **flags: Any,
) -> None:
    """Writes the report page of ``data`` to ``path``, as ``ratelimit report -o PATH``
    writes it: one self-contained HTML file, led by ``policy`` (one :class:`Limit`, or the
    first of a :class:`Policy`, whose limits are shown as layers; with ``side_by_side``,
    each a whole configuration). The keywords are ``replay``'s, with ``cover="90%"`` (the
    share of keys the page says a burst keeps whole). The file is written whole or not at
    all, and never over ``data``'s own file.
    """
    each, layered, window, options = _resolved(
        policy, key=key, cost=cost, algo=algo, rate=rate, burst=burst, window=window, limits=limits, flags=flags,
        time=time, servers=servers, function="report",
    )
    _native.report(_data(data), os.fspath(path), each, layered, window, side_by_side=side_by_side, options=options)


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


@dataclasses.dataclass(frozen=True)
class Admission:
    """A live decision on a request settled after the response: whether it passed, the
    ``id`` that settles it, the layers that refused it, and when it would pass."""

    #: Whether every layer admitted it.
    passed: bool
    #: What :meth:`SettledLimiter.settle` settles it by, if it passed; else None.
    id: int | None
    #: The layers that refused it, by their place in the policy (from 0).
    refused: list[int]
    #: How long until it would pass, were nothing else to happen but time (a refill, or a
    #: request in flight ending): zero if it passed, ``None`` if it never would.
    retry_after: dt.timedelta | None


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICROSECOND = dt.timedelta(microseconds=1)


def _micros(time: dt.datetime | None) -> int | None:
    """``time`` in µs after 1970, if given; a datetime without a zone is a ``ValueError``."""
    if time is None:
        return None
    if time.tzinfo is None:
        raise ValueError(f"{time} has no zone: give a datetime with one, such as UTC")
    return (time - _EPOCH) // _MICROSECOND


def _limits_of(policy: Limits) -> list[Limit]:
    """The limits of a :class:`Limit` or a :class:`Policy`."""
    if isinstance(policy, Policy):
        return policy.limits
    if isinstance(policy, Limit):
        return [policy]
    raise TypeError(f"policy is a {type(policy).__name__}: give a Limit or a Policy")


def _key_bytes(key: str | bytes | None) -> bytes | None:
    """A key as the engine takes it."""
    if key is None or isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode()
    raise TypeError(f"key is a {type(key).__name__}: give a str, bytes or None")


class SettledLimiter:
    """A :class:`Limit`, or a :class:`Policy`, settled after the response, decided live:
    :meth:`decide` a request when it comes, with the values its estimates sum
    (``values={"prompt_tokens": 30, "max_tokens": 200}``), then :meth:`settle` it by its
    ``id`` when its response ends, with the real counts (``values={"completion_tokens":
    120}``, or one ``cost`` for every layer). Layers reserve, charge at completion or cap
    requests in flight as they say; times must not go back. Threads may share it.

    In memory by default. With ``redis="redis://host:6379"`` (one server, not a cluster)
    the layers' limiters and caps are kept in Redis and shared with every process that
    uses the same keys, as ``ratelimit check --settle`` keeps them: each decision and each
    settlement is one script call at the server's clock (give no ``time``), and no
    ``retry_after`` is known of a refusal. Token buckets, GCRA, fixed windows,
    sliding-window counters, sliding logs and caps are kept there.
    """

    def __init__(
        self,
        policy: Limits,
        *,
        redis: str | None = None,
        redis_prefix: str | None = None,
        redis_timeout: str | None = None,
    ) -> None:
        urls = [] if redis is None else [redis]
        self._native = _native.SettlingLimiter(
            _limits_of(policy), redis=urls, redis_prefix=redis_prefix, redis_timeout=redis_timeout
        )

    def decide(
        self, time: dt.datetime | None = None, key: str | bytes | None = None, *, values: dict[str, int] | None = None
    ) -> Admission:
        """Decides a request of ``key`` at ``time`` (the clock's if ``None``): each layer is
        asked its estimate (``reserve=``), 1 (``charge="completion"``) or its cost, summed
        from ``values``. A request that passes is in flight until settled."""
        passed, ticket, refused, retry = self._native.decide(_micros(time), _key_bytes(key), dict(values or {}))
        retry_after = None if retry is None else dt.timedelta(microseconds=retry)
        return Admission(passed, ticket, list(refused), retry_after)

    def settle(
        self, id: int, cost: int | None = None, *, time: dt.datetime | None = None, values: dict[str, int] | None = None
    ) -> None:
        """Settles the request ``id`` when its response ends, at ``time`` (the clock's if
        ``None``): every layer at the real ``cost`` if given, else each at its ``cost=``
        sum of the values it was decided with and ``values``. A reservation gives back what
        it did not use; a charge after the response may go into debt."""
        self._native.settle(id, _micros(time), cost, dict(values or {}))

    @property
    def open(self) -> int:
        """The requests decided, passed and not yet settled."""
        return int(self._native.open())


class Limiter:
    """A :class:`Limit`, or a :class:`Policy` of several all or nothing, decided event by
    event as it happens: in memory, at the times given (or the clock's), or in Redis
    (``redis="redis://host:6379"``, or a cluster's seed nodes), at the server's clock and
    shared with every process that uses the same keys.

    One limit alone is keyed by each call's ``key``; in a Policy, the limits given a
    ``key=`` are, and the others are one limit for all. The shorthand ``algo=``, ``rate=``,
    ``burst=`` and a limiter's own (``nodelay=True``) still works. Threads may share a
    Limiter: each decision is made whole, one at a time, with the GIL released (a Redis
    round trip holds no other thread back).
    """

    def __init__(
        self,
        policy: Limits | None = None,
        *,
        redis: str | Iterable[str] | None = None,
        redis_prefix: str | None = None,
        redis_timeout: str | None = None,
        empty_key: str | bytes | None = None,
        stop_counting_over_limit: bool = False,
        algo: str | None = None,
        rate: str | None = None,
        burst: int | None = None,
        **params: Any,
    ) -> None:
        if policy is None:
            if algo is None:
                raise PolicyError("give a Limit or a Policy, or algo= and rate=")
            policy = Limit(algo, rate, burst=burst, **params)
        else:
            given = [name for name, value in dict(algo=algo, rate=rate, burst=burst, **params).items() if value is not None]
            if given:
                raise PolicyError(f"give a Limit or a Policy, or {given[0]}=, not both")
        limits = _limits_of(policy)
        settled = next((limit for limit in limits if limit._of_requests), None)
        if settled is not None:
            raise PolicyError(f"Limit {settled} is settled after the response: decide it live with SettledLimiter")
        urls = [] if redis is None else [redis] if isinstance(redis, str) else list(redis)
        empty = empty_key.encode() if isinstance(empty_key, str) else empty_key
        self._native = _native.Limiter(
            limits,
            redis=urls,
            redis_prefix=redis_prefix,
            redis_timeout=redis_timeout,
            empty_key=empty,
            stop_counting_over_limit=stop_counting_over_limit,
        )

    def decide(
        self, time: dt.datetime | None = None, key: str | bytes | None = None, cost: int | None = None
    ) -> Outcome:
        """Decides on an event of ``key`` (one limit for all if ``None``; an empty key
        is a key, which nginx, HAProxy and envoy-ratelimit let through uncounted) that costs
        ``cost`` units, at ``time`` (a datetime with a zone; the clock's time if ``None``,
        and always in Redis). Times must not go back.

        One limit alone is charged ``cost`` (its own ``cost=`` number, or 1, if ``None``);
        in a Policy, the limits weighed by a column are charged ``cost`` (1 if ``None``),
        and those weighed by a number that number."""
        passed, wait, remaining, retry = self._native.decide(_micros(time), _key_bytes(key), cost)
        retry_after = None if retry is None else dt.timedelta(microseconds=retry)
        return Outcome(passed, remaining, retry_after, dt.timedelta(microseconds=wait))
