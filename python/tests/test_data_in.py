"""Data in: every Arrow producer, every time type, nulls, and bad input in the program's
words."""

from __future__ import annotations

import datetime as dt
import itertools
import re
import threading
import time

import polars
import pyarrow
import pyarrow.compute as pc
import pytest

import ratelimit_replay as rl
from conftest import as_arrow, cli, without_input

GCRA = dict(algo="gcra", rate="5/h", burst=5)


class Stream:
    """A bare producer: nothing but the Arrow PyCapsule stream interface."""

    def __init__(self, table: pyarrow.Table):
        self.table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self.table.__arrow_c_stream__(requested_schema)


def test_every_producer_gives_the_same_answer(m5_table):
    want = rl.replay(m5_table, **GCRA).to_dict()
    small = m5_table.to_batches(max_chunksize=1000)
    producers = {
        "record batch reader": pyarrow.RecordBatchReader.from_batches(m5_table.schema, small),
        "record batch": m5_table.combine_chunks().to_batches()[0],
        "polars": polars.from_arrow(m5_table),
        "bare stream": Stream(m5_table),
        "pandas through pyarrow": pyarrow.Table.from_pandas(m5_table.to_pandas()),
    }
    for name, data in producers.items():
        got = rl.replay(data, **GCRA)
        assert got.to_dict() == want, name
        assert len(got.decisions) == m5_table.num_rows, name


def test_time_as_text_timestamp_of_any_unit_and_zone_or_date_gives_the_same_answer(m5_table):
    text = m5_table.set_column(0, "time", pc.strftime(m5_table["time"], "%Y-%m-%dT%H:%M:%SZ"))
    want = without_input(rl.replay(text, **GCRA).to_dict())
    for unit in ["ms", "us", "ns"]:
        for zone in [None, "UTC", "Asia/Tokyo"]:
            column = m5_table["time"].cast(pyarrow.timestamp(unit, tz=zone))
            got = rl.replay(m5_table.set_column(0, "time", column), **GCRA)
            assert without_input(got.to_dict()) == want, (unit, zone)
    # Dates: every event at its day's midnight, as the program reads a date.
    days = m5_table["time"].cast(pyarrow.date32())
    text_days = pc.strftime(m5_table["time"], "%Y-%m-%d")
    want = without_input(rl.replay(m5_table.set_column(0, "time", text_days), **GCRA).to_dict())
    got = rl.replay(m5_table.set_column(0, "time", days), **GCRA)
    assert without_input(got.to_dict()) == want


def test_integer_times_take_a_stated_unit(log_table):
    seconds = pc.divide(log_table["ts"], 1000)
    as_seconds = log_table.set_column(1, "ts", seconds)
    got = rl.replay(as_seconds, **GCRA, time="ts", time_format="unix-s")
    stamps = log_table.set_column(1, "ts", pyarrow.compute.multiply(seconds, 1000).cast(pyarrow.timestamp("ms")))
    assert got.to_dict() == rl.replay(stamps, **GCRA, time="ts").to_dict()
    with pytest.raises(ValueError, match=r"row 1, field `ts`: .*(RFC 3339|unix-s)"):
        rl.replay(as_seconds, **GCRA, time="ts")


def test_nulls_are_empty_fields_as_the_program_reads_them():
    rows = pyarrow.table(
        {
            "time": ["2025-01-01T00:00:00Z", "2025-01-01T00:00:01Z", "2025-01-01T00:00:02Z"],
            "client": ["a", None, ""],
            "cost": pyarrow.array([1, 2, None], pyarrow.int64()),
        }
    )
    csv = b"time,client,cost\n2025-01-01T00:00:00Z,a,1\n2025-01-01T00:00:01Z,,2\n2025-01-01T00:00:02Z,,\n"
    for kwargs, flags in [
        (dict(key="client"), ["--key", "client"]),
        (dict(cost="cost"), ["--cost", "cost"]),
    ]:
        done = cli("replay", "-", "--algo", "gcra", "--rate", "1/s", "--burst", "2", *flags, "--format", "json", stdin=csv)
        if done.returncode == 0:
            import json

            got = rl.replay(rows, algo="gcra", rate="1/s", burst=2, **kwargs)
            assert without_input(got.to_dict()) == without_input(json.loads(done.stdout))
        else:
            message = as_arrow(done.stderr.decode().strip().removeprefix("ratelimit: "), "<stdin>")
            with pytest.raises(ValueError) as refused:
                rl.replay(rows, algo="gcra", rate="1/s", burst=2, **kwargs)
            assert str(refused.value) == message
    # A null time is an empty one: refused, naming the row and the column.
    with pytest.raises(ValueError, match=r"^<arrow>: row 2, field `time`: "):
        rl.replay(pyarrow.table({"time": ["2025-01-01T00:00:00Z", None]}), **GCRA)


