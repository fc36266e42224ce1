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

``min_bucket`` runs this way so far, of one stream or per key; ``decisions`` of a limit
per key, which needs no merge: each key's decisions are its own limiter's; and ``replay``
of a limit per key: each key is replayed whole on its executor, each partition sums up
its keys, and what mixes keys in time order (the busiest windows) is found over blocks
of time, each reading on a window's length into the next; ``compare`` per key, as the
program's is made: one such replay for each limiter; ``decisions`` and ``replay`` of one
limit over every row, from stretches of time decided where the limiter rests, from their
true start, or in one pass.
"""

from __future__ import annotations

import json
from typing import Any

from . import _argv, _native

__all__ = ["min_bucket", "curve", "decisions", "replay", "compare"]


def min_bucket(
    df: Any,
    *,
    rate: str,
    key: str | None = None,
    cost: str | int | None = None,
    time: str = "time",
    tie: str | list[str] | None = None,
    partitions: int | None = None,
    **flags: Any,
) -> list[dict[str, Any]]:
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
    """
    argv = _argv("min-bucket", dict(rate=rate, key=key, cost=cost, time=time, **flags))
    if key:
        return _by_key(df, argv, key, [key, time] + _ties(tie), partitions)
    return json.loads(_merged_ranges(df, argv, [time] + _ties(tie), partitions))


