"""Limits settled after the response on Spark, as the engine's plan says (``settled_method``):

- **by key**, where every layer is keyed by the one column: whole keys are replayed where
  they lie, each part's figures (integers) reach the driver and merge in Rust; the most
  admitted requests in flight at once of all keys, which mixes keys, is found from the
  admitted requests' arrivals and completions, cut by time (``repartitionByRange``), each
  range summed up as where it starts, how many more it leaves in flight, and the most more
  within it;
- **in one pass**, in one task, where a layer counts every key's requests together.

At one time, completions come first, then arrivals in the order of ``tie`` (then of key
and row): the program's order on rows so ordered.
"""

from __future__ import annotations

import json
from typing import Any

from ._native import Limit
from ._results import Settled
from ._spark_rows import _by_bucket, _carried, _collect, _in_one_task, _table


def settled_replay(
    df: Any,
    limits: list[Any],
    *,
    duration: str | None,
    end: str | None,
    window: str | None,
    time: str,
    ties: list[str],
    partitions: int | None,
    via: str,
    options: dict[str, Any],
) -> Settled:
    """What ``ratelimit_replay.replay(table, Policy(limits), duration=...)`` returns for the
    rows of ``df``, its ``input`` ``<DataFrame>``; its ``method`` says how it was found."""
    from ratelimit_replay import _native

    layers = [limit if isinstance(limit, Limit) else Limit.parse(limit) for limit in limits]
    method, said = _native.settled_method(layers, duration=duration, end=end)
    asked = dict(options, time=time)
    if method == "one pass":
        report = _in_one_pass(df, layers, [time] + ties, duration, end, window, asked)
        report.method = f"one pass: {said}"
        return report
    key = said
    order = [key, time] + ties
    # The columns that order arrivals at one time, after the tie: the key, then the row.
    carried = ties + [key]
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType(
        [StructField("part", StringType()), StructField("a", LongType()), StructField("c", LongType()),
         StructField("row", LongType())] + [StructField(name, df.schema[name].dataType) for name in carried]
    )

    def part(table: Any, name: str) -> Any:
        # On an executor: whole keys replayed; a row of the part's figures, then a row for
        # each admitted request.
        import pyarrow

        from ratelimit_replay import _native as native

        found, arrivals, completions, rows = native.settled_part(
            table, layers, window, duration=duration, end=end, options=asked
        )
        taken = table.take(pyarrow.array(rows, pyarrow.uint64()))
        flights = {"part": pyarrow.nulls(len(rows), pyarrow.string()), "a": pyarrow.array(arrivals, pyarrow.int64()),
                   "c": pyarrow.array(completions, pyarrow.int64()), "row": pyarrow.array(rows, pyarrow.int64())}
        flights.update({name: taken[name] for name in carried})
        flown = pyarrow.table(flights)
        said = pyarrow.table({field.name: pyarrow.nulls(1, flown.schema.field(field.name).type) for field in flown.schema})
        said = said.set_column(0, "part", pyarrow.array([bytes(found).decode()]))
        yield from pyarrow.concat_tables([said, flown]).to_batches()

    replayed = _by_bucket(df, key, order, partitions, part, schema, via).persist()
    try:
        parts = [row["part"].encode() for row in _collect(replayed.where(F.col("part").isNotNull()).select("part"))]
        flights = replayed.where(F.col("part").isNull())
        arrive = flights.select(
            F.col("a").alias("t"), F.when(F.col("c") == F.col("a"), 2).otherwise(1).alias("kind"), *carried, "row"
        )
        leave = flights.where(F.col("c") > F.col("a")).select(F.col("c").alias("t"), F.lit(0).alias("kind"), *carried, "row")
        events = arrive.unionByName(leave)
        ranges = events.repartitionByRange(partitions, "t") if partitions else events.repartitionByRange("t")
        # At one time completions (kind 0) first, then arrivals in order.
        ordered = ranges.sortWithinPartitions("t", F.col("kind") > 0, *carried, "row")
        blocks = [(row["first"], row["change"], row["most"]) for row in _collect(ordered.mapInArrow(_summed, "first long, change long, most long"))]
    finally:
        replayed.unpersist()
    found = _native.settled_merge(layers, parts, blocks, input="<DataFrame>", window=window)
    report = Settled(json.loads(found))
    report.method = "by key"
    return report


def _summed(batches: Any) -> Any:
    """A range of admitted requests' arrivals (kind 1; 2 for one that completes at once)
    and completions (kind 0), in time order: where it starts, how many more it leaves in
    flight, and the most more at any moment within it (in Rust, ``flight_block``)."""
    import pyarrow

    from ratelimit_replay import _native as native

    table = _table(batches)
    if table is None:
        return
    first, change, most = native.flight_block(table["t"][0].as_py(), table["kind"].to_pylist())
    yield pyarrow.RecordBatch.from_pydict({"first": [first], "change": [change], "most": [most]})


def _in_one_pass(df: Any, layers: list[Any], order: list[str], duration: str | None, end: str | None,
                 window: str | None, options: dict[str, Any]) -> Settled:
    """Every row replayed in one pass in one task, in `order`: only the report reaches the
    driver."""

    def run(batches: Any) -> Any:
        import pyarrow

        from ratelimit_replay import _native as native

        table = _table(batches)
        if table is not None:
            found = native.settled_replay(table, layers, window, duration=duration, end=end, options=options)
            yield pyarrow.RecordBatch.from_pydict({"report": [bytes(found).decode()]})

    rows = _collect(_in_one_task(df, order).mapInArrow(_carried(run), "report string"))
    if not rows:
        raise ValueError("<DataFrame>: no rows")
    report = Settled(json.loads(rows[0]["report"]))
    report["input"] = "<DataFrame>"
    return report