def in_python_terms(message: str) -> str:
    """The program's message with each flag named as the package's keyword: `--key` is
    `key=`, and clap's "invalid value 'V' for '--since <TIME>'" is `since=V`."""
    message = re.sub(r"invalid value '([^']*)' for '--([a-z-]+) <[^>]*>'", lambda m: f"{m[2].replace('-', '_')}={m[1]}", message)
    return re.sub(r"\(named by --([a-z-]+)\)", lambda m: f"(named by {m[1].replace('-', '_')}=)", message)


def test_bad_input_raises_the_programs_message(m5, m5_table):
    cases = [
        (dict(key="nope"), ["--key", "nope"]),
        (dict(cost="mag"), ["--cost", "mag"]),
        (dict(rate="5/fortnight"), ["--rate", "5/fortnight"]),
        (dict(since="yesterday"), ["--since", "yesterday"]),
    ]
    for kwargs, flags in cases:
        args = {**GCRA, **kwargs}
        done = cli("replay", str(m5), *[w for f in ("algo", "rate", "burst") if f not in kwargs for w in (f"--{f}", str(GCRA[f]))], *flags)
        assert done.returncode == 2
        message = in_python_terms(done.stderr.decode().strip().removeprefix("ratelimit: "))
        with pytest.raises(ValueError) as refused:
            rl.replay(m5, **args)
        assert str(refused.value) == message
        with pytest.raises(ValueError) as refused:
            rl.replay(m5_table, **args)
        assert str(refused.value) == as_arrow(message, str(m5))
    with pytest.raises(TypeError, match="give a path or Arrow data"):
        rl.replay([1, 2, 3], **GCRA)


def test_a_column_of_a_type_not_read_is_named():
    rows = pyarrow.table({"time": ["2025-01-01T00:00:00Z"], "tags": [[1, 2]]})
    with pytest.raises(ValueError, match=r"^<arrow>: column `tags` holds List.*; read are strings"):
        rl.replay(rows, **GCRA, key="tags")


def test_dictionary_strings_are_read_as_their_values(log_table):
    categories = log_table.set_column(2, "client", log_table["client"].dictionary_encode())
    plain = rl.replay(log_table, **GCRA, key="client", time="ts", time_format="unix-ms")
    assert rl.replay(categories, **GCRA, key="client", time="ts", time_format="unix-ms").to_dict() == plain.to_dict()


def spin(until) -> int:
    """Runs Python until `until()` says stop, and returns how many turns it took."""
    turns = 0
    while not until():
        turns += 1
    return turns


def test_the_gil_is_released_while_the_engine_works(m5_table):
    # Long enough to be seen: the catalog forty times over, keyed.
    big = pyarrow.concat_tables([m5_table] * 40)
    done = threading.Event()
    spans = []

    def work():
        began = time.perf_counter()
        rl.replay(big, algo="sliding-log", rate="1/m", key="net")
        spans.append(time.perf_counter() - began)
        done.set()

    # How fast this thread runs Python alone...
    began = time.perf_counter()
    alone = spin(lambda: time.perf_counter() - began > 0.2) / 0.2
    # ...and while the other replays: with the GIL held by the engine it would barely run
    # (measured: 130,000 turns a second against 8.9 million alone; released, half as fast).
    worker = threading.Thread(target=work)
    worker.start()
    beside = spin(done.is_set)
    worker.join()
    assert beside / spans[0] > alone / 10, f"{beside / spans[0]:.0f} turns a second, {alone:.0f} alone"


