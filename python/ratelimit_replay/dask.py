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

from . import _argv, _native
from .spark import _by_replays

__all__ = ["min_bucket", "curve", "replay", "compare"]


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
    argv = _argv("min-bucket", dict(rate=rate, key=key, cost=cost, time=time, **flags))
    return json.loads(_merged(ddf, argv, key, [time] + ([tie] if tie else [])))


def curve(ddf: Any, *, cost: str | int | None = None, time: str = "time", tie: str | None = None, **flags: Any) -> Any:
    """Returns the whole burst-rate curve of the rows of Dask DataFrame ``ddf`` in (time,
    tie) order, as ``ratelimit_replay.curve`` returns it: each partition's curve and hulls
    (``ratelimit_core::sizing::curve_summary``), merged in the partitions' order."""
    from . import _curve_table

    argv = _argv("min-bucket", dict(curve=True, cost=cost, time=time, **flags))
    return _curve_table(json.loads(_merged(ddf, argv, None, [time] + ([tie] if tie else []))))


def _merged(ddf: Any, argv: list[str], key: str | None, order: list[str]) -> bytes:
    """Sums up each partition in Rust where it lies (``chunk_lines``): of one stream, the
    partitions in (time, tie) order; per `key`, whole keys. Merges the lines on the client
    (``merge_chunks``): what ``ratelimit min-bucket`` prints with `argv`'s flags."""
    import pandas

    order = ([key] if key else []) + order
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
    return _native.merge_chunks(argv, chunks)


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
    summaries: ``shuffle(key)`` keeps each key whole, where it is replayed and its events
    put in blocks of time, and ``shuffle`` on the block brings each block's events
    together for the busiest windows."""
    import pandas

    from .spark import _replayed_part

    given = dict(algo=algo, rate=rate, burst=burst, window=window, key=key, cost=cost, time=time, **flags)
    argv = _argv("replay", given)
    ties = [tie] if tie else []
    order = [key, time] + ties
    parts = ddf.shuffle(on=key).map_partitions(lambda part: part.sort_values(order, kind="stable"))

    def replayed(part: Any, partition_info: dict | None = None) -> Any:
        # Whole keys, replayed where they lie: a row of summary, then each event's rows in
        # their blocks of time, as on Spark.
        import pyarrow

        if part.empty:
            return meta
        number = (partition_info or {}).get("number", 0)
        table = pyarrow.Table.from_pandas(part, preserve_index=False)
        summary, rows = _replayed_part(argv, table, ties, f"<partition {number}>")
        said = pandas.DataFrame({"summary": [summary]})
        rows = rows.to_pandas().assign(summary=None)
        return pandas.concat([said, rows], ignore_index=True)[list(meta.columns)].astype(meta.dtypes.to_dict())

    meta = pandas.DataFrame(
        {"summary": pandas.Series([], dtype=object), "t": pandas.Series([], dtype="Int64"),
         "c": pandas.Series([], dtype="Int64"), "passed": pandas.Series([], dtype="boolean"),
         **{name: pandas.Series([], dtype=_nullable(ddf.dtypes[name])) for name in ties},
         "block": pandas.Series([], dtype="Int64"), "own": pandas.Series([], dtype="boolean")}
    )
    blocks = parts.map_partitions(replayed, meta=meta).shuffle(on="block")
    blocks = blocks.map_partitions(lambda part: part.sort_values(["block", "t", *ties], kind="stable"))

    def lines(part: Any) -> Any:
        # The summaries as they came, then a line for each block of time.
        import pyarrow

        from ratelimit_replay import _native as native

        said = ["part " + summary for summary in part["summary"].dropna()]
        rows = part[part["summary"].isna()]
        if rows.empty:
            return pandas.Series(said, dtype=object)
        columns = {
            "block": pyarrow.array(rows["block"].astype("int64")),
            "t": pyarrow.array(rows["t"].astype("int64")),
            "c": pyarrow.array(rows["c"].astype("int64")),
            "passed": pyarrow.array(rows["passed"].astype(bool)),
            "own": pyarrow.array(rows["own"].astype(bool)),
        }
        found = ["block " + line for line in native.block_lines(argv, pyarrow.table(columns))]
        return pandas.Series(said + found, dtype=object)

    told = list(blocks.map_partitions(lines, meta=(None, object)).compute())
    summaries = [line.removeprefix("part ") for line in told if line.startswith("part ")]
    if not summaries:
        raise ValueError("<DataFrame>: no rows")
    found = [line.removeprefix("block ") for line in told if line.startswith("block ")]
    return json.loads(_native.merge_parts(argv, summaries, found))


def _nullable(dtype: Any) -> Any:
    """Returns a dtype that holds what ``dtype`` holds and a null: the summary's row has no
    tie."""
    import pandas

    return "Int64" if pandas.api.types.is_integer_dtype(dtype) else dtype


def compare(
    ddf: Any,
    *,
    rate: str,
    key: str,
    burst: int | None = None,
    algos: list[str] | None = None,
    **given: Any,
) -> list[dict[str, Any]]:
    """Returns what ``ratelimit compare --key KEY --format json`` prints for the rows of
    ``ddf``, as :func:`ratelimit_replay.spark.compare` does on Spark: a ``replay`` for each
    limiter of ``algos`` (the program's six by default)."""
    return _by_replays(replay, ddf, rate, key, burst, algos, given)