def _merged_ranges(df: Any, argv: list[str], order: list[str], partitions: int | None) -> bytes:
    """Sums up each range of one stream in (time, tie) order on its executor
    (``chunk_lines``, in Rust) and merges the summaries in range order on the driver
    (``merge_chunks``): what ``ratelimit min-bucket`` prints with `argv`'s flags."""
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
        lines = native.chunk_lines(argv, table, f"<partition {partition}>")
        yield pyarrow.RecordBatch.from_pydict({"partition": [partition], "summary": ["\n".join(lines)]})

    parts = _collect(ranged.mapInArrow(summarize, "partition long, summary string"))
    # Range partition n holds the n-th range: merged in that order.
    chunks = [row["summary"].split("\n") for row in sorted(parts, key=lambda row: row["partition"])]
    return _native.merge_chunks(argv, chunks)


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

    argv = _argv("min-bucket", dict(curve=True, cost=cost, time=time, **flags))
    return _curve_table(json.loads(_merged_ranges(df, argv, [time] + _ties(tie), partitions)))


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
    in order, in one task; GCRA's ranges (and the token bucket's and the leaky queue's,
    which pass the same events) are each decided from their true start instead,
    found by composing the ranges' functions of their start (``limiter::Transfer``). The
    DataFrame's ``ratelimit_method`` says which: ``"reset cuts: N segments"``, ``"transfer
    functions: N ranges"``, or ``"sequential"`` when no cut is found.

    What no cut splits is decided in one pass, in one task (``"sequential"``): nginx's
    keys, which share its zone, and ``limits``, layers all or nothing (the program's
    ``--limit`` SPECs), which then add a column for each layer, named by its SPEC, whether
    that layer admitted the row.
    """
    argv = _argv("replay", dict(algo=algo, rate=rate, burst=burst, key=key, cost=cost, time=time, limits=limits, **flags))
    names = ["passed", *(limits or [])]
    if limits:
        key = _layers_key(limits)
    if (limits and key is None) or (algo == "nginx" and key):
        return _sequential_decisions(df, argv, [time] + _ties(tie), names)
    if not key:
        # GCRA, the token bucket and the leaky queue pass the same events: GCRA's functions.
        gcra = algo in ("gcra", "token-bucket", "leaky-queue")
        return _decisions_of_one_stream(df, argv, [time] + _ties(tie), partitions, gcra)
    order = [key, time] + _ties(tie)
    hashed = df.repartition(partitions, key) if partitions else df.repartition(key)
    hashed = hashed.sortWithinPartitions(*order)

    def decide(batches):
        batches = [batch for batch in batches if batch.num_rows]
        if batches:
            yield from _decided(argv, batches, names)

    decided = hashed.mapInArrow(decide, _with_passed(df.schema, names))
    decided.ratelimit_method = "by key"
    return decided


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

    nginx (its keys share its zone, and its own burst is found in one pass) and
    ``limits``, layers all or nothing (the program's ``--limit`` SPECs), are replayed in
    one pass, in one task: ``method`` is ``"sequential"``, and the report the program's.
    """
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    given = dict(algo=algo, rate=rate, burst=burst, window=window, key=key, cost=cost, time=time, limits=limits, **flags)
    argv = _argv("replay", given)
    if limits:
        # Layers all keyed by one column decide each key alone: by key, as one limit does.
        key = _layers_key(limits)
    if (limits and key is None) or algo == "nginx":
        return _sequential_report(df, argv, [time] + _ties(tie))
    # With no cost, every event costs 1: its cost, and its ties (which order only the
    # first event too big to pass), need not go on to the blocks.
    light = cost is None and not any("cost=" in spec for spec in limits or [])
    if not key:
        return _replay_one_stream(df, argv, algo, [time] + _ties(tie), partitions, light)
    order = [key, time] + _ties(tie)
    hashed = df.repartition(partitions, key) if partitions else df.repartition(key)
    hashed = hashed.sortWithinPartitions(*order)
    carried = [] if light else _ties(tie)
    # Nullable: a summary's row has no tie.
    ties = [StructField(name, df.schema[name].dataType) for name in carried]
    schema = StructType(
        [StructField("summary", StringType()), StructField("block", LongType()), StructField("own", BooleanType()),
         StructField("t", LongType()), StructField("c", LongType()), StructField("passed", BooleanType())] + ties
    )
    if light:
        schema = _packed_schema()

    def part(batches):
        # On an executor: whole keys, replayed; a row of summary, then each event's rows
        # (or, each costing 1, a row of them packed for each block).
        import pyarrow
        from pyspark import TaskContext

        table = _table(batches)
        if table is None:
            return
        summary, rows = _replayed_part(argv, table, _ties(tie), f"<partition {TaskContext.get().partitionId()}>")
        if light:
            rows = _packed(rows)
        rows = rows.append_column("summary", pyarrow.nulls(rows.num_rows, pyarrow.string()))
        said = pyarrow.table({field.name: pyarrow.nulls(1, rows.schema.field(field.name).type) for field in schema})
        said = said.set_column(0, "summary", pyarrow.array([summary]))
        yield from pyarrow.concat_tables([said, rows.select([field.name for field in schema])]).to_batches()

    told = _blocks_told(hashed.mapInArrow(part, schema), argv, carried, partitions)
    parts = [row["line"] for row in told if row["kind"] == "part"]
    if not parts:
        raise ValueError("<DataFrame>: no rows")
    found = [row["line"] for row in told if row["kind"] == "block"]
    report = Replayed(json.loads(_native.merge_parts(argv, parts, found)))
    report.method = "by key"
    return report


class Replayed(dict):
    """A replay's report, as the program's JSON has it, with ``method``: how the rows of
    one stream were decided (``"reset cuts: N segments"``, ``"transfer functions: N
    ranges"`` or ``"sequential"``)."""

    method: str


def _in_one_task(df: Any, order: list[str]) -> Any:
    """All of `df`'s rows in one partition, in (time, tie) order: the program's one pass."""
    return df.repartition(1).sortWithinPartitions(*order)


def _sequential_report(df: Any, argv: list[str], order: list[str]) -> Replayed:
    """The program's report of every row, replayed in one pass in one task: only the
    report reaches the driver."""

    def run(batches):
        import pyarrow

        from ratelimit_replay import _native as native

        table = _table(batches)
        if table is not None:
            out, _ = native.call(argv, table, False, "<DataFrame>")
            yield pyarrow.RecordBatch.from_pydict({"report": [bytes(out).decode()]})

    rows = _collect(_in_one_task(df, order).mapInArrow(run, "report string"))
    if not rows:
        raise ValueError("<DataFrame>: no rows")
    report = Replayed(json.loads(rows[0]["report"]))
    report.method = "sequential"
    return report