def test_emit_is_refused_on_a_table_whose_decisions_are_read_instead(log_table):
    # A replay's decisions are its Report's; the program's --emit is no keyword of it.
    with pytest.raises(TypeError, match="^replay\\(\\) got an unexpected keyword argument 'emit'$"):
        rl.replay(log_table, **GCRA, time="ts", time_format="unix-ms", emit="all")


def test_a_row_a_filter_leaves_out_has_no_decision(m5_table):
    got = rl.replay(m5_table, **GCRA, where=["mag>=6"])
    mags = m5_table["mag"].to_pylist()
    # Null where the row made no event; the events' decisions where it did, as they came.
    assert [d is None for d in got.decisions.to_pylist()] == [m < 6 for m in mags]
    assert got.decisions.null_count == sum(m < 6 for m in mags) and got.events == len(mags) - got.decisions.null_count
    kept = rl.replay(m5_table.filter(pc.greater_equal(m5_table["mag"], 6)), **GCRA)
    assert got.decisions.drop_null().to_pylist() == kept.decisions.to_pylist()


def test_malformed_producers_raise_a_value_error_and_never_a_panic():
    # Each producer is wrong in its own way; every one must raise the documented
    # ValueError (PanicException derives from BaseException, and escapes `except Exception`).
    ts = pyarrow.array([1, 2], pyarrow.timestamp("us", "UTC"))
    timed = pyarrow.schema([("time", pyarrow.timestamp("us", "UTC"))])
    keyed = pyarrow.schema([("time", pyarrow.timestamp("us", "UTC")), ("k", pyarrow.string())])

    class Mismatched:
        """A stream whose batches do not match the schema it declares."""

        def __init__(self, schema, batches):
            self.schema, self.batches = schema, batches

        def __arrow_c_stream__(self, requested_schema=None):
            reader = pyarrow.RecordBatchReader.from_batches(self.schema, self.batches)
            return reader.__arrow_c_stream__(requested_schema)

    def broken():
        yield pyarrow.record_batch({"time": ts})
        raise RuntimeError("the producer broke\nhere")

    producers = [
        (Mismatched(keyed, [pyarrow.record_batch({"time": ts})]), "does not match its schema"),
        (Mismatched(timed, [pyarrow.record_batch({"time": ts, "k": pyarrow.array(["a", "b"])})]), "cannot read"),
        (Mismatched(timed, [pyarrow.record_batch({"time": pyarrow.array(["a", "b"])})]), "cannot read"),
        (Mismatched(pyarrow.schema([("time", pyarrow.string())]), [pyarrow.record_batch({"time": ts})]), "does not match"),
        (pyarrow.table({"x": pyarrow.array([1])}), "no column named `time`"),
        (pyarrow.RecordBatchReader.from_batches(timed, broken()), "cannot read the Arrow data: the producer broke here$"),
    ]
    for producer, said in producers:
        try:
            rl.replay(producer, **GCRA)
        except ValueError as err:
            assert "\n" not in str(err), str(err)
            assert __import__("re").search(said, str(err)), str(err)
        except BaseException as err:  # a panic, or any other: the test fails
            pytest.fail(f"{type(err).__name__}: {err}")
        else:
            pytest.fail(f"{producer!r} was read")
    # No columns and no rows is an empty catalog, as an empty file is.
    assert rl.replay(pyarrow.table({}), **GCRA).events == 0
    # Every pairing of a declared type with a batch of another, one or two columns, and
    # rows or none: read, or a ValueError; never a panic.
    arrays = {
        "timestamp": ts,
        "string": pyarrow.array(["2025-01-01T00:00:00Z", None]),
        "int64": pyarrow.array([1, 2]),
        "float64": pyarrow.array([1.5, None]),
        "bool": pyarrow.array([True, False]),
        "date": pyarrow.array([1, 2], pyarrow.date32()),
    }
    for declared, array in itertools.product(arrays.values(), arrays.values()):
        for names, rows in itertools.product((["time"], ["time", "k"]), (2, 0)):
            schema = pyarrow.schema([(name, declared.type) for name in names])
            batch = pyarrow.record_batch({"time": array.slice(0, rows)})
            try:
                rl.replay(Mismatched(schema, [batch]), **GCRA)
            except ValueError as err:
                assert "\n" not in str(err), str(err)
            except BaseException as err:
                pytest.fail(f"{declared.type} declared, {array.type} given: {type(err).__name__}: {err}")


