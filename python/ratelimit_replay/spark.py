"""The engine on Spark: exact answers from summaries of time-ordered partitions.

A DataFrame is cut by Spark into ranges of (time, tie) (``repartitionByRange``), each
sorted (``sortWithinPartitions``); the engine sums up each range on its executor, in
Rust, as a few integers a rate, and only those summaries reach the driver, where they
are merged in the ranges' order. The merge is exact and associative
(``ratelimit_core::sizing::merge``): the answer is the program's on the same rows, for
any number of partitions.

Keyed, each key stays whole: the rows are cut by a hash of the key
(``repartition``), each partition sorted by (key, time, tie), and each key sized on its
executor; a line per key reaches the driver, where the program's own ranking, quantiles
and cover are made of them.

``min_bucket``, ``curve``, ``decisions``, ``replay`` and ``compare`` run so, of one
stream or per key. Per key, each key's decisions are its own limiter's (or its own
layers'), and what mixes keys in time order (the busiest windows) is found over blocks
of time (``_spark_rows``). One stream is decided in ranges of time, cut where the limiter
rests, each from its true start, or in one pass (``_spark_stream``). Keyed layers beside
global ones run by key where the global ones refuse nothing (``_layers``); what no cut
splits (keys that share one store, layers beside a global one that refuses) runs in one
pass in one task, and says so. Which method is exact is the engine's plan, from the
registry's facts (``_native.Parts.method``): no limiter is named here.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

from . import _keywords, _native, _parts, _share
from ._native import Limit
from ._results import Limited, MinBucket, Recommendation
from ._layers import _BESIDE, _ONE_PASS, _replay_beside
from ._spark_rows import Replayed, _by_bucket, _carried, _check_via, _collect, _keyed_decisions, _keyed_report, _table, _ties
from ._spark_settled import settled_replay
from ._spark_stream import _decisions_of_one_stream, _replay_one_stream, _sequential_decisions, _sequential_report
from .errors import PolicyError

__all__ = ["min_bucket", "recommend", "curve", "decisions", "replay", "compare"]


def min_bucket(
    df: Any,
    *,
    rate: str,
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    tie: str | list[str] | None = None,
    partitions: int | None = None,
    via: str = "map",
    **flags: Any,
) -> list[MinBucket]:
    """Returns the smallest token bucket at ``rate`` (or at each of ``"1/h..100/h"``'s)
    that loses none of the events of Spark DataFrame ``df``: exactly what ``ratelimit
    min-bucket --format json`` prints for the same rows in the same order.

    ``time`` names the time column (Spark timestamps, dates, or text as the program reads
    it, with ``time_format``); ``key`` a column whose values are each sized alone, as
    ``--key`` does (with ``top`` and ``cover``); ``cost`` a column of each event's cost.
    Events at the same
    time are taken in the order of ``tie``, a column that says the rows' order (a row
    number), or several in turn (a Parquet file's ``_metadata.file_path``, then its
    ``_metadata.row_index``, taken as columns); without it their order is
    Spark's, which changes nothing when every event costs the same. ``partitions`` is how
    many ranges Spark makes (its default if ``None``).

    Per key, ``via`` says how whole keys reach the engine: ``"map"`` (the default, Spark
    3.4 and later, and the fastest on 4.3: see docs/spark.md), ``repartition`` by the key,
    ``sortWithinPartitions`` and ``mapInArrow``, the order checked in Rust; ``"apply"``
    (Spark 4.0 and later), ``groupBy`` a hash bucket of the key ``.applyInArrow``, each
    bucket sorted in Rust; ``"udtf"`` (Spark 4.1 and later), an Arrow UDTF over ``TABLE(df)
    PARTITION BY`` a hash bucket of the key ``ORDER BY`` key, time, tie, in the order Spark
    guarantees. A bucket is one of ``partitions``, or of ``spark.sql.shuffle.partitions``.
    ``decisions`` and ``replay`` take it too.
    """
    _check_via(via)
    _zone_less(df, time)
    rates = [rate] if isinstance(rate, str) else list(rate)
    sizing = _native.Sizing(rates, key, cost, _keywords(flags, time))
    if key:
        return _by_key(df, sizing, key, [key, time] + _ties(tie), partitions, via)
    return [MinBucket(row) for row in json.loads(_merged_ranges(df, sizing, [time] + _ties(tie), partitions))]


def recommend(
    df: Any,
    *,
    key: str,
    untouched: float | str = 0.999,
    rate: str | list[str] | None = None,
    prefer: str = "fewest-refused",
    window: str | None = None,
    time: str = "time",
    tie: str | list[str] | None = None,
    partitions: int | None = None,
    via: str = "map",
    **flags: Any,
) -> Recommendation:
    """Recommends a limit for Spark DataFrame ``df``, each value of its ``key`` column a
    client: exactly what ``ratelimit recommend --format json`` prints for the same rows
    (see :func:`ratelimit_replay.recommend`; no ``cost`` or ``system``, which need every
    client's events at once).

    Each client is whole in one bucket (``via``, ``partitions``, ``tie`` as for
    :func:`min_bucket`). Three passes run: the clients' demand (skipped when ``rate`` is
    given), their smallest buckets at each rate, and what the bursts refuse of the clients
    over the line. Only each bucket's counts by size and its ten most refused clients reach
    the driver, and the counts merge exactly: the share is exact, never sketched."""
    _check_via(via)
    _zone_less(df, time)
    rates = [] if rate is None else [rate] if isinstance(rate, str) else list(rate)
    options = _keywords(flags, time, prefer=prefer, window=window)
    parts = _native.RecommendParts(key, rates, _share(untouched), options)
    order = [key, time] + _ties(tie)

    def told(stage: str, rates: list[str], bursts: list[int]) -> list[str]:
        def tell(table, name):
            import pyarrow

            yield pyarrow.RecordBatch.from_pydict({"told": [parts.part(stage, table, name, rates, bursts)]})

        return [row["told"] for row in _collect(_by_bucket(df, key, order, partitions, tell, "told string", via))]

    if not rates:
        rates = parts.rates(told("demand", [], []))
    needs = told("needs", rates, [])
    refusals = told("refusals", rates, parts.bursts(needs))
    return Recommendation(json.loads(parts.answer(rates, needs, refusals)))


def _merged_ranges(df: Any, sizing: Any, order: list[str], partitions: int | None) -> bytes:
    """Sums up each range of one stream in (time, tie) order on its executor
    (``chunk_lines``, in Rust) and merges the summaries in range order on the driver
    (``merge_chunks``): what ``ratelimit min-bucket`` prints, as `sizing` asks."""
    ranged = df.repartitionByRange(partitions, *order) if partitions else df.repartitionByRange(*order)
    ranged = ranged.sortWithinPartitions(*order)

    def summarize(batches):
        # On an executor: this partition's rows, in (time, tie) order, summed up in Rust.
        import pyarrow
        from pyspark import TaskContext

        from ratelimit_replay import _native as native

        table = _table(batches)
        if table is None:
            return
        partition = TaskContext.get().partitionId()
        # A bad row is named by its range and its place there, in (time, tie) order.
        lines = native.chunk_lines(sizing, table, f"<partition {partition}>")
        yield pyarrow.RecordBatch.from_pydict({"partition": [partition], "summary": ["\n".join(lines)]})

    parts = _collect(ranged.mapInArrow(_carried(summarize), "partition long, summary string"))
    # Range partition n holds the n-th range: merged in that order.
    chunks = [row["summary"].split("\n") for row in sorted(parts, key=lambda row: row["partition"])]
    return _native.merge_chunks(sizing, chunks)


def curve(
    df: Any,
    *,
    cost: str | int | None = None,
    time: str = "time",
    tie: str | list[str] | None = None,
    partitions: int | None = None,
    **flags: Any,
) -> Any:
    """Returns the whole burst-rate curve of the rows of Spark DataFrame ``df``, as
    ``ratelimit_replay.curve`` returns it for the same rows: a pyarrow table of (rate,
    min_bucket, ...), a row for each rate where the curve bends, exact. Each range of time
    sends its own curve and two hulls of its cumulative cost
    (``ratelimit_core::sizing::curve_summary``), merged in range order on the driver."""
    from . import _curve_table

    _zone_less(df, time)
    sizing = _native.Sizing([], None, cost, _keywords(flags, time))
    return _curve_table(json.loads(_merged_ranges(df, sizing, [time] + _ties(tie), partitions)))


def decisions(
    df: Any,
    *,
    algo: str | None = None,
    rate: str | None = None,
    key: str | None = None,
    burst: int | None = None,
    cost: str | int | None = None,
    time: str = "time",
    tie: str | list[str] | None = None,
    partitions: int | None = None,
    limits: list[str] | None = None,
    via: str = "map",
    **flags: Any,
) -> Any:
    """Returns ``df`` with a column ``passed``: each row's decision by a limit of ``algo``
    at ``rate`` (with ``burst``), for each value of ``key`` or over every row, exactly as
    ``ratelimit replay [--key KEY] --emit all`` decides it (null for a row that made no
    event). Nothing is collected.

    Per key, each key is decided whole on its executor: its decisions are its own
    limiter's, whatever the other keys do. Over every row (no key), the rows are cut into
    ranges of time; a range is decided from a fresh state where its first event comes
    once the limiter is at rest after the last event before it (a reset cut, exact:
    ``KeyedState::rests_after``), and the ranges between such cuts are decided together,
    in order, in one task; the ranges of a limiter that passes what GCRA passes are each
    decided from their true start instead,
    found by composing the ranges' functions of their start (``limiter::Transfer``). The
    DataFrame's ``ratelimit_method`` says which: ``"reset cuts: N segments"``, ``"transfer
    functions: N ranges"``, or ``"sequential"`` when no cut is found.

    ``limits``, layers all or nothing (the program's ``--limit`` SPECs), add a column for
    each layer, named by its SPEC, whether that layer admitted the row. Layers all keyed
    by one column are decided by key (``"by key"``); keyed layers beside global ones too,
    if every global layer refuses nothing alone (``"by key: the global layers refuse
    nothing"``, found first by deciding each alone; see ``_layers``). What no cut splits
    is decided in one pass, in one task (``"sequential"``, and why): keys that share one
    store, and layers beside a global one that refuses.
    """
    _check_via(via)
    given = dict(algo=algo, rate=rate, burst=burst, key=key, cost=cost, time=time, limits=limits, **flags)
    _zone_less(df, time)
    job = _parts(given)
    names = ["passed", *(limits or [])]
    if limits:
        key = job.key
    if limits and key is None:
        decided, method = _decisions_beside(df, job, limits, [time] + _ties(tie), partitions, via)
        if decided is not None:
            return decided
        decided = _sequential_decisions(df, job, [time] + _ties(tie), names)
        decided.ratelimit_method = method
        return decided
    method, transfer, _ = job.method()
    if method == "one pass":
        return _sequential_decisions(df, job, [time] + _ties(tie), names)
    if not key:
        # A limiter that passes what GCRA passes is decided by GCRA's functions.
        return _decisions_of_one_stream(df, job, [time] + _ties(tie), partitions, transfer)
    return _keyed_decisions(df, job, [key, time] + _ties(tie), partitions, names, via)


def replay(
    df: Any,
    *,
    algo: str | None = None,
    rate: str | None = None,
    key: str | None = None,
    burst: int | None = None,
    window: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    tie: str | list[str] | None = None,
    partitions: int | None = None,
    limits: list[str] | None = None,
    via: str = "map",
    duration: str | None = None,
    end: str | None = None,
    **flags: Any,
) -> dict[str, Any]:
    """Returns what ``ratelimit replay --key KEY --format json`` prints for the rows of
    Spark DataFrame ``df``, a limit of ``algo`` at ``rate`` (with ``burst``) for each value
    of ``key``, as ``ratelimit_replay.replay(...).to_dict()`` returns it; its ``input`` is
    ``<DataFrame>``. Only summaries reach the driver: a partition's, a line a block of time.

    ``tie`` names a column that says the rows' order among events at one time (a row
    number), as for ``min_bucket``.

    Without ``key``, one limit over every row: the rows are decided as ``decisions``
    decides them (reset cuts, transfer functions, or one sequential pass), and the report
    is made of each decided range's figures (counts, and the lossless buckets as
    summaries merged in time order) and of blocks of time (the busiest windows and what
    the promise bounds). The dict's ``method`` attribute names the way the rows were
    decided.

    ``limits``, layers all or nothing (the program's ``--limit`` SPECs), run as
    ``decisions`` runs them: by key (``"by key"``, or ``"by key: the global layers refuse
    nothing"``), or in one pass, in one task (``"sequential"``, and why), as a limiter
    whose keys share one store is (its own size is found there, in one pass).

    ``limits`` settled after the response (``reserve=``, ``charge=``, ``algo=concurrency``),
    with ``duration`` or ``end`` (when each request completes), return what
    ``ratelimit_replay.replay(table, Policy(limits), duration=...)`` returns, a
    ``Settled``: by key where every layer is keyed by the one column (``"by key"``), else
    in one pass in one task (``"one pass: ..."``, and why), as the engine's plan says.
    """
    _check_via(via)
    if limits and (duration is not None or end is not None or any((s if isinstance(s, Limit) else Limit.parse(s))._of_requests for s in limits)):
        if algo is not None or key is not None or cost is not None:
            raise PolicyError("limits= say their own key and cost: give them in each SPEC")
        return settled_replay(df, limits, duration=duration, end=end, window=window, time=time, ties=_ties(tie),
                              partitions=partitions, via=via, options=flags)
    given = dict(algo=algo, rate=rate, burst=burst, window=window, key=key, cost=cost, time=time, limits=limits, **flags)
    _zone_less(df, time)
    job = _parts(given)
    if limits:
        # Layers all keyed by one column decide each key alone: by key, as one limit does.
        key = job.key
    if limits and key is None:
        report, method = _beside(df, job, limits, [time] + _ties(tie), partitions, via)
        report = _sequential_report(df, job, [time] + _ties(tie)) if report is None else Replayed(report)
        report.method = method
        return report
    if job.method(report=True)[0] == "one pass":
        return _sequential_report(df, job, [time] + _ties(tie))
    # With no cost, every event costs 1: its cost, and its ties (which order only the
    # first event too big to pass), need not go on to the blocks.
    light = cost is None and not any("cost=" in spec for spec in limits or [])
    if not key:
        return _replay_one_stream(df, job, [time] + _ties(tie), partitions, light)
    report = Replayed(json.loads(_keyed_report(df, job, [key, time] + _ties(tie), partitions, light, via)))
    report.method = "by key"
    return report


def compare(
    df: Any,
    *,
    rate: str,
    key: str | None = None,
    burst: int | None = None,
    algos: list[str] | None = None,
    **given: Any,
) -> list[Limited]:
    """Returns what ``ratelimit compare [--key KEY] --format json`` prints for the rows of
    ``df``: for each limiter of ``algos`` (the program's six by default), the report of
    ``replay(df, algo=…, rate=rate, key=key, …)``, which is what each row of the program's
    compare is, per key or (no ``key``) over every row; ``burst`` applies to the limiters
    that take one. ``given`` are ``replay``'s other keywords (``cost``, ``time``, ``tie``,
    ``partitions``…)."""
    return _by_replays(replay, df, rate, key, burst, algos, given)


def _zone_less(df: Any, time: str) -> None:
    """Warns, on the caller's line, that a time column of zone-less times
    (``TIMESTAMP_NTZ``) is read as UTC, as the program reads a time without an offset."""
    from pyspark.sql.types import TimestampNTZType

    for name in time.split(","):
        if name in df.columns and isinstance(df.schema[name].dataType, TimestampNTZType):
            warnings.warn(
                f"`{name}` holds times without a zone (TIMESTAMP_NTZ): they are read as UTC; "
                "give a TIMESTAMP to mean another zone",
                UserWarning,
                stacklevel=3,
            )


def _beside(df: Any, job: Any, limits: list[str], order: list[str], partitions: int | None, via: str) -> tuple[dict[str, Any] | None, str]:
    """Layers keyed by one column beside global ones, by key if every global layer
    refuses nothing alone (``_layers``): the report, or ``None``; and the method."""

    def one_stream(frame, job, light, decided):
        return _replay_one_stream(df if frame is None else frame, job, order, partitions, light, decided)

    def keyed_report(job, key, light):
        return _keyed_report(df, job, [key, *order], partitions, light, via)

    def keyed_decisions(job, key):
        return _keyed_decisions(df, job, [key, *order], partitions, ["passed"], via)

    return _replay_beside(job, limits, one_stream, keyed_report, keyed_decisions)


def _decisions_beside(df: Any, job: Any, limits: list[str], order: list[str], partitions: int | None, via: str) -> tuple[Any, str]:
    """`df` decided by layers keyed by one column beside global ones, by key, if every
    global layer refuses nothing alone (its column then true wherever a row made an
    event), and the method; else ``None`` and the method of one pass, with why."""
    from pyspark.sql import functions as F

    split = job.beside()
    if split is None:
        return None, _ONE_PASS
    job, key, apart = split
    places = {place for place, *_ in apart}
    for place, spec, weighed, alone in apart:
        found = _decisions_of_one_stream(df, alone, order, partitions, alone.method()[1])
        if not found.where(~F.col("passed")).isEmpty():
            return None, f"{_ONE_PASS}: `{limits[place]}` refuses alone"
    keyed = [spec for place, spec in enumerate(limits) if place not in places]
    decided = _keyed_decisions(df, job, [key, *order], partitions, ["passed", *keyed], via)
    for place in sorted(places):
        decided = decided.withColumn(limits[place], F.when(F.col("passed").isNotNull(), F.lit(True)))
    # Columns by name, whatever a SPEC holds (dots, commas).
    names = [*df.columns, "passed", *limits]
    decided = decided.select(*(F.col("`" + name.replace("`", "``") + "`") for name in names))
    decided.ratelimit_method = _BESIDE
    return decided, _BESIDE


def _by_replays(replay: Any, frame: Any, rate: str, key: str | None, burst: int | None, algos: list[str] | None, given: dict[str, Any]) -> list[Limited]:
    """A compare made of one ``replay`` of ``frame`` for each limiter of ``algos``
    (the program's own six by default), ``burst`` given to those with one, as the program's
    compare applies it: what each row of the program's compare is."""
    # The registry's: the program's own limiters in its order, and which take a burst.
    limiters = _native.limiters()
    chosen = list(algos) if algos else [name for name, _, own in limiters if own]
    with_burst = {name for name, takes, _ in limiters if takes}
    return [
        Limited(replay(frame, algo=algo, rate=rate, key=key, burst=burst if algo in with_burst else None, **given))
        for algo in chosen
    ]


def _by_key(df: Any, sizing: Any, key: str, order: list[str], partitions: int | None, via: str) -> list[MinBucket]:
    """Sizes each key whole on an executor, and joins the keys' lines on the driver."""

    def size(table, name):
        import pyarrow

        from ratelimit_replay import _native as native

        yield pyarrow.RecordBatch.from_pydict({"line": native.chunk_lines(sizing, table, name)})

    lines = [row["line"] for row in _collect(_by_bucket(df, key, order, partitions, size, "line string", via))]
    return [MinBucket(row) for row in json.loads(_native.merge_chunks(sizing, [lines]))]
