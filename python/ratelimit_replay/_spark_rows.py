"""Rows on Spark: the helpers every path shares, and the blocks of time that give the
busiest windows of events spread over partitions (each block holds its span and reads on
a window's length into the next; events that each cost 1 travel packed, a row a block)."""

from __future__ import annotations

import base64
import functools
import inspect
import pickle
from typing import Any, Callable

from .errors import BackendError, InputError, PolicyError, RatelimitError


class Replayed(dict):
    """A replay's report, as the program's JSON has it, with ``method``: how the rows of
    one stream were decided (``"reset cuts: N segments"``, ``"transfer functions: N
    ranges"`` or ``"sequential"``)."""

    method: str


def _in_one_task(df: Any, order: list[str]) -> Any:
    """All of `df`'s rows in one partition, in (time, tie) order: the program's one pass."""
    return df.repartition(1).sortWithinPartitions(*order)


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
    """Collects `df`, raising the engine's error if an executor raised it: the error itself,
    with its fields (an ``InputError``'s ``.row`` and ``.column``), as the executor carried
    it (``_carried``); else, for an error no executor carried, its class (``ValueError``
    or one of :mod:`ratelimit_replay.errors`) and its one-line message, as the executor's
    traceback, which Spark passes on as text, ends with them."""
    try:
        return df.collect()
    except Exception as failed:
        lines = str(failed).splitlines()
        # An engine's message is one line, its values quoted: no line of it starts so.
        for line in reversed(lines):
            if line.startswith(_CARRIED):
                raise pickle.loads(base64.b64decode(line[len(_CARRIED):])) from None
        for line in reversed(lines):
            name, _, message = line.partition(": ")
            kind = _RAISED.get(name)
            if kind is not None and message:
                raise kind(message) from None
        raise


# The errors an executor raises, by the name its traceback gives them.
_RAISED: dict[str, type[Exception]] = {
    "ValueError": ValueError,
    **{f"ratelimit_replay.errors.{kind.__name__}": kind for kind in (InputError, PolicyError, BackendError)},
}

# What leads the note in which an executor carries an engine's error to the driver.
_CARRIED = "ratelimit_replay carried: "


def _carried(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (a generator of batches, or a function of one table, as ``applyInArrow``
    takes it) run on an executor, such that an error of the engine's
    (:mod:`ratelimit_replay.errors`) reaches the driver whole: pickled in a note of the
    traceback that Spark passes on as text, for ``_collect`` to raise."""

    def carry(err: RatelimitError) -> None:
        err.add_note(_CARRIED + base64.b64encode(pickle.dumps(err)).decode())

    if inspect.isgeneratorfunction(function):

        @functools.wraps(function)
        def each(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from function(*args, **kwargs)
            except RatelimitError as err:
                carry(err)
                raise

        return each

    # One argument, no more: Spark reads how many the function takes.
    def once(table: Any) -> Any:
        try:
            return function(table)
        except RatelimitError as err:
            carry(err)
            raise

    return once


def _decided(job: Any, batches: list[Any], names: list[str] | None = None) -> Any:
    """Decides rows as ``ratelimit replay`` does, from a fresh state, and returns their
    batches with a column ``passed`` (and with layers, one for each, as `names` names)."""
    import pyarrow

    table = pyarrow.Table.from_batches(batches)
    _, passed = job.replay(table, True)
    for name, column in zip(names or ["passed"], passed):
        table = table.append_column(name, pyarrow.array(column))
    return table.to_batches()


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


def _blocks_told(blocked: Any, job: Any, ties: list[str], partitions: int | None) -> list[Any]:
    """Shuffles rows by block, each block's in time order (the summaries, with no block,
    first), and collects the summaries (kind ``part``, with their ``order``) and a line
    for each block (kind ``block``)."""
    blocked = blocked.repartition(partitions, "block") if partitions else blocked.repartition("block")

    def lines(batches):
        import numpy
        import pyarrow
        import pyarrow.compute

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
        found = job.block_lines(rows.select(["block", "t", "c", "passed", "own"])) if rows.num_rows else []
        orders = said.column("order").to_pylist() if "order" in said.column_names else [None] * said.num_rows
        yield pyarrow.RecordBatch.from_pydict({
            "kind": ["part"] * said.num_rows + ["block"] * len(found),
            "line": said.column("summary").to_pylist() + found,
            "order": orders + [None] * len(found),
        })

    return _collect(blocked.mapInArrow(_carried(lines), "kind string, line string, order string"))


def _packed_schema(ordered: bool = False) -> Any:
    """The schema of a part's summary and its blocks' packed rows (``_packed``); `ordered`,
    with the summary's place among the parts (``order``)."""
    from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

    order = [StructField("order", StringType())] if ordered else []
    return StructType([StructField("summary", StringType()), *order, StructField("block", LongType()), StructField("packed", BinaryType())])


