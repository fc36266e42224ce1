"""The engine on Dask: the same exact summaries as on Spark, with Dask's own shuffle.

Of one stream, ``sort_values(time, tie)`` orders the partitions by time; each is summed
up in Rust where it lies (``map_partitions``) and the summaries, one line a rate, are
merged in the partitions' order; a replay decides them as Spark decides its ranges (reset
cuts, transfer functions, or one pass). Per key, ``shuffle(key)`` keeps each key whole in
one partition, which is sorted by (key, time, tie) and sized or replayed there. Only
those lines are computed back to the client. Only the engine glue is new: the summaries
and merges are those of ``ratelimit_replay.spark`` (``chunk_lines``, ``merge_chunks``;
``replay_part``, ``stream_part``, ``block_lines``, ``merge_parts``; ``range_line``,
``range_transfer``, ``range_starts``, ``decide_range``).
"""

from __future__ import annotations

import json
from typing import Any

from . import _keywords, _native, _parts
from ._native import Limit
from ._results import Limited, MinBucket, Settled
from .errors import PolicyError
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
) -> list[MinBucket]:
    """Returns what ``ratelimit min-bucket --format json`` prints for the rows of Dask
    DataFrame ``ddf`` in (time, tie) order: the smallest lossless bucket at ``rate`` (or
    each rate of a list or range), of one stream or per ``key``. The keywords are
    ``ratelimit_replay.spark.min_bucket``'s."""
    sizing = _sizing([rate] if isinstance(rate, str) else list(rate), key, cost, time, flags)
    return [MinBucket(row) for row in json.loads(_merged(ddf, sizing, key, [time] + ([tie] if tie else [])))]


def curve(ddf: Any, *, cost: str | int | None = None, time: str = "time", tie: str | None = None, **flags: Any) -> Any:
    """Returns the whole burst-rate curve of the rows of Dask DataFrame ``ddf`` in (time,
    tie) order, as ``ratelimit_replay.curve`` returns it: each partition's curve and hulls
    (``ratelimit_core::sizing::curve_summary``), merged in the partitions' order."""
    from . import _curve_table

    sizing = _sizing([], None, cost, time, flags)
    return _curve_table(json.loads(_merged(ddf, sizing, None, [time] + ([tie] if tie else []))))


def _sizing(rates: list[str], key: str | None, cost: Any, time: str, flags: dict[str, Any]) -> Any:
    """The sizing every partition does: the engine's, asked once (no rate: the curve)."""
    return _native.Sizing(rates, key, cost, _keywords(flags, time))


def _merged(ddf: Any, sizing: Any, key: str | None, order: list[str]) -> bytes:
    """Sums up each partition in Rust where it lies (``chunk_lines``): of one stream, the
    partitions in (time, tie) order; per `key`, whole keys. Merges the lines on the client
    (``merge_chunks``): what ``ratelimit min-bucket`` prints, as `sizing` asks."""
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
        return pandas.Series(["\n".join(native.chunk_lines(sizing, table, f"<partition {number}>"))])

    chunks = [chunk.split("\n") for chunk in parts.map_partitions(lines, meta=(None, object)).compute()]
    if key:
        chunks = [[line for chunk in chunks for line in chunk]]
    return _native.merge_chunks(sizing, chunks)