def _sequential_decisions(df: Any, argv: list[str], order: list[str], names: list[str]) -> Any:
    """Every row decided in one pass in one task: a column ``passed``, and with layers one
    for each, as `names` names them."""

    def decide(batches):
        import pyarrow

        from ratelimit_replay import _native as native

        table = _table(batches)
        if table is not None:
            _, passed = native.call(argv, table, True, "<DataFrame>")
            for name, column in zip(names, passed):
                table = table.append_column(name, pyarrow.array(column))
            yield from table.to_batches()

    decided = _in_one_task(df, order).mapInArrow(decide, _with_passed(df.schema, names))
    decided.ratelimit_method = "sequential"
    return decided


def _replay_one_stream(df: Any, argv: list[str], algo: str, order: list[str], partitions: int | None, light: bool) -> Replayed:
    """Replays one stream: its rows decided in ranges of time, then each range's figures
    and the blocks' lines merged on the driver (``merge_parts``, in Rust)."""
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    ties = order[1:]
    # GCRA, the token bucket and the leaky queue pass the same events: GCRA's functions.
    gcra = algo in ("gcra", "token-bucket", "leaky-queue")
    decided = _decisions_of_one_stream(df, argv, order, partitions, gcra, segments=True)
    starts = getattr(decided, "ratelimit_starts", None) or {}
    schema = StructType(
        [StructField("summary", StringType()), StructField("order", StringType()), StructField("block", LongType()),
         StructField("own", BooleanType()), StructField("t", LongType()), StructField("c", LongType()),
         StructField("passed", BooleanType())]
        + [StructField(name, df.schema[name].dataType) for name in ties]
    )
    if light:
        schema = _packed_schema(ordered=True)

    def part(batches):
        # On an executor: a decided range's figures, then its events' rows, by block.
        import pyarrow
        import pyarrow.compute
        from pyspark import TaskContext

        from ratelimit_replay import _native as native

        table = _table(batches)
        if table is None:
            return
        partition = TaskContext.get().partitionId()
        # A stretch of time each: a segment (several may share a partition), or the range.
        stretches = [table]
        if "__segment" in table.column_names:
            numbers = table.column("__segment").to_pylist()
            cuts = [n for n in range(1, len(numbers)) if numbers[n] != numbers[n - 1]]
            stretches = [table.slice(a, b - a).drop_columns(["__segment"]) for a, b in zip([0, *cuts], [*cuts, len(numbers)])]
        for stretch in stretches:
            passed = stretch.column("passed").to_pylist()
            line, (p, t, c) = native.stream_part(
                argv, stretch.drop_columns(["passed"]), f"<partition {partition}>", passed, starts.get(partition)
            )
            said = json.loads(line)
            if not said["events"]:
                continue
            columns = {"t": t, "c": c, "passed": p}
            columns.update({tie: stretch.column(tie) for tie in ties})
            events = pyarrow.table(columns).filter(pyarrow.compute.is_valid(pyarrow.array(t)))
            # Stretches are merged in time order: by their first event's time and ties.
            first = events.slice(0, 1).to_pylist()[0]
            ordered = json.dumps([said["first"], [[first[tie] is not None, first[tie]] for tie in ties], partition], default=str)
            rows = _in_blocks(events, said["block_us"], said["read_on_us"])
            if light:
                rows = _packed(rows)
            rows = rows.append_column("summary", pyarrow.nulls(rows.num_rows, pyarrow.string()))
            rows = rows.append_column("order", pyarrow.nulls(rows.num_rows, pyarrow.string()))
            head = pyarrow.table({field.name: pyarrow.nulls(1, rows.schema.field(field.name).type) for field in schema})
            head = head.set_column(0, "summary", pyarrow.array([line])).set_column(1, "order", pyarrow.array([ordered]))
            yield from pyarrow.concat_tables([head, rows.select([field.name for field in schema])]).to_batches()

    told = _blocks_told(decided.mapInArrow(part, schema), argv, [] if light else ties, partitions)
    parts = sorted((row for row in told if row["kind"] == "part"), key=lambda row: json.loads(row["order"]))
    if not parts:
        raise ValueError("<DataFrame>: no events")
    found = [row["line"] for row in told if row["kind"] == "block"]
    report = Replayed(json.loads(_native.merge_parts(argv, [row["line"] for row in parts], found)))
    report.method = decided.ratelimit_method
    return report