def _replayed_part(job: Any, table: Any, ties: list[str], name: str) -> tuple[str, Any]:
    """Replays a part's whole keys (``replay_part``) and returns its summary and its
    events' rows (`t`, `c`, `passed`, the ties, `block`, `own`): each in the block of its
    time, and again in the block before if it lies within a window's length of its
    block's start, so that every window is counted whole in the block where it starts.
    The blocks are a window long at least, the same on every worker."""
    import pyarrow
    import pyarrow.compute

    summary, (passed, t, c) = job.replay_part(table, name)
    columns = {"t": pyarrow.array(t), "c": pyarrow.array(c), "passed": pyarrow.array(passed)}
    columns.update({tie: table.column(tie) for tie in ties})
    events = pyarrow.table(columns)
    # Rows that made no event have no time, and no block.
    events = events.filter(pyarrow.compute.is_valid(events.column("t")))
    return summary, _in_blocks(events, *job.blocks())


# How whole keys reach the engine, and the Spark each needs: Spark's own sort checked
# (3.4), a group sorted in Rust (4.0), or an Arrow UDTF whose order Spark guarantees (4.1).
_VIAS = {"map": (3, 4), "apply": (4, 0), "udtf": (4, 1)}


def _check_via(via: str) -> None:
    """Raises ValueError unless `via` is a way to hand keys over that this Spark has."""
    if via not in _VIAS:
        raise ValueError(f"via: {via!r} is not one of {', '.join(map(repr, _VIAS))}")
    import pyspark

    running = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
    if running < _VIAS[via]:
        needs = ".".join(map(str, _VIAS[via]))
        raise ValueError(f"via: {via!r} needs Spark {needs} or later; this is {pyspark.__version__}")