def replay(
    ddf: Any,
    *,
    algo: str | None = None,
    rate: str | None = None,
    key: str | None = None,
    burst: int | None = None,
    window: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    tie: str | None = None,
    limits: list[str] | None = None,
    duration: str | None = None,
    end: str | None = None,
    **flags: Any,
) -> dict[str, Any]:
    """Returns what ``ratelimit replay [--key KEY] --format json`` prints for the rows of
    Dask DataFrame ``ddf``, as ``ratelimit_replay.spark.replay`` does, from the same
    summaries, with the same ``method``.

    Per key (``"by key"``), ``shuffle(key)`` keeps each key whole, where it is replayed and
    its events put in blocks of time, and ``shuffle`` on the block brings each block's
    events together for the busiest windows. Of one stream, ``sort_values(time, tie)``
    orders the partitions in time, and they are decided as Spark's ranges are: from a
    fresh state where the limiter rests between them (``"reset cuts: N segments"``), or
    GCRA's each from its true start (``"transfer functions: N ranges"``); each stretch
    sends its figures, and its events go on to the blocks. Layers (``limits``, the
    program's ``--limit`` SPECs) all keyed by one column run by key, and so do keyed layers
    beside global ones that refuse nothing alone (``_layers``); a limiter whose keys share
    one store, and layers beside a global one that refuses, run in one pass in one task
    (``"sequential"``, and why), as the engine's plan says.

    ``limits`` settled after the response, with ``duration`` or ``end``, return a
    ``Settled`` as ``ratelimit_replay.spark.replay`` does: by key (``shuffle(key)``, each
    part's figures merged in Rust, and the peak in flight of all keys from the admitted
    requests' arrivals and completions sorted by time), or in one pass in one task."""
    from ._spark_rows import Replayed

    if limits and (duration is not None or end is not None or any((s if isinstance(s, Limit) else Limit.parse(s))._of_requests for s in limits)):
        if algo is not None or key is not None or cost is not None:
            raise PolicyError("limits= say their own key and cost: give them in each SPEC")
        ties = [tie] if tie else []
        return _settled(ddf, limits, duration=duration, end=end, window=window, time=time, ties=ties, options=flags)

    given = dict(algo=algo, rate=rate, burst=burst, window=window, key=key, cost=cost, time=time, limits=limits, **flags)
    job = _parts(given)
    ties = [tie] if tie else []
    order = [time] + ties
    if limits:
        # Layers all keyed by one column decide each key alone: by key, as one limit does.
        key = job.key
    if limits and key is None:
        report, method = _beside(ddf, job, limits, order)
        if report is None:
            report = json.loads(_sequential(ddf, job, order))
    elif job.method(report=True)[0] == "one pass":
        report, method = json.loads(_sequential(ddf, job, order)), "sequential"
    elif not key:
        # A limiter that passes what GCRA passes is decided by GCRA's functions.
        report, method = _stream_report(ddf, job, order, job.method()[1])
    else:
        report, method = json.loads(_merged_report(_by_key(ddf, job, key, [key, *order]), job, ties)), "by key"
    report = Replayed(report)
    report.method = method
    return report


def _beside(ddf: Any, job: Any, limits: list[str], order: list[str]) -> tuple[dict[str, Any] | None, str]:
    """Layers keyed by one column beside global ones, by key if every global layer
    refuses nothing alone (``_layers``): the report, or ``None``; and the method."""
    from ._layers import _replay_beside

    def one_stream(frame, job, light, decided):
        transfer = job.method()[1]
        return _stream_report(ddf if frame is None else frame, job, order, transfer, decided)[0]

    def keyed_report(job, key, light):
        return _merged_report(_by_key(ddf, job, key, [key, *order]), job, order[1:])

    def keyed_decisions(job, key):
        return _keyed_decisions(ddf, job, [key, *order])

    return _replay_beside(job, limits, one_stream, keyed_report, keyed_decisions)


def _stream_report(ddf: Any, job: Any, order: list[str], gcra: bool, decided: bool = False) -> tuple[dict[str, Any], str]:
    """The report of one limit over every row in (time, tie) `order`, and the method: the
    rows decided in partitions of time (or as their ``passed`` says, if `decided`)."""
    # The sorted partitions are kept (persisted) until the report is made of them.
    frames, method, kept = _one_stream(ddf, job, order, gcra, decided)
    report = json.loads(_merged_report(frames, job, order[1:]))
    del kept
    return report, method