def _in_blocks(events: Any, width: int, read_on: int) -> Any:
    """Returns `events` (columns `t`, ...) each in the block of its time, `width` µs wide,
    and again in the block before if within `read_on` µs of its block's start (`own`
    false), so that every window that starts in a block is counted whole there."""
    import numpy
    import pyarrow

    times = events.column("t").to_numpy()
    blocks = numpy.floor_divide(times, width)
    ahead = (times - blocks * width) < read_on
    own = events.append_column("block", pyarrow.array(blocks)).append_column("own", pyarrow.array(numpy.ones(len(times), bool)))
    read_on_rows = events.filter(pyarrow.array(ahead)).append_column("block", pyarrow.array(blocks[ahead] - 1))
    read_on_rows = read_on_rows.append_column("own", pyarrow.array(numpy.zeros(int(ahead.sum()), bool)))
    return pyarrow.concat_tables([own, read_on_rows])


def _packed(rows: Any) -> Any:
    """Returns a table of `rows`' events (columns `block`, `t`, `passed`, `own`, each
    costing 1) packed, a row for each block: its events in time order, as their times
    (8 bytes each, little-endian), then a byte each (1 passed, 2 its block's own). A
    block's row is one row for Spark to move, where each event was one."""
    import numpy
    import pyarrow

    blocks, t = rows.column("block").to_numpy(), rows.column("t").to_numpy()
    flags = rows.column("passed").to_numpy(zero_copy_only=False).astype(numpy.uint8)
    flags |= rows.column("own").to_numpy(zero_copy_only=False).astype(numpy.uint8) << 1
    order = numpy.lexsort((t, blocks))
    blocks, t, flags = blocks[order], t[order].astype("<i8"), flags[order]
    starts = numpy.flatnonzero(numpy.r_[True, blocks[1:] != blocks[:-1]])
    ends = numpy.r_[starts[1:], len(blocks)]
    packed = [t[a:b].tobytes() + flags[a:b].tobytes() for a, b in zip(starts, ends)]
    return pyarrow.table({"block": pyarrow.array(blocks[starts], pyarrow.int64()), "packed": pyarrow.array(packed, pyarrow.binary())})


def _unpacked(rows: Any) -> Any:
    """Returns the events of `rows` (blocks' rows as ``_packed`` wrote them, from any
    parts) as columns `block`, `t`, `c`, `passed`, `own`, sorted by block and time."""
    import numpy
    import pyarrow

    blocks, times, flags = [], [], []
    for block, packed in zip(rows.column("block").to_pylist(), rows.column("packed").to_pylist()):
        n = len(packed) // 9
        times.append(numpy.frombuffer(packed, "<i8", n))
        flags.append(numpy.frombuffer(packed, numpy.uint8, n, 8 * n))
        blocks.append(numpy.full(n, block, numpy.int64))
    blocks, times, flags = (numpy.concatenate(x) if x else numpy.zeros(0, numpy.int64) for x in (blocks, times, flags))
    order = numpy.lexsort((times, blocks))
    flags = flags[order].astype(numpy.uint8)
    return pyarrow.table({
        "block": blocks[order], "t": times[order].astype(numpy.int64), "c": numpy.ones(len(order), numpy.int64),
        "passed": (flags & 1).astype(bool), "own": (flags & 2).astype(bool),
    })