def _by_bucket(df: Any, key: str, order: list[str], partitions: int | None, work: Any, schema: Any, via: str) -> Any:
    """Runs `work(table, name)` on whole keys, each key's rows in `order` (key, time, tie),
    and returns the DataFrame of the Arrow batches it yields, of `schema`; `name` names
    the rows in messages. `via` says how the keys reach it:

    - ``"map"`` (Spark 3.4 and later): Spark cuts the rows by a hash of the key
      (``repartition``, `partitions` of them), sorts each partition
      (``sortWithinPartitions``) and hands it over (``mapInArrow``); the engine checks
      the order (``check_order``, in Rust) and raises if it is broken.
    - ``"apply"`` (Spark 4.0 and later): ``groupBy`` a hash bucket of the key
      ``.applyInArrow``, each bucket handed over whole and unsorted, and sorted in Rust
      (``order_by``).
    - ``"udtf"`` (Spark 4.1 and later): an Arrow UDTF over ``TABLE(df) PARTITION BY`` a
      hash bucket of the key ``ORDER BY`` `order`: Spark guarantees the order.

    A bucket is one of `partitions` (``spark.sql.shuffle.partitions`` if ``None``), and
    each is one call into the engine (about half a millisecond here): a lake's 10^7 keys
    want about 4,096 buckets, a test's few thousand a handful."""
    if via == "map":
        hashed = df.repartition(partitions, key) if partitions else df.repartition(key)

        def each(batches):
            from pyspark import TaskContext

            from ratelimit_replay import _native as native

            table = _table(batches)
            if table is not None:
                name = f"<partition {TaskContext.get().partitionId()}>"
                native.check_order(table, order, name)
                yield from work(table, name)

        return hashed.sortWithinPartitions(*order).mapInArrow(_carried(each), schema)
    from pyspark.sql import functions as F

    shuffled = df.sparkSession.conf.get("spark.sql.shuffle.partitions")
    # "auto" (a platform's adaptive setting) gives no number: 4,096, a lake's.
    buckets = partitions or (int(shuffled) if shuffled.isdigit() else 4096)
    bucketed = df.withColumn("__bucket", F.pmod(F.hash(F.col(key)), F.lit(buckets)))
    if via == "apply":

        def whole(table):
            # One bucket, its rows in no order: sorted in Rust, then handed over.
            import pyarrow
            from pyspark.sql.pandas.types import to_arrow_schema

            from ratelimit_replay import _native as native

            name = f"<bucket {table.column('__bucket')[0].as_py()}>"
            table = table.drop_columns(["__bucket"])
            table = table.take(pyarrow.array(native.order_by(table, order, name)))
            batches = list(work(table, name))
            return pyarrow.Table.from_batches(batches) if batches else to_arrow_schema(schema).empty_table()

        return bucketed.groupBy("__bucket").applyInArrow(_carried(whole), schema)
    from pyspark.sql.functions import arrow_udtf

    class Bucket:
        """A bucket's rows, in order, handed to `work` whole."""

        def __init__(self):
            self.batches = []

        def eval(self, batch):
            self.batches.append(batch)
            return iter(())

        @_carried
        def terminate(self):
            import pyarrow

            table = _table(self.batches)
            if table is not None:
                bucket = table.column("__bucket")[0].as_py()
                for batch in work(table.drop_columns(["__bucket"]), f"<bucket {bucket}>"):
                    yield pyarrow.Table.from_batches([batch])

    return arrow_udtf(returnType=schema)(Bucket)(bucketed.asTable().partitionBy("__bucket").orderBy(*order))


def _keyed_report(df: Any, job: Any, order: list[str], partitions: int | None, light: bool, via: str) -> bytes:
    """Replays whole keys (`order`: key, time, ties) where they lie, and merges the parts'
    summaries and the blocks' lines on the driver (``merge_parts``)."""
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    key, ties = order[0], order[2:]
    carried = [] if light else ties
    # Nullable: a summary's row has no tie.
    fields = [StructField(name, df.schema[name].dataType) for name in carried]
    schema = StructType(
        [StructField("summary", StringType()), StructField("block", LongType()), StructField("own", BooleanType()),
         StructField("t", LongType()), StructField("c", LongType()), StructField("passed", BooleanType())] + fields
    )
    if light:
        schema = _packed_schema()

    def part(table, name):
        # On an executor: whole keys, replayed; a row of summary, then each event's rows
        # (or, each costing 1, a row of them packed for each block).
        import pyarrow

        summary, rows = _replayed_part(job, table, ties, name)
        if light:
            rows = _packed(rows)
        rows = rows.append_column("summary", pyarrow.nulls(rows.num_rows, pyarrow.string()))
        said = pyarrow.table({field.name: pyarrow.nulls(1, rows.schema.field(field.name).type) for field in schema})
        said = said.set_column(0, "summary", pyarrow.array([summary]))
        yield from pyarrow.concat_tables([said, rows.select([field.name for field in schema])]).to_batches()

    told = _blocks_told(_by_bucket(df, key, order, partitions, part, schema, via), job, carried, partitions)
    parts = [row["line"] for row in told if row["kind"] == "part"]
    if not parts:
        raise ValueError("<DataFrame>: no rows")
    found = [row["line"] for row in told if row["kind"] == "block"]
    return job.merge_parts(parts, found)


def _keyed_decisions(df: Any, job: Any, order: list[str], partitions: int | None, names: list[str], via: str) -> Any:
    """Decides whole keys (`order`: key, time, ties) where they lie: `df` with a column for
    each of `names` (``passed``, then each layer's)."""

    def decide(table, name):
        return _decided(job, table.to_batches(), names)

    decided = _by_bucket(df, order[0], order, partitions, decide, _with_passed(df.schema, names), via)
    decided.ratelimit_method = "by key"
    return decided