def _keyed_decisions(ddf: Any, job: Any, order: list[str]) -> Any:
    """Each key whole in a partition (``shuffle(key)``) decided there: the rows with
    ``passed``."""
    import pandas

    meta = ddf._meta.assign(passed=pandas.Series([], dtype="boolean"))

    def decide(part: Any) -> Any:
        import pyarrow

        if part.empty:
            return meta
        _, passed = job.replay(pyarrow.Table.from_pandas(part, preserve_index=False), True)
        return part.assign(passed=pandas.array(pyarrow.array(passed[0]).to_pylist(), dtype="boolean"))

    parts = ddf.shuffle(on=order[0]).map_partitions(lambda part: part.sort_values(order, kind="stable"))
    return parts.map_partitions(decide, meta=meta)


def _meta(ties: list[str], dtypes: Any) -> Any:
    """The frame a part sends on: its summary (and its place among the parts, ``order``)
    in a row of its own, then its events' rows (`t`, `c`, `passed`, the ties) each in its
    block of time."""
    import pandas

    return pandas.DataFrame(
        {"summary": pandas.Series([], dtype=object), "order": pandas.Series([], dtype=object),
         "t": pandas.Series([], dtype="Int64"), "c": pandas.Series([], dtype="Int64"),
         "passed": pandas.Series([], dtype="boolean"),
         **{name: pandas.Series([], dtype=_nullable(dtypes[name])) for name in ties},
         "block": pandas.Series([], dtype="Int64"), "own": pandas.Series([], dtype="boolean")}
    )


def _sent(summary: str, order: str | None, rows: Any, meta: Any) -> Any:
    """A part's frame, as `meta` has it: its summary's row, then `rows` (Arrow)."""
    import pandas

    said = pandas.DataFrame({"summary": [summary], "order": [order]})
    rows = rows.to_pandas().assign(summary=None, order=None)
    return pandas.concat([said, rows], ignore_index=True)[list(meta.columns)].astype(meta.dtypes.to_dict())


def _by_key(ddf: Any, job: Any, key: str, order: list[str]) -> Any:
    """Each key whole in a partition (``shuffle(key)``), replayed there: a part's frame."""
    import pyarrow

    from ._spark_rows import _replayed_part

    ties = order[2:]
    meta = _meta(ties, ddf.dtypes)
    parts = ddf.shuffle(on=key).map_partitions(lambda part: part.sort_values(order, kind="stable"))

    def replayed(part: Any, partition_info: dict | None = None) -> Any:
        if part.empty:
            return meta
        number = (partition_info or {}).get("number", 0)
        table = pyarrow.Table.from_pandas(part, preserve_index=False)
        summary, rows = _replayed_part(job, table, ties, f"<partition {number}>")
        return _sent(summary, None, rows, meta)

    return parts.map_partitions(replayed, meta=meta)


