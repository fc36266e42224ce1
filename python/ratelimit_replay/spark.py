"""The engine on Spark: exact answers from summaries of time-ordered partitions.

A DataFrame is cut by Spark into ranges of (time, tie) (``repartitionByRange``), each
sorted (``sortWithinPartitions``); the engine sums up each range on its executor, in
Rust, as a few integers a rate, and only those summaries reach the driver, where they
are merged in the ranges' order. The merge is exact and associative
(``ratelimit_core::sizing::merge``): the answer is the program's on the same rows, for
any number of partitions.

Only ``min_bucket`` of one stream (no ``key``) runs this way so far.
"""

from __future__ import annotations

import json
from typing import Any

from . import _flag, _native

__all__ = ["min_bucket"]


def min_bucket(
    df: Any,
    *,
    rate: str,
    cost: str | int | None = None,
    time: str = "time",
    tie: str | None = None,
    partitions: int | None = None,
    **flags: Any,
) -> list[dict[str, Any]]:
    """Returns the smallest token bucket at ``rate`` (or at each of ``"1/h..100/h"``'s)
    that loses none of the events of Spark DataFrame ``df``: exactly what ``ratelimit
    min-bucket --format json`` prints for the same rows in the same order.

    ``time`` names the time column (Spark timestamps, dates, or text as the program reads
    it, with ``time_format``); ``cost`` a column of each event's cost. Events at the same
    time are taken in the order of ``tie``, a column that says the rows' order (a row
    number, or ``_metadata.row_index`` of a Parquet file); without it their order is
    Spark's, which changes nothing when every event costs the same. ``partitions`` is how
    many ranges Spark makes (its default if ``None``).
    """
    argv = ["ratelimit", "min-bucket", "--format", "json"]
    for name, value in dict(rate=rate, cost=cost, time=time, **flags).items():
        argv += _flag(name, value)
    order = [time] + ([tie] if tie else [])
    ranged = df.repartitionByRange(partitions, *order) if partitions else df.repartitionByRange(*order)
    ranged = ranged.sortWithinPartitions(*order)

    def summarize(batches):
        # On an executor: this partition's rows, in (time, tie) order, summed up in Rust.
        import pyarrow
        from pyspark import TaskContext

        from ratelimit_replay import _native as native

        batches = [batch for batch in batches if batch.num_rows]
        if not batches:
            return
        table = pyarrow.Table.from_batches(batches)
        partition = TaskContext.get().partitionId()
        # A bad row is named by its range and its place there, in (time, tie) order.
        lines = native.bucket_summaries(argv, table, f"<partition {partition}>")
        yield pyarrow.RecordBatch.from_pydict({"partition": [partition], "summary": ["\n".join(lines)]})

    try:
        parts = ranged.mapInArrow(summarize, "partition long, summary string").collect()
    except Exception as failed:
        # The engine's one-line message, from the executor's traceback.
        said = [line for line in str(failed).splitlines() if line.startswith("ValueError: ")]
        if said:
            raise ValueError(said[-1].removeprefix("ValueError: ")) from None
        raise
    # Range partition n holds the n-th range: merged in that order.
    chunks = [row["summary"].split("\n") for row in sorted(parts, key=lambda row: row["partition"])]
    return json.loads(_native.merge_bucket_summaries(argv, chunks))