def _blocks_told(blocked: Any, argv: list[str], ties: list[str], partitions: int | None) -> list[Any]:
    """Shuffles rows by block, each block's in time order (the summaries, with no block,
    first), and collects the summaries (kind ``part``, with their ``order``) and a line
    for each block (kind ``block``)."""
    blocked = blocked.repartition(partitions, "block") if partitions else blocked.repartition("block")

    def lines(batches):
        import numpy
        import pyarrow
        import pyarrow.compute

        from ratelimit_replay import _native as native

        table = _table(batches)
        if table is None:
            return
        said = table.filter(pyarrow.compute.is_valid(table.column("summary")))
        rows = table.filter(pyarrow.compute.is_null(table.column("summary")))
        if "packed" in rows.column_names:
            # Each costing 1, the events came packed: no cost, and no tie, made the trip.
            rows = _unpacked(rows)
        else:
            # Each block's rows in time order, ties in their order: sorted here, in Arrow.
            rows = rows.sort_by([("block", "ascending"), ("t", "ascending"), *((tie, "ascending") for tie in ties)])
        found = native.block_lines(argv, rows.select(["block", "t", "c", "passed", "own"])) if rows.num_rows else []
        orders = said.column("order").to_pylist() if "order" in said.column_names else [None] * said.num_rows
        yield pyarrow.RecordBatch.from_pydict({
            "kind": ["part"] * said.num_rows + ["block"] * len(found),
            "line": said.column("summary").to_pylist() + found,
            "order": orders + [None] * len(found),
        })

    return _collect(blocked.mapInArrow(lines, "kind string, line string, order string"))


def _packed_schema(ordered: bool = False) -> Any:
    """The schema of a part's summary and its blocks' packed rows (``_packed``); `ordered`,
    with the summary's place among the parts (``order``)."""
    from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

    order = [StructField("order", StringType())] if ordered else []
    return StructType([StructField("summary", StringType()), *order, StructField("block", LongType()), StructField("packed", BinaryType())])


# The shortest block of time a replay's busiest windows are found in (10 minutes), longer
# if the window is: each block's events are read on a window's length into the next.
_BLOCK_US = 600_000_000


def compare(
    df: Any,
    *,
    rate: str,
    key: str | None = None,
    burst: int | None = None,
    algos: list[str] | None = None,
    **given: Any,
) -> list[dict[str, Any]]:
    """Returns what ``ratelimit compare [--key KEY] --format json`` prints for the rows of
    ``df``: for each limiter of ``algos`` (the program's six by default), the report of
    ``replay(df, algo=…, rate=rate, key=key, …)``, which is what each row of the program's
    compare is, per key or (no ``key``) over every row; ``burst`` applies to the limiters
    that take one. ``given`` are ``replay``'s other keywords (``cost``, ``time``, ``tie``,
    ``partitions``…)."""
    return _by_replays(replay, df, rate, key, burst, algos, given)


def _by_replays(replay: Any, frame: Any, rate: str, key: str | None, burst: int | None, algos: list[str] | None, given: dict[str, Any]) -> list[dict[str, Any]]:
    """A compare made of one ``replay`` of ``frame`` for each limiter of ``algos``
    (the program's own six by default), ``burst`` given to those with one, as the program's
    compare applies it: what each row of the program's compare is."""
    chosen = list(algos) if algos else list(_OWN)
    return [replay(frame, algo=algo, rate=rate, key=key, burst=burst if algo in _WITH_BURST else None, **given) for algo in chosen]


# The program's own limiters, in its order, and the limiters a burst applies to.
_OWN = ("fixed-window", "sliding-log", "sliding-counter", "token-bucket", "gcra", "leaky-queue")
_WITH_BURST = {"token-bucket", "gcra", "leaky-queue", "nginx", "traefik", "envoy-local"}


def _replayed_part(argv: list[str], table: Any, ties: list[str], name: str) -> tuple[str, Any]:
    """Replays a part's whole keys (``replay_part``) and returns its summary and its
    events' rows (`t`, `c`, `passed`, the ties, `block`, `own`): each in the block of its
    time, and again in the block before if it lies within a window's length of its
    block's start, so that every window is counted whole in the block where it starts.
    The blocks are a window long at least, the same on every worker."""
    import pyarrow
    import pyarrow.compute

    from ratelimit_replay import _native as native

    summary, (passed, t, c) = native.replay_part(argv, table, name)
    columns = {"t": pyarrow.array(t), "c": pyarrow.array(c), "passed": pyarrow.array(passed)}
    columns.update({tie: table.column(tie) for tie in ties})
    events = pyarrow.table(columns)
    # Rows that made no event have no time, and no block.
    events = events.filter(pyarrow.compute.is_valid(events.column("t")))
    length = json.loads(summary)["window_us"]
    return summary, _in_blocks(events, max(length, _BLOCK_US), length)