def _one_stream(ddf: Any, job: Any, order: list[str], gcra: bool, decided: bool) -> tuple[Any, str, Any]:
    """One stream's partitions in time order, decided (reset cuts, GCRA's transfer
    functions, or one pass; or, if `decided`, as their ``passed`` says), and each
    stretch's frame; the method's name; and the sorted partitions, persisted, to be kept
    until the frames are computed."""
    import dask
    import dask.dataframe

    from ._spark_stream import _segments

    ties = order[1:]
    meta = _meta(ties, ddf.dtypes)
    # Kept where they lie: read once for their spans (and functions), once to be decided.
    kept = ddf.sort_values(order).persist()
    ranges = [dask.delayed(_arrow)(part) for part in kept.to_delayed()]
    names = [f"<partition {n}>" for n in range(len(ranges))]
    if decided:
        stretches = [dask.delayed(_as_decided)(table, name) for table, name in zip(ranges, names)]
        frames = [dask.delayed(_stretch_frame)(job, stretch, ties, n, meta) for n, stretch in enumerate(stretches)]
        return dask.dataframe.from_delayed(frames, meta=meta, verify_meta=False), "decided", kept
    spans = dask.compute(*(dask.delayed(_told)(job, table, name, "range_line") for table, name in zip(ranges, names)))
    segment_of, count = _segments({n: told for n, (rows, told) in enumerate(spans) if rows})
    stretches = None
    if gcra and count < len(segment_of):
        # Some ranges cannot be cut at rest: GCRA's decide from their true start instead.
        found = dask.compute(*(dask.delayed(_told)(job, table, name, "range_transfer") for table, name in zip(ranges, names)))
        numbers = [n for n, (rows, _) in enumerate(found) if rows]
        found = [told for _, told in found]
        if all(found[n] is not None for n in numbers):
            starts = dict(zip(numbers, _native.range_starts([found[n] for n in numbers])))
            stretches = [dask.delayed(_from_start)(job, ranges[n], names[n], starts[n]) for n in numbers]
            method = f"transfer functions: {len(numbers)} ranges"
    if stretches is None:
        # Each segment's ranges together, decided in order from a fresh state.
        segments = [[ranges[n] for n in sorted(segment_of) if segment_of[n] == s] for s in range(count)]
        stretches = [dask.delayed(_from_fresh)(job, parts, f"<segment {s}>") for s, parts in enumerate(segments)]
        method = "sequential" if count == 1 else f"reset cuts: {count} segments"
    frames = [dask.delayed(_stretch_frame)(job, stretch, ties, n, meta) for n, stretch in enumerate(stretches)]
    return dask.dataframe.from_delayed(frames, meta=meta, verify_meta=False), method, kept


def _sequential(ddf: Any, job: Any, order: list[str]) -> str:
    """Every row, in (time, tie) order, replayed in one pass in one task: the program's
    report, the only thing computed back."""
    import dask

    ranges = [dask.delayed(_arrow)(part) for part in ddf.sort_values(order).to_delayed()]
    return dask.compute(dask.delayed(_from_fresh)(job, ranges, "<DataFrame>", True))[0]


def _arrow(part: Any) -> Any:
    """A partition's rows as an Arrow table; ``None`` without rows."""
    import pyarrow

    return None if part.empty else pyarrow.Table.from_pandas(part, preserve_index=False)


def _told(job: Any, table: Any, name: str, tell: str) -> tuple[bool, Any]:
    """Whether a range has rows, and what it tells by the job's `tell` if it has."""
    return (False, None) if table is None else (True, getattr(job, tell)(table, name))


def _as_decided(table: Any, name: str) -> Any:
    """A range decided already, as its ``passed`` says; ``None`` without rows."""
    return None if table is None else (table, None, name)


def _from_start(job: Any, table: Any, name: str, start: int) -> Any:
    """A range decided from GCRA's tat `start`: its rows with `passed`, and the start."""
    import pyarrow

    passed = job.decide_range(table, name, start)
    return table.append_column("passed", pyarrow.array(passed)), start, name


def _from_fresh(job: Any, tables: list[Any], name: str, report: bool = False) -> Any:
    """Ranges decided together in order from a fresh state: their rows with `passed` (and
    no start); with `report`, the program's report of them instead."""
    import pyarrow

    table = pyarrow.concat_tables([table for table in tables if table is not None])
    out, passed = job.replay(table, not report, name)
    if report:
        return bytes(out).decode()
    return table.append_column("passed", pyarrow.array(passed[0])), None, name


def _stretch_frame(job: Any, stretch: Any, ties: list[str], number: int, meta: Any) -> Any:
    """A decided stretch's frame: its figures (``stream_part``) in order `number`, and its
    events' rows in their blocks."""
    from ._spark_stream import _stretch_rows

    if stretch is None:
        return meta
    table, start, name = stretch
    told = _stretch_rows(job, table, ties, name, start)
    if told is None:
        return meta
    line, _, rows = told
    return _sent(line, str(number), rows, meta)