def test_a_consumed_reader_warns_that_it_gave_no_events():
    table = pyarrow.table({"time": pyarrow.array([1, 2], pyarrow.timestamp("us", "UTC"))})
    reader = pyarrow.RecordBatchReader.from_batches(table.schema, table.to_batches())
    assert rl.replay(reader, **GCRA).events == 2
    # Read once already: the program's note on stderr is a warning of the caller's line.
    with pytest.warns(UserWarning, match="^no events: <arrow> has no rows$") as caught:
        assert rl.replay(reader, **GCRA).events == 0
    assert caught[0].filename == __file__


def test_the_curve_of_no_events_is_a_table_of_no_rows():
    empty = pyarrow.table({"time": pyarrow.array([], pyarrow.timestamp("us", "UTC"))})
    with pytest.warns(UserWarning, match="no events"):
        curve = rl.curve(empty)
    assert curve.num_rows == 0
    times = pyarrow.array([1, 2, 3_000_000], pyarrow.timestamp("us", "UTC"))
    assert curve.schema == rl.curve(pyarrow.table({"time": times})).schema


def test_an_arrow_value_obeys_the_16_mib_bound_of_a_field():
    long = "x" * ((16 << 20) + 1)
    table = pyarrow.table({"time": pyarrow.array(["2025-01-01T00:00:00Z", long])})
    with pytest.raises(ValueError, match=r"^<arrow>: row 2, field `time`: a value longer than 16 MiB"):
        rl.replay(table, **GCRA)
    # At the bound, the value is read (and refused for what it says).
    at = pyarrow.table({"time": pyarrow.array(["x" * (16 << 20)])})
    with pytest.raises(ValueError, match="is not an RFC 3339 time"):
        rl.replay(at, **GCRA)


def test_ctrl_c_stops_a_long_replay_at_once():
    # A replay sized to take about 6 s here, interrupted 0.3 s in: KeyboardInterrupt
    # comes within a second, not when the replay ends.
    import os
    import signal

    import numpy

    def table(n):
        micros = numpy.arange(n, dtype="int64") * 1000
        return pyarrow.table({"time": pyarrow.array(micros, pyarrow.timestamp("us", "UTC"))})

    start = time.monotonic()
    rl.replay(table(1_000_000), **GCRA)
    per_million = time.monotonic() - start
    big = table(min(int(6 / per_million * 1_000_000), 100_000_000))
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        rl.replay(big, **GCRA)
    assert time.monotonic() - start < 1.3, f"{time.monotonic() - start:.2f} s"


def test_a_folder_or_a_pattern_of_parquet_files_is_read_as_the_files_in_it(m5_table, tmp_path):
    # As polars and DuckDB read a Spark job's output: its parts in order of name, not
    # _SUCCESS nor the .crc files beside them.
    import pyarrow.parquet as pq

    half = m5_table.num_rows // 2
    pq.write_table(m5_table.slice(0, half), tmp_path / "part-0.parquet")
    pq.write_table(m5_table.slice(half), tmp_path / "part-1.parquet")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".part-0.parquet.crc").write_text("crc")
    want = without_input(rl.replay(m5_table, key="net", **GCRA).to_dict())
    for given in [tmp_path, str(tmp_path / "*.parquet")]:
        assert without_input(rl.replay(given, key="net", **GCRA).to_dict()) == want
    with pytest.raises(rl.InputError, match=r"\*\.csv: a pattern that matches no file$"):
        rl.replay(str(tmp_path / "*.csv"), **GCRA)
