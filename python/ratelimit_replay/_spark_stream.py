"""One stream on Spark (no key), and what no cut splits: its rows decided in ranges of
time (reset cuts, transfer functions, or one pass) and its report made of each stretch's
figures and of the blocks' lines; nginx's keys and layers beside a global one, in one pass
in one task."""

from __future__ import annotations

import json
from typing import Any

from . import _native
from ._spark_rows import (
    Replayed,
    _blocks_told,
    _carried,
    _collect,
    _decided,
    _in_blocks,
    _in_one_task,
    _packed,
    _packed_schema,
    _table,
    _with_passed,
)

def _sequential_report(df: Any, job: Any, order: list[str]) -> Replayed:
    """The program's report of every row, replayed in one pass in one task: only the
    report reaches the driver."""

    def run(batches):
        import pyarrow

        table = _table(batches)
        if table is not None:
            out, _ = job.replay(table, False, "<DataFrame>")
            yield pyarrow.RecordBatch.from_pydict({"report": [bytes(out).decode()]})

    rows = _collect(_in_one_task(df, order).mapInArrow(_carried(run), "report string"))
    if not rows:
        raise ValueError("<DataFrame>: no rows")
    report = Replayed(json.loads(rows[0]["report"]))
    report.method = "sequential"
    return report


def _sequential_decisions(df: Any, job: Any, order: list[str], names: list[str]) -> Any:
    """Every row decided in one pass in one task: a column ``passed``, and with layers one
    for each, as `names` names them."""

    def decide(batches):
        import pyarrow

        table = _table(batches)
        if table is not None:
            _, passed = job.replay(table, True, "<DataFrame>")
            for name, column in zip(names, passed):
                table = table.append_column(name, pyarrow.array(column))
            yield from table.to_batches()

    decided = _in_one_task(df, order).mapInArrow(_carried(decide), _with_passed(df.schema, names))
    decided.ratelimit_method = "sequential"
    return decided


def _replay_one_stream(
    df: Any, job: Any, order: list[str], partitions: int | None, light: bool, decided: bool = False
) -> Replayed:
    """Replays one stream: its rows decided in ranges of time (or, if `decided`, as `df`'s
    column ``passed`` has them, cut in ranges of time), then each range's figures and the
    blocks' lines merged on the driver (``merge_parts``, in Rust)."""
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    ties = order[1:]
    if decided:
        # No range's start is known: not for a leaky queue, whose waits want it.
        ranged = df.repartitionByRange(partitions, *order) if partitions else df.repartitionByRange(*order)
        decided = ranged.sortWithinPartitions(*order)
        decided.ratelimit_method = "decided"
    else:
        # A limiter that passes what GCRA passes is decided by GCRA's functions.
        transfer = job.method()[1]
        decided = _decisions_of_one_stream(df, job, order, partitions, transfer, segments=True)
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
        from pyspark import TaskContext

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
            told = _stretch_rows(job, stretch, ties, f"<partition {partition}>", starts.get(partition))
            if told is None:
                continue
            line, first, rows = told
            # Stretches are merged in time order: by their first event's time and ties.
            ordered = json.dumps([*first, partition], default=str)
            if light:
                rows = _packed(rows)
            rows = rows.append_column("summary", pyarrow.nulls(rows.num_rows, pyarrow.string()))
            rows = rows.append_column("order", pyarrow.nulls(rows.num_rows, pyarrow.string()))
            head = pyarrow.table({field.name: pyarrow.nulls(1, rows.schema.field(field.name).type) for field in schema})
            head = head.set_column(0, "summary", pyarrow.array([line])).set_column(1, "order", pyarrow.array([ordered]))
            yield from pyarrow.concat_tables([head, rows.select([field.name for field in schema])]).to_batches()

    told = _blocks_told(decided.mapInArrow(_carried(part), schema), job, [] if light else ties, partitions)
    parts = sorted((row for row in told if row["kind"] == "part"), key=lambda row: json.loads(row["order"]))
    if not parts:
        # No events: the program's own report of none, and its note as a warning.
        import pyarrow

        columns = {field.name: pyarrow.nulls(0, pyarrow.string()) for field in df.schema.fields if field.name != "passed"}
        report = Replayed(json.loads(job.replay(pyarrow.table(columns), False, "<DataFrame>")[0]))
        report.method = decided.ratelimit_method
        return report
    found = [row["line"] for row in told if row["kind"] == "block"]
    report = Replayed(json.loads(job.merge_parts([row["line"] for row in parts], found)))
    report.method = decided.ratelimit_method
    return report