def _merged_report(frames: Any, job: Any, ties: list[str]) -> bytes:
    """Shuffles the parts' frames by block, each block's rows in time order, and merges
    the parts' summaries (in their order, if they have one) and each block's line into
    what ``ratelimit replay --format json`` prints (``merge_parts``)."""
    import pandas

    blocks = frames.shuffle(on="block")
    blocks = blocks.map_partitions(lambda part: part.sort_values(["block", "t", *ties], kind="stable"))

    def lines(part: Any) -> Any:
        # The summaries as they came (with their order), then a line for each block of time.
        import pyarrow

        said = part[part["summary"].notna()]
        said = [f"part {order if isinstance(order, str) else '-'} {summary}" for order, summary in zip(said["order"], said["summary"])]
        rows = part[part["summary"].isna() & part["block"].notna()]
        if rows.empty:
            return pandas.Series(said, dtype=object)
        columns = {
            "block": pyarrow.array(rows["block"].astype("int64")),
            "t": pyarrow.array(rows["t"].astype("int64")),
            "c": pyarrow.array(rows["c"].astype("int64")),
            "passed": pyarrow.array(rows["passed"].astype(bool)),
            "own": pyarrow.array(rows["own"].astype(bool)),
        }
        found = ["block " + line for line in job.block_lines(pyarrow.table(columns))]
        return pandas.Series(said + found, dtype=object)

    told = list(blocks.map_partitions(lines, meta=(None, object)).compute())
    parts = [line.removeprefix("part ").split(" ", 1) for line in told if line.startswith("part ")]
    if not parts:
        raise ValueError("<DataFrame>: no rows")
    summaries = [summary for order, summary in sorted(parts, key=lambda part: -1 if part[0] == "-" else int(part[0]))]
    found = [line.removeprefix("block ") for line in told if line.startswith("block ")]
    return job.merge_parts(summaries, found)


def _nullable(dtype: Any) -> Any:
    """Returns a dtype that holds what ``dtype`` holds and a null: the summary's row has no
    tie."""
    import pandas

    return "Int64" if pandas.api.types.is_integer_dtype(dtype) else dtype


def compare(
    ddf: Any,
    *,
    rate: str,
    key: str | None = None,
    burst: int | None = None,
    algos: list[str] | None = None,
    **given: Any,
) -> list[Limited]:
    """Returns what ``ratelimit compare [--key KEY] --format json`` prints for the rows of
    ``ddf``, as :func:`ratelimit_replay.spark.compare` does on Spark: a ``replay`` for each
    limiter of ``algos`` (the program's six by default)."""
    return _by_replays(replay, ddf, rate, key, burst, algos, given)