def _decisions_of_one_stream(
    df: Any, argv: list[str], order: list[str], partitions: int | None, gcra: bool, segments: bool = False
) -> Any:
    """Decides every row of one stream from ranges of time, cut where the limiter rests;
    with `segments`, each row keeps its segment's number (`__segment`): a partition may
    hold several segments, and only a segment is a stretch of time."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    ranged = df.repartitionByRange(partitions, *order) if partitions else df.repartitionByRange(*order)
    # Read twice (the ranges' spans, then their rows): kept, so that each row stays in its range.
    ranged = ranged.sortWithinPartitions(*order).cache()

    spans = _range_lines(ranged, argv, "range_line")
    # A range starts a segment of its own when its first event comes once the limiter is at
    # rest after the last event before it; else it joins the segment before.
    segment_of, segment, rest = {}, -1, None
    for partition in sorted(spans):
        if spans[partition] == "-":
            segment_of[partition] = max(segment, 0)
            continue
        first, _, rests = spans[partition].split(" ")
        if segment < 0 or (rest is not None and int(first) >= rest):
            segment += 1
        segment_of[partition] = segment
        rest = None if rests == "-" else int(rests)
    count = max(segment + 1, 1)
    if gcra and count < len(spans):
        # Some ranges cannot be cut at rest: GCRA's decide from their true start instead.
        found = _by_transfer(ranged, argv, sorted(segment_of))
        if found is not None:
            return found

    def decide(batches):
        # Each segment's rows in order, decided from a fresh state as the program decides.
        import pyarrow

        table = _table(batches)
        if table is None:
            return
        parts = table.column("__segment").to_pylist()
        start = 0
        while start < table.num_rows:
            end = start
            while end < table.num_rows and parts[end] == parts[start]:
                end += 1
            segment = table.slice(start, end - start)
            decided = _decided(argv, segment.drop_columns(["__segment"]).to_batches())
            if segments:
                decided = [batch.append_column("__segment", pyarrow.array([parts[start]] * batch.num_rows, pyarrow.int64())) for batch in decided]
            yield from decided
            start = end

    mapping = F.create_map(*[F.lit(value) for pair in segment_of.items() for value in pair])
    tagged = ranged.withColumn("__segment", mapping[F.spark_partition_id()].cast("long"))
    schema = _with_passed(df.schema)
    if segments:
        schema = StructType([*schema.fields, StructField("__segment", LongType())])
    decided = tagged.repartition(count, "__segment").sortWithinPartitions("__segment", *order).mapInArrow(decide, schema)
    decided.ratelimit_method = "sequential" if count == 1 else f"reset cuts: {count} segments"
    return decided


def _by_transfer(ranged: Any, argv: list[str], partitions: list[int]) -> Any:
    """Decides every range of one stream from its true start, in parallel, by GCRA's
    functions of the ranges (``limiter::Transfer``), composed in range order on the
    driver (``range_starts``, in Rust); ``None`` if the limiter is not GCRA or a function
    has too many pieces."""
    found = _range_lines(ranged, argv, "range_transfer")
    if any(line == "-" for line in found.values()):
        return None
    ordered = [partition for partition in partitions if partition in found]
    starts = dict(zip(ordered, _native.range_starts([found[partition] for partition in ordered])))

    def decide(batches):
        import pyarrow
        from pyspark import TaskContext

        from ratelimit_replay import _native as native

        table = _table(batches)
        partition = TaskContext.get().partitionId()
        if table is not None:
            passed = native.decide_range(argv, table, f"<partition {partition}>", starts[partition])
            yield from table.append_column("passed", pyarrow.array(passed)).to_batches()

    decided = ranged.mapInArrow(decide, _with_passed(ranged.schema))
    decided.ratelimit_method = f"transfer functions: {len(starts)} ranges"
    # Each range's tat at its start: a leaky queue's waits start from it.
    decided.ratelimit_starts = starts
    return decided


def _by_key(df: Any, argv: list[str], key: str, order: list[str], partitions: int | None) -> list[dict[str, Any]]:
    """Sizes each key whole on an executor, and joins the keys' lines on the driver."""
    hashed = df.repartition(partitions, key) if partitions else df.repartition(key)
    hashed = hashed.sortWithinPartitions(*order)

    def size(batches):
        import pyarrow
        from pyspark import TaskContext

        from ratelimit_replay import _native as native

        batches = [batch for batch in batches if batch.num_rows]
        if not batches:
            return
        partition = TaskContext.get().partitionId()
        lines = native.chunk_lines(argv, pyarrow.Table.from_batches(batches), f"<partition {partition}>")
        yield pyarrow.RecordBatch.from_pydict({"line": lines})

    lines = [row["line"] for row in _collect(hashed.mapInArrow(size, "line string"))]
    return json.loads(_native.merge_chunks(argv, [lines]))


