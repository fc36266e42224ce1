"""The engine on Dask: the same exact summaries as on Spark, with Dask's own shuffle.

Of one stream, ``sort_values(time, tie)`` orders the partitions by time; each is summed
up in Rust where it lies (``map_partitions``) and the summaries, one line a rate, are
merged in the partitions' order. Per key, ``shuffle(key)`` keeps each key whole in one
partition, which is sorted by (key, time, tie) and sized there, a line a key. Only those
lines are computed back to the client. Only the engine glue is new: the summaries and
merges are those of ``ratelimit_replay.spark`` (``chunk_lines``, ``merge_chunks``;
``replay_part``, ``block_lines``, ``merge_parts``).
"""

from __future__ import annotations

import json
from typing import Any

from . import _flag, _native

__all__ = ["min_bucket", "replay"]


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


def replay(
    ddf: Any,
    *,
    algo: str,
    rate: str,
    key: str,
    burst: int | None = None,
    window: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    tie: str | None = None,
    **flags: Any,
) -> dict[str, Any]:
    """Returns what ``ratelimit replay --key KEY --format json`` prints for the rows of
    Dask DataFrame ``ddf``, as ``ratelimit_replay.spark.replay`` does, from the same
    summaries: ``shuffle(key)`` keeps each key whole, where it is replayed, and the events'
    times, costs and decisions are cut into blocks of time (``shuffle`` on the block) for
    the busiest windows."""
    import dask
    import pandas

    argv = ["ratelimit", "replay", "--format", "json"]
    given = dict(algo=algo, rate=rate, burst=burst, window=window, key=key, cost=cost, time=time, **flags)
    for name, value in given.items():
        argv += _flag(name, value)
    order = [key, time] + ([tie] if tie else [])
    ties = [tie] if tie else []
    parts = ddf.shuffle(on=key).map_partitions(lambda part: part.sort_values(order, kind="stable"))

    def replayed(part: Any, partition_info: dict | None = None) -> Any:
        # Whole keys, replayed where they lie: a row of summary, then each event's row.
        import pyarrow

        from ratelimit_replay import _native as native

        if part.empty:
            return meta
        number = (partition_info or {}).get("number", 0)
        table = pyarrow.Table.from_pandas(part, preserve_index=False)
        import pyarrow.compute

        summary, (passed, t, c) = native.replay_part(argv, table, f"<partition {number}>")
        columns = {"t": pyarrow.array(t), "c": pyarrow.array(c), "passed": pyarrow.array(passed)}
        columns.update({name: table.column(name) for name in ties})
        events = pyarrow.table(columns)
        # Rows that made no event have no time: they are left out, before pandas sees a null.
        events = events.filter(pyarrow.compute.is_valid(events.column("t"))).to_pandas()
        said = pandas.DataFrame({"summary": [summary]})
        return pandas.concat([said, events.assign(summary=None)], ignore_index=True).astype(meta.dtypes.to_dict())

    meta = pandas.DataFrame(
        {"summary": pandas.Series([], dtype=object), "t": pandas.Series([], dtype="Int64"),
         "c": pandas.Series([], dtype="Int64"), "passed": pandas.Series([], dtype="boolean"),
         **{name: pandas.Series([], dtype=_nullable(ddf.dtypes[name])) for name in ties}}
    )
    decided = parts.map_partitions(replayed, meta=meta).persist()
    summaries = [s for s in decided["summary"].dropna().compute()]
    if not summaries:
        raise ValueError("<DataFrame>: no rows")
    length = max(json.loads(summary)["window_us"] for summary in summaries)
    events = decided[decided["summary"].isna()].drop(columns=["summary"])
    first, last = dask.compute(events["t"].min(), events["t"].max())
    if pandas.isna(first):
        return json.loads(_native.merge_parts(argv, summaries, []))
    first, last = int(first), int(last)
    width = max(length, -(-(last - first + 1) // (4 * ddf.npartitions)))

    def blocked(part: Any) -> Any:
        # Each event in the block of its time, and again in the block before if it lies
        # within a window's length of its block's start.
        since = part["t"] - first
        own = part.assign(block=since // width, own=True)
        ahead = own[(since % width < length) & (own["block"] > 0)].assign(own=False)
        ahead["block"] = ahead["block"] - 1
        return pandas.concat([own, ahead], ignore_index=True)

    blocks = events.map_partitions(blocked).shuffle(on="block")
    blocks = blocks.map_partitions(lambda part: part.sort_values(["block", "t", *ties], kind="stable"))

    def lines(part: Any) -> Any:
        import pyarrow

        from ratelimit_replay import _native as native

        if part.empty:
            return pandas.Series([], dtype=object)
        columns = {
            "block": pyarrow.array(part["block"].astype("int64")),
            "t": pyarrow.array(part["t"].astype("int64")),
            "c": pyarrow.array(part["c"].astype("int64")),
            "passed": pyarrow.array(part["passed"].astype(bool)),
            "own": pyarrow.array(part["own"].astype(bool)),
        }
        return pandas.Series(native.block_lines(argv, pyarrow.table(columns)), dtype=object)

    found = list(blocks.map_partitions(lines, meta=(None, object)).compute())
    return json.loads(_native.merge_parts(argv, summaries, found))


def _nullable(dtype: Any) -> Any:
    """Returns a dtype that holds what ``dtype`` holds and a null: the summary's row has no
    tie."""
    import pandas

    return "Int64" if pandas.api.types.is_integer_dtype(dtype) else dtype