def _settled(
    ddf: Any, limits: list[Any], *, duration: str | None, end: str | None, window: str | None, time: str,
    ties: list[str], options: dict[str, Any],
) -> Settled:
    """Limits settled after the response, as the engine's plan says: by key, or in one
    pass in one task (see ``ratelimit_replay._spark_settled``)."""
    import dask
    import pandas

    layers = [limit if isinstance(limit, Limit) else Limit.parse(limit) for limit in limits]
    method, said = _native.settled_method(layers, duration=duration, end=end)
    asked = dict(options, time=time)
    if method == "one pass":
        ranges = [dask.delayed(_arrow)(part) for part in ddf.sort_values([time] + ties).to_delayed()]
        found = dask.compute(dask.delayed(_settled_whole)(ranges, layers, window, duration, end, asked))[0]
        report = Settled(json.loads(found))
        report["input"] = "<DataFrame>"
        report.method = f"one pass: {said}"
        return report
    key = said
    order = [key, time] + ties
    carried = ties + [key]
    meta = pandas.DataFrame(
        {"part": pandas.Series([], dtype=object), "a": pandas.Series([], dtype="Int64"),
         "c": pandas.Series([], dtype="Int64"), "row": pandas.Series([], dtype="Int64"),
         **{name: pandas.Series([], dtype=_nullable(ddf.dtypes[name])) for name in carried}}
    )
    whole = ddf.shuffle(on=key).map_partitions(lambda part: part.sort_values(order, kind="stable"))

    def replayed(part: Any) -> Any:
        import pyarrow

        if part.empty:
            return meta
        table = pyarrow.Table.from_pandas(part, preserve_index=False)
        found, arrivals, completions, rows = _native.settled_part(
            table, layers, window, duration=duration, end=end, options=asked
        )
        taken = part.iloc[list(rows)]
        flights = pandas.DataFrame({"part": None, "a": arrivals, "c": completions, "row": list(rows)})
        for name in carried:
            flights[name] = taken[name].to_numpy()
        said = pandas.DataFrame({"part": [bytes(found).decode()]})
        return pandas.concat([said, flights], ignore_index=True)[list(meta.columns)].astype(meta.dtypes.to_dict())

    frames = whole.map_partitions(replayed, meta=meta).persist()
    parts = [part.encode() for part in frames["part"].dropna().compute()]
    columns = ["t", "kind", "arrives", *carried, "row"]
    events_meta = pandas.DataFrame({"t": pandas.Series([], dtype="int64"), "kind": pandas.Series([], dtype="int64"),
                                    "arrives": pandas.Series([], dtype="bool"),
                                    **{name: meta[name] for name in carried}, "row": pandas.Series([], dtype="int64")})

    def events_of(frame: Any) -> Any:
        # A partition's admitted requests as events: an arrival (kind 1; 2 for one that
        # completes at once) and, for one that lasts, its completion (kind 0).
        flights = frame[frame["part"].isna()]
        a, c = flights["a"].astype("int64"), flights["c"].astype("int64")
        arrive = flights.assign(t=a, kind=(c == a).astype("int64") + 1, arrives=True, row=flights["row"].astype("int64"))
        lasting = flights[c > a]
        leave = lasting.assign(t=c[c > a], kind=0, arrives=False, row=lasting["row"].astype("int64"))
        return pandas.concat([arrive[columns], leave[columns]], ignore_index=True).astype(events_meta.dtypes.to_dict())

    events = frames.map_partitions(events_of, meta=events_meta).sort_values(["t", "arrives", *carried, "row"])
    summed = events.map_partitions(_summed_frame, meta=pandas.DataFrame(
        {"first": pandas.Series([], dtype="int64"), "change": pandas.Series([], dtype="int64"),
         "most": pandas.Series([], dtype="int64")}
    )).compute()
    blocks = [(int(r.first), int(r.change), int(r.most)) for r in summed.itertuples()]
    found = _native.settled_merge(layers, parts, blocks, input="<DataFrame>", window=window)
    report = Settled(json.loads(found))
    report.method = "by key"
    return report


def _settled_whole(ranges: list[Any], layers: list[Any], window: str | None, duration: str | None, end: str | None,
                   options: dict[str, Any]) -> bytes:
    """Every range's rows, in order, replayed in one pass: the report's JSON."""
    import pyarrow

    tables = [table for table in ranges if table is not None]
    if not tables:
        raise ValueError("<DataFrame>: no rows")
    table = pyarrow.concat_tables(tables)
    return bytes(_native.settled_replay(table, layers, window, duration=duration, end=end, options=options))


def _summed_frame(events: Any) -> Any:
    """A partition of admitted requests' arrivals and completions in time order, summed up
    as ``ratelimit_replay._spark_settled._summed`` sums a range."""
    import pandas
    import pyarrow

    from ._spark_settled import _summed

    if events.empty:
        return pandas.DataFrame({"first": pandas.Series([], dtype="int64"), "change": pandas.Series([], dtype="int64"),
                                 "most": pandas.Series([], dtype="int64")})
    table = pyarrow.table({"t": events["t"].astype("int64").to_numpy(), "kind": events["kind"].astype("int64").to_numpy()})
    return pandas.concat([batch.to_pandas() for batch in _summed(table.to_batches())])