def _range_lines(ranged: Any, argv: list[str], tell: str) -> dict[int, str]:
    """Returns what each range with rows tells, by its partition: the native function
    `tell`'s line."""

    def told(batches):
        import pyarrow
        from pyspark import TaskContext

        from ratelimit_replay import _native as native

        table = _table(batches)
        partition = TaskContext.get().partitionId()
        if table is not None:
            line = getattr(native, tell)(argv, table, f"<partition {partition}>")
            yield pyarrow.RecordBatch.from_pydict({"partition": [partition], "line": [line]})

    return {row["partition"]: row["line"] for row in _collect(ranged.mapInArrow(told, "partition long, line string"))}


def _decided(argv: list[str], batches: list[Any], names: list[str] | None = None) -> Any:
    """Decides rows as ``ratelimit replay`` does, from a fresh state, and returns their
    batches with a column ``passed`` (and with layers, one for each, as `names` names)."""
    import pyarrow

    from ratelimit_replay import _native as native

    table = pyarrow.Table.from_batches(batches)
    _, passed = native.call(argv, table, True)
    for name, column in zip(names or ["passed"], passed):
        table = table.append_column(name, pyarrow.array(column))
    return table.to_batches()


def _layers_key(limits: list[str]) -> str | None:
    """The one column that keys every layer of `limits` (``key=``), if one does and no
    layer is nginx's, whose keys share a zone: then each key is decided by its own layers
    alone. ``None`` otherwise."""
    specs = [dict(word.split("=", 1) for word in spec.split(",") if "=" in word) for spec in limits]
    keys = {spec.get("key") for spec in specs}
    if len(keys) != 1 or None in keys or any(spec.get("algo") == "nginx" for spec in specs):
        return None
    return keys.pop()


def _table(batches: Any) -> Any:
    """The rows of a partition's Arrow batches as one table; ``None`` without rows."""
    import pyarrow

    batches = [batch for batch in batches if batch.num_rows]
    return pyarrow.Table.from_batches(batches) if batches else None


def _ties(tie: str | list[str] | None) -> list[str]:
    """The columns that order events at one time: none, one, or several in turn (a Parquet
    file's path, then its row's index)."""
    if tie is None:
        return []
    return [tie] if isinstance(tie, str) else list(tie)


def _with_passed(schema: Any, names: list[str] | None = None) -> Any:
    """Returns a copy of `schema` with a column `passed` (or a column for each of `names`)
    (``StructType.add`` changes the schema it is called on, which may be a DataFrame's
    own)."""
    from pyspark.sql.types import BooleanType, StructField, StructType

    return StructType([*schema.fields, *(StructField(name, BooleanType()) for name in names or ["passed"])])


def _collect(df: Any) -> list[Any]:
    """Collects `df`, raising the engine's one-line message if an executor raised it."""
    try:
        return df.collect()
    except Exception as failed:
        said = [line for line in str(failed).splitlines() if line.startswith("ValueError: ")]
        if said:
            raise ValueError(said[-1].removeprefix("ValueError: ")) from None
        raise