def _stretch_rows(job: Any, stretch: Any, ties: list[str], name: str, start: int | None) -> Any:
    """Returns what a decided stretch of one stream tells (its rows in time order, with
    `passed`; `start`, its limiter's tat at its start, for a leaky queue's waits): its
    line (``stream_part``), its first event's time and ties, and its events' rows each in
    its block of time (``_in_blocks``); ``None`` if it holds no event."""
    import pyarrow
    import pyarrow.compute

    passed = stretch.column("passed").to_pylist()
    line, (p, t, c) = job.stream_part(stretch.drop_columns(["passed"]), name, passed, start)
    columns = {"t": t, "c": c, "passed": p}
    columns.update({tie: stretch.column(tie) for tie in ties})
    events = pyarrow.table(columns).filter(pyarrow.compute.is_valid(pyarrow.array(t)))
    if not events.num_rows:
        return None
    # The rows are in time order: the first event is the first row that made one.
    first = events.slice(0, 1).to_pylist()[0]
    return line, [first["t"], [[first[tie] is not None, first[tie]] for tie in ties]], _in_blocks(events, *job.blocks())


def _segments(spans: dict[int, Any]) -> tuple[dict[int, int], int]:
    """Returns each range's segment, and how many: ranges in order (by number), each as
    ``range_line`` told it (first, last, rest; ``None`` without events). A range starts a
    segment of its own when its first event comes once the limiter is at rest after the
    last event before it; else it joins the segment before."""
    segment_of, segment, rest = {}, -1, None
    for number in sorted(spans):
        if spans[number] is None:
            segment_of[number] = max(segment, 0)
            continue
        first, _, rests = spans[number]
        if segment < 0 or (rest is not None and first >= rest):
            segment += 1
        segment_of[number] = segment
        rest = rests
    return segment_of, max(segment + 1, 1)


def _decisions_of_one_stream(
    df: Any, job: Any, order: list[str], partitions: int | None, gcra: bool, segments: bool = False
) -> Any:
    """Decides every row of one stream from ranges of time, cut where the limiter rests;
    with `segments`, each row keeps its segment's number (`__segment`): a partition may
    hold several segments, and only a segment is a stretch of time."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    ranged = df.repartitionByRange(partitions, *order) if partitions else df.repartitionByRange(*order)
    # Read twice (the ranges' spans, then their rows): kept, so that each row stays in its range.
    ranged = ranged.sortWithinPartitions(*order).cache()

    spans = _range_lines(ranged, job, "range_line")
    segment_of, count = _segments(spans)
    if gcra and count < len(spans):
        # Some ranges cannot be cut at rest: GCRA's decide from their true start instead.
        found = _by_transfer(ranged, job, sorted(segment_of))
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
            decided = _decided(job, segment.drop_columns(["__segment"]).to_batches())
            if segments:
                decided = [batch.append_column("__segment", pyarrow.array([parts[start]] * batch.num_rows, pyarrow.int64())) for batch in decided]
            yield from decided
            start = end

    if segment_of:
        mapping = F.create_map(*[F.lit(value) for pair in segment_of.items() for value in pair])
        tagged = ranged.withColumn("__segment", mapping[F.spark_partition_id()].cast("long"))
    else:
        # No range at all (no rows): one segment, of nothing; an empty map has no type.
        tagged = ranged.withColumn("__segment", F.lit(0).cast("long"))
    schema = _with_passed(df.schema)
    if segments:
        schema = StructType([*schema.fields, StructField("__segment", LongType())])
    decided = tagged.repartition(count, "__segment").sortWithinPartitions("__segment", *order).mapInArrow(_carried(decide), schema)
    decided.ratelimit_method = "sequential" if count == 1 else f"reset cuts: {count} segments"
    return decided


def _by_transfer(ranged: Any, job: Any, partitions: list[int]) -> Any:
    """Decides every range of one stream from its true start, in parallel, by GCRA's
    functions of the ranges (``limiter::Transfer``), composed in range order on the
    driver (``range_starts``, in Rust); ``None`` if the limiter is not GCRA or a function
    has too many pieces."""
    found = _range_lines(ranged, job, "range_transfer")
    if any(line is None for line in found.values()):
        return None
    ordered = [partition for partition in partitions if partition in found]
    starts = dict(zip(ordered, _native.range_starts([found[partition] for partition in ordered])))

    def decide(batches):
        import pyarrow
        from pyspark import TaskContext

        table = _table(batches)
        partition = TaskContext.get().partitionId()
        if table is not None:
            passed = job.decide_range(table, f"<partition {partition}>", starts[partition])
            yield from table.append_column("passed", pyarrow.array(passed)).to_batches()

    decided = ranged.mapInArrow(_carried(decide), _with_passed(ranged.schema))
    decided.ratelimit_method = f"transfer functions: {len(starts)} ranges"
    # Each range's tat at its start: a leaky queue's waits start from it.
    decided.ratelimit_starts = starts
    return decided


def _range_lines(ranged: Any, job: Any, tell: str) -> dict[int, Any]:
    """Returns what each range with rows tells, by its partition: what the job's
    `tell` returns (as JSON on its way to the driver)."""

    def told(batches):
        import pyarrow
        from pyspark import TaskContext

        table = _table(batches)
        partition = TaskContext.get().partitionId()
        if table is not None:
            line = json.dumps(getattr(job, tell)(table, f"<partition {partition}>"))
            yield pyarrow.RecordBatch.from_pydict({"partition": [partition], "line": [line]})

    rows = _collect(ranged.mapInArrow(_carried(told), "partition long, line string"))
    return {row["partition"]: json.loads(row["line"]) for row in rows}
