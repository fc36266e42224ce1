"""The engine on Dask: the same exact summaries as on Spark, with Dask's own shuffle.

Of one stream, ``sort_values(time, tie)`` orders the partitions by time; each is summed
up in Rust where it lies (``map_partitions``) and the summaries, one line a rate, are
merged in the partitions' order. Per key, ``shuffle(key)`` keeps each key whole in one
partition, which is sorted by (key, time, tie) and sized there, a line a key. Only those
lines are computed back to the client. Only the engine glue is new: the summaries and
merges are those of ``ratelimit_replay.spark`` (``chunk_lines``, ``merge_chunks``).
"""

from __future__ import annotations

import json
from typing import Any

from . import _flag, _native

__all__ = ["min_bucket"]


def min_bucket(
    ddf: Any,
    *,
    rate: str,
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    tie: str | None = None,
    **flags: Any,
) -> list[dict[str, Any]]:
    """Returns what ``ratelimit min-bucket --format json`` prints for the rows of Dask
    DataFrame ``ddf`` in (time, tie) order: the smallest lossless bucket at ``rate`` (or
    each rate of a list or range), of one stream or per ``key``. The keywords are
    ``ratelimit_replay.spark.min_bucket``'s."""
    import pandas

    argv = ["ratelimit", "min-bucket", "--format", "json"]
    for name, value in dict(rate=rate, key=key, cost=cost, time=time, **flags).items():
        argv += _flag(name, value)
    order = ([key] if key else []) + [time] + ([tie] if tie else [])
    if key:
        # Whole keys in each partition, sorted there (a stable sort keeps the rows' order).
        parts = ddf.shuffle(on=key).map_partitions(lambda part: part.sort_values(order, kind="stable"))
    else:
        parts = ddf.sort_values(order)

    def lines(part: Any, partition_info: dict | None = None) -> Any:
        # Where the partition lies: its rows, in order, told in Rust.
        import pyarrow

        from ratelimit_replay import _native as native

        if part.empty:
            return pandas.Series([], dtype=object)
        number = (partition_info or {}).get("number", 0)
        table = pyarrow.Table.from_pandas(part, preserve_index=False)
        return pandas.Series(["\n".join(native.chunk_lines(argv, table, f"<partition {number}>"))])

    chunks = [chunk.split("\n") for chunk in parts.map_partitions(lines, meta=(None, object)).compute()]
    if key:
        chunks = [[line for chunk in chunks for line in chunk]]
    return json.loads(_native.merge_chunks(argv, chunks))
