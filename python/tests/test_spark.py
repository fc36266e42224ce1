"""Spark in local[2] gives the program's answers, from summaries merged on the driver."""

from __future__ import annotations

import doctest

import pyarrow
import pyarrow.csv
import pyarrow.parquet
import pytest

from conftest import REPO, cli, cli_json, synthetic_log, without_input

# The real thing, installed by .ci/run: a run without it fails, it does not skip.
from pyspark.sql import functions as F  # noqa: E402

from ratelimit_replay import spark as rls  # noqa: E402
from ratelimit_replay.errors import InputError  # noqa: E402


@pytest.fixture(scope="module")
def big_log(tmp_path_factory):
    """200,000 requests over an hour as CSV (for the program) and as 1, 3 and 7 Parquet
    files (for Spark), the same rows in the same order, with their row number."""
    folder = tmp_path_factory.mktemp("spark")
    csv = folder / "log.csv"
    csv.write_text(synthetic_log(200_000, seed=23))
    table = pyarrow.csv.read_csv(csv)
    table = table.append_column("tie", pyarrow.array(range(table.num_rows), pyarrow.int64()))
    files = {}
    for count in (1, 3, 7):
        parts = folder / f"parquet-{count}"
        parts.mkdir()
        step = -(-table.num_rows // count)
        for n in range(count):
            pyarrow.parquet.write_table(table.slice(n * step, step), parts / f"part-{n}.parquet")
        files[count] = parts
    return csv, files


@pytest.mark.parametrize("count", [1, 3, 7])
@pytest.mark.parametrize("partitions", [1, 4])
def test_min_bucket_of_one_stream_is_the_programs_for_any_files_and_partitions(spark, big_log, count, partitions):
    csv, files = big_log
    df = spark.read.parquet(str(files[count]))
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    for cost in (None, "tokens"):
        weigh = ["--cost", cost] if cost else []
        want = cli_json("min-bucket", str(csv), "--rate", "100/s,2000/m,1/h", *weigh, *time)
        got = rls.min_bucket(
            df, rate="100/s,2000/m,1/h", cost=cost, time="ts", time_format="unix-ms", tie="tie", partitions=partitions
        )
        assert without_input(got) == without_input(want), (count, partitions, cost)


def test_min_bucket_of_the_real_catalog_with_spark_timestamps_is_the_programs(spark, m5, m5_table):
    rows = m5_table.select(["time", "mag"]).append_column("tie", pyarrow.array(range(m5_table.num_rows)))
    df = spark.createDataFrame(rows.to_pandas())
    assert dict(df.dtypes)["time"] == "timestamp"
    want = cli_json("min-bucket", str(m5), "--rate", "1/h..100/h")
    assert rls.min_bucket(df, rate="1/h..100/h", tie="tie", partitions=3) == without_input(want)


def test_a_bad_row_on_an_executor_raises_the_programs_message(spark):
    df = spark.createDataFrame([("2025-01-01T00:00:00Z",), ("not a time",)], "time string")
    # Named by its range and its place there, in time order (text sorts "n" after "2").
    # The typed error itself, with its fields, carried from the executor.
    with pytest.raises(InputError, match=r"^<partition 0>: row 2, field `time`: \"not a time\" is not an RFC 3339 time") as raised:
        rls.min_bucket(df.withColumn("tie", F.lit(0)), rate="1/s", partitions=1)
    assert (raised.value.row, raised.value.column) == (1, "time")
    # A replay's executor carries it too, keyed (whole keys where they lie) or not.
    keyed = df.withColumn("tie", F.lit(0)).withColumn("ip", F.lit("a"))
    for key in (None, "ip"):
        with pytest.raises(InputError) as raised:
            rls.replay(keyed, algo="gcra", rate="1/s", burst=2, key=key, tie="tie", partitions=1)
        assert raised.value.column == "time", key


def test_events_at_one_time_are_taken_in_the_tie_order_whatever_the_files_order(spark, tmp_path):
    # 3,000 events of 0 to 2 units at 30 instants: where the free ones stand in an instant
    # moves the stretch. The files hold them shuffled; `tie` says the order the program reads.
    import random

    rng = random.Random(4)
    rows = [(1_750_000_000_000 + (n // 100) * 1000, rng.randrange(0, 3), n) for n in range(3000)]
    csv = tmp_path / "ties.csv"
    csv.write_text("ts,tokens,tie\n" + "".join(f"{t},{c},{n}\n" for t, c, n in rows))
    shuffled = rows[:]
    rng.shuffle(shuffled)
    columns = list(zip(*shuffled))
    table = pyarrow.table({"ts": columns[0], "tokens": columns[1], "tie": columns[2]})
    for n in range(3):
        pyarrow.parquet.write_table(table.slice(n * 1000, 1000), tmp_path / f"part-{n}.parquet")
    df = spark.read.parquet(*[str(tmp_path / f"part-{n}.parquet") for n in range(3)])
    want = cli_json("min-bucket", str(csv), "--rate", "90/s", "--cost", "tokens", "--time-column", "ts", "--time-format", "unix-ms")
    got = rls.min_bucket(df, rate="90/s", cost="tokens", time="ts", time_format="unix-ms", tie="tie", partitions=4)
    assert without_input(got) == without_input(want)


def test_the_examples_in_the_spark_page_run_as_written(spark):
    import doctest

    from conftest import REPO

    result = doctest.testfile(
        str(REPO / "docs" / "spark.md"), module_relative=False, globs={"spark": spark}, optionflags=doctest.ELLIPSIS
    )
    assert result.attempted > 0 and result.failed == 0


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    """200,000 requests over an hour from 5,000 clients (six of them written empty), of 0
    to 39 tokens each, as CSV and as 3 Parquet files, with their row number."""
    import random

    folder = tmp_path_factory.mktemp("clients")
    rng = random.Random(31)
    start = 1_750_000_000_000
    rows = sorted((start + rng.randrange(3_600_000), rng.randrange(5_000), rng.randrange(0, 40)) for _ in range(200_000))
    client = lambda c: "" if c % 997 == 0 else f"client-{c}"
    csv = folder / "keyed.csv"
    csv.write_text("ts,client,tokens,tie\n" + "".join(f"{t},{client(c)},{k},{n}\n" for n, (t, c, k) in enumerate(rows)))
    table = pyarrow.csv.read_csv(csv, convert_options=pyarrow.csv.ConvertOptions(column_types={"client": pyarrow.string()}, strings_can_be_null=False))
    for n in range(3):
        pyarrow.parquet.write_table(table.slice(n * 70_000, 70_000), folder / f"part-{n}.parquet")
    return csv, [str(folder / f"part-{n}.parquet") for n in range(3)]


def test_keyed_min_bucket_is_the_programs_for_any_partitions(spark, clients):
    csv, parquet = clients
    df = spark.read.parquet(*parquet)
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    for partitions in (1, 4):
        for cost, extra in ((None, []), ("tokens", ["--cover", "99"])):
            weigh = ["--cost", cost] if cost else []
            want = cli_json("min-bucket", str(csv), "--rate", "1/m", "--key", "client", *weigh, *extra, *time)
            got = rls.min_bucket(
                df, rate="1/m", key="client", cost=cost, cover=extra[1] if extra else None,
                time="ts", time_format="unix-ms", tie="tie", partitions=partitions,
            )
            assert without_input(got) == without_input(want), (partitions, cost)
    # 5,000 clients, six of them (every 997th) written empty: one key, as the program reads it.
    assert want[0]["keys"]["count"] == 4_995


def test_recommend_on_spark_is_the_programs_for_any_partitions(spark, clients):
    csv, parquet = clients
    df = spark.read.parquet(*parquet)
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    want = cli_json("recommend", str(csv), "--key", "client", "--untouched", "99%", "--window", "1m", *time)
    given = cli_json("recommend", str(csv), "--key", "client", "--rate", "1/m,10/m", "--prefer", "smaller-burst", *time)
    for partitions in (1, 4):
        got = rls.recommend(
            df, key="client", untouched=0.99, window="1m", time="ts", time_format="unix-ms", tie="tie", partitions=partitions
        )
        assert got.to_dict() == want, partitions
    got = rls.recommend(df, key="client", rate=["1/m", "10/m"], prefer="smaller-burst", time="ts", time_format="unix-ms")
    assert got.to_dict() == given
    assert want["rates"] == "spread" and len(want["frontier"]) > 2 and want["recommended"]["touched_keys"] > 0
    # The units' limits need every client's events at once: on Spark, no cost.
    with pytest.raises(TypeError, match="unexpected keyword argument 'cost'"):
        rls.recommend(df, key="client", cost="tokens", time="ts", time_format="unix-ms")


def test_no_rows_give_the_programs_answer_to_none(spark):
    df = spark.createDataFrame([], "time string, client string, tie long")
    for key, flags in ((None, []), ("client", ["--key", "client"])):
        done = cli_json("min-bucket", "-", "--rate", "1/s", *flags, stdin=b"time,client,tie\n")
        assert rls.min_bucket(df, rate="1/s", key=key, tie="tie", partitions=2) == without_input(done)


@pytest.mark.parametrize("algo,burst", [("gcra", 3), ("sliding-log", None), ("limits-fixed-window", None), ("haproxy", None)])
def test_keyed_decisions_on_spark_are_the_programs_emitted_row_by_row(spark, big_log, algo, burst):
    csv, files = big_log
    df = spark.read.parquet(str(files[3]))
    flags = ["--algo", algo, "--rate", "20/m", "--key", "client", "--time-column", "ts", "--time-format", "unix-ms"]
    done = cli("replay", str(csv), *flags, *(["--burst", str(burst)] if burst else []), "--emit", "all", "--quiet")
    assert done.returncode == 0, done.stderr.decode()
    # The program's rows come in time order; the log's id says which row each is.
    want = {int(line.split(",")[0]): line.endswith(",passed") for line in done.stdout.decode().splitlines()[1:]}
    got = rls.decisions(
        df, algo=algo, rate="20/m", burst=burst, key="client", time="ts", time_format="unix-ms", tie="tie", partitions=4
    )
    # Counted on Spark, as no row may reach the driver: the rows, those that passed, and
    # those where the two disagree (or one has no decision).
    expected = spark.createDataFrame(list(want.items()), "id long, want boolean")
    assert got.count() == len(want)
    assert got.where("passed").count() == sum(want.values())
    differ = got.join(expected, "id", "full_outer").where("passed IS NULL OR want IS NULL OR passed != want")
    assert differ.count() == 0


@pytest.mark.parametrize("partitions", [1, 4])
def test_keyed_replay_on_spark_is_the_programs_for_any_partitions(spark, clients, partitions):
    csv, parquet = clients
    df = spark.read.parquet(*parquet)
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    for algo, burst, cost in (
        ("gcra", 2, None),
        ("token-bucket", 60, "tokens"),
        ("sliding-log", None, None),
        ("leaky-queue", 2, None),
        ("limits-sliding-window", None, "tokens"),
    ):
        flags = ["--algo", algo, "--rate", "1/m", "--key", "client"]
        flags += (["--burst", str(burst)] if burst else []) + (["--cost", cost] if cost else [])
        want = cli_json("replay", str(csv), *flags, *time)
        got = rls.replay(
            df, algo=algo, rate="1/m", burst=burst, key="client", cost=cost,
            time="ts", time_format="unix-ms", tie="tie", partitions=partitions,
        )
        assert without_input(got) == without_input(want), (algo, partitions)
        # Every key drops some, and the run as a whole is held to no bound a key keeps.
        assert want["keys"]["count"] == 4_995 and want["dropped"] > 0


def test_keyed_compare_on_spark_is_the_programs_six(spark, clients):
    csv, parquet = clients
    df = spark.read.parquet(*parquet)
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    want = cli_json("compare", str(csv), "--rate", "1/m", "--burst", "2", "--key", "client", *time)
    got = rls.compare(df, rate="1/m", burst=2, key="client", time="ts", time_format="unix-ms", tie="tie", partitions=2)
    assert [r["algorithm"] for r in got] == [r["algorithm"] for r in want]
    assert without_input(got) == without_input(want)


def test_keyed_replay_of_the_synthetic_log_in_any_files_is_the_programs(spark, big_log):
    csv, files = big_log
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    want = cli_json("replay", str(csv), "--algo", "gcra", "--rate", "20/m", "--burst", "3", "--key", "client", *time)
    for count in (1, 7):
        df = spark.read.parquet(str(files[count]))
        got = rls.replay(df, algo="gcra", rate="20/m", burst=3, key="client", time="ts", time_format="unix-ms", tie="tie")
        assert without_input(got) == without_input(want), count


def emitted(path, *flags: str) -> dict:
    """Each row's decision by the program (`--emit all`), by the row's `id`."""
    import csv as csvlib

    done = cli("replay", str(path), *flags, "--emit", "all", "--quiet")
    assert done.returncode == 0, done.stderr.decode()
    rows = csvlib.reader(done.stdout.decode().splitlines())
    header = next(rows)
    at, decision = header.index("id"), header.index("decision")
    return {row[at]: row[decision] == "passed" for row in rows}


def same_decisions(spark, got, want: dict) -> None:
    """Checks on Spark that `got`'s `passed` is `want`'s, row by row: no row reaches the
    driver, only counts."""
    expected = spark.createDataFrame([(str(k), v) for k, v in want.items()], "id string, want boolean")
    got = got.withColumn("id", got["id"].cast("string"))
    assert got.count() == len(want)
    differ = got.join(expected, "id", "full_outer").where("passed IS NULL OR want IS NULL OR passed != want")
    assert differ.count() == 0


@pytest.mark.parametrize("algo,burst", [("sliding-counter", None), ("sliding-log", None), ("fixed-window", None)])
def test_decisions_of_one_stream_cut_where_the_limiter_rests_are_the_programs(spark, m5, m5_table, algo, burst):
    # Earthquakes an hour apart or more leave a limit of 1/h at rest: the 11-year catalog
    # is cut into 6 ranges of time, each decided from a fresh state where it may be.
    flags = ["--algo", algo, "--rate", "1/h", *(["--burst", str(burst)] if burst else [])]
    rows = m5_table.select(["time", "id", "mag"]).append_column("tie", pyarrow.array(range(m5_table.num_rows)))
    df = spark.createDataFrame(rows.to_pandas())
    got = rls.decisions(df, algo=algo, rate="1/h", burst=burst, tie="tie", partitions=6)
    # Where two ranges meet less than an hour apart, they are one segment, decided in order.
    method, segments = got.ratelimit_method.split(": ")
    assert method == "reset cuts" and 2 <= int(segments.split()[0]) <= 6, got.ratelimit_method
    same_decisions(spark, got, emitted(m5, *flags))


@pytest.mark.parametrize(
    "algo,burst,method",
    [
        ("gcra", 3, "transfer functions: 4 ranges"),
        ("token-bucket", 3, "transfer functions: 4 ranges"),
        ("leaky-queue", 3, "transfer functions: 4 ranges"),
        ("sliding-log", None, "sequential"),
    ],
)
def test_decisions_of_one_stream_that_never_rests_are_the_programs(spark, big_log, algo, burst, method):
    # A request every 18 ms against 20/m: never idle long enough to cut. GCRA decides each
    # range from its true start, found by composing the ranges' functions; the sliding
    # log decides the whole stream in order in one task.
    csv, files = big_log
    df = spark.read.parquet(str(files[3]))
    flags = ["--algo", algo, "--rate", "20/m", *(["--burst", str(burst)] if burst else [])]
    flags += ["--time-column", "ts", "--time-format", "unix-ms"]
    got = rls.decisions(df, algo=algo, rate="20/m", burst=burst, time="ts", time_format="unix-ms", tie="tie", partitions=4)
    assert got.ratelimit_method == method
    same_decisions(spark, got, emitted(csv, *flags))


@pytest.mark.parametrize(
    "algo,burst,method",
    [
        ("sliding-counter", None, "reset cuts"),
        ("fixed-window", None, "reset cuts"),
        ("sliding-log", None, "reset cuts"),
        ("token-bucket", 2, "transfer functions"),
        ("leaky-queue", 3, "transfer functions"),
    ],
)
def test_replay_of_one_stream_of_the_real_catalog_is_the_programs(spark, m5, m5_table, algo, burst, method):
    # The 11-year catalog at 1/h in 6 ranges: counts, busiest windows, the lossless bucket
    # and the promise's figures (an aligned window's, a period's, a bucket's, the queue's
    # waits) merged from the ranges and blocks of time equal the program's one pass.
    flags = ["--algo", algo, "--rate", "1/h", *(["--burst", str(burst)] if burst else [])]
    want = cli_json("replay", str(m5), *flags)
    rows = m5_table.select(["time", "id", "mag"]).append_column("tie", pyarrow.array(range(m5_table.num_rows)))
    df = spark.createDataFrame(rows.to_pandas())
    got = rls.replay(df, algo=algo, rate="1/h", burst=burst, tie="tie", partitions=6)
    # Where Spark's sampled range cuts fall depends on the session's earlier jobs: when every
    # cut falls where the bucket is at rest, the ranges are cut there instead (exact too).
    # The transfer functions are held to their method on the log above, at 20/m.
    assert got.method.startswith(method) or got.method.startswith("reset cuts"), got.method
    assert without_input(got) == without_input(want)
    assert want["dropped"] > 0


@pytest.mark.parametrize("count,partitions", [(1, 1), (7, 4)])
def test_replay_of_one_stream_that_never_rests_is_the_programs_weighted_or_not(spark, big_log, count, partitions):
    # 200,000 requests never idle long enough to cut: GCRA's and the leaky queue's ranges
    # start where the ranges before left them (the queue's waits too); the sliding log is
    # one pass; weighted by tokens, units and the first request too big to pass. One
    # partition is one pass whatever the limiter.
    csv, files = big_log
    df = spark.read.parquet(str(files[count]))
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    for algo, rate, burst, cost, method in (
        ("gcra", "20/m", 3, None, "transfer functions"),
        ("leaky-queue", "20/m", 3, None, "transfer functions"),
        ("sliding-log", "20/m", None, None, "sequential"),
        # Weighted, its ranges' functions pass the cap on pieces: one pass, in order.
        ("token-bucket", "60000/m", 300, "tokens", "sequential"),
    ):
        flags = ["--algo", algo, "--rate", rate, *(["--burst", str(burst)] if burst else [])]
        flags += ["--cost", cost] if cost else []
        want = cli_json("replay", str(csv), *flags, *time)
        got = rls.replay(
            df, algo=algo, rate=rate, burst=burst, cost=cost, time="ts", time_format="unix-ms",
            tie="tie", partitions=partitions,
        )
        assert got.method.startswith(method if partitions > 1 else "sequential"), got.method
        assert without_input(got) == without_input(want), (algo, count, partitions)
        assert want["dropped"] > 0 and (not cost or want["too_big"]["events"] > 0)


@pytest.mark.parametrize("count,partitions", [(1, 1), (3, 4), (7, 4)])
def test_the_real_catalog_in_parquet_files_on_spark_is_the_programs(spark, m5, m5_table, tmp_path, count, partitions):
    # The 11-year catalog written as `count` Parquet files, its times as timestamps, ties
    # in the order the files are read in (`_metadata`): the sizes, the curve, a replay of
    # one stream and one per network, and every decision are the program's on the CSV.
    from ratelimit_replay import _curve_table

    step = -(-m5_table.num_rows // count)
    for n in range(count):
        # Spark reads times to the µs: the catalog's are whole ms.
        pyarrow.parquet.write_table(m5_table.slice(n * step, step), tmp_path / f"part-{n}.parquet", coerce_timestamps="us")
    df = spark.read.parquet(str(tmp_path)).select(
        "*", F.col("_metadata.file_path").alias("file"), F.col("_metadata.row_index").alias("row")
    )
    ties = dict(tie=["file", "row"], partitions=partitions)
    assert rls.min_bucket(df, rate="1/h,10/h", **ties) == without_input(cli_json("min-bucket", str(m5), "--rate", "1/h,10/h"))
    want = _curve_table(cli_json("min-bucket", str(m5), "--curve"))
    assert rls.curve(df, **ties).equals(want)
    flags = ["--algo", "gcra", "--rate", "1/h", "--burst", "3"]
    got = rls.replay(df, algo="gcra", rate="1/h", burst=3, **ties)
    assert without_input(got) == without_input(cli_json("replay", str(m5), *flags)), got.method
    same_decisions(spark, rls.decisions(df, algo="gcra", rate="1/h", burst=3, **ties), emitted(m5, *flags))
    keyed = ["--algo", "sliding-log", "--rate", "1/h", "--key", "net"]
    got = rls.replay(df, algo="sliding-log", rate="1/h", key="net", **ties)
    assert without_input(got) == without_input(cli_json("replay", str(m5), *keyed))
    assert got["dropped"] > 0


def test_compare_of_one_stream_on_spark_is_the_programs_six(spark, m5, m5_table):
    # Each row of the program's compare is that limiter's replay over every row.
    want = cli_json("compare", str(m5), "--rate", "1/h", "--burst", "3")
    rows = m5_table.select(["time", "id", "mag"]).append_column("tie", pyarrow.array(range(m5_table.num_rows)))
    df = spark.createDataFrame(rows.to_pandas())
    got = rls.compare(df, rate="1/h", burst=3, tie="tie", partitions=3)
    assert [r["algorithm"] for r in got] == [r["algorithm"] for r in want]
    assert without_input(got) == without_input(want)


def test_the_curve_of_the_real_catalog_on_spark_is_the_programs(spark, m5, m5_table):
    # Each of 6 ranges sends its curve and two hulls; merged in order, they are the curve
    # of the 11-year catalog, every piece and the stretch that sets it.
    from ratelimit_replay import _curve_table

    want = _curve_table(cli_json("min-bucket", str(m5), "--curve"))
    rows = m5_table.select(["time", "id", "mag"]).append_column("tie", pyarrow.array(range(m5_table.num_rows)))
    got = rls.curve(spark.createDataFrame(rows.to_pandas()), tie="tie", partitions=6)
    assert got.num_rows > 10 and got.equals(want), (got.num_rows, want.num_rows)


@pytest.mark.parametrize("count,partitions", [(1, 1), (7, 4)])
def test_the_weighted_curve_of_a_log_on_spark_is_the_programs(spark, big_log, count, partitions):
    from ratelimit_replay import _curve_table

    csv, files = big_log
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    want = _curve_table(cli_json("min-bucket", str(csv), "--curve", "--cost", "tokens", *time))
    df = spark.read.parquet(str(files[count]))
    got = rls.curve(df, cost="tokens", time="ts", time_format="unix-ms", tie="tie", partitions=partitions)
    assert got.equals(want)


def test_layers_and_nginx_on_spark_are_the_programs_in_one_pass(spark, clients):
    # What no cut splits (a keyed layer with a global one; nginx's keys, which share its
    # zone) runs in one pass in one task: the program's report and its every decision.
    csv, parquet = clients
    df = spark.read.parquet(*parquet).withColumn("id", F.col("tie"))
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    limits = ["algo=gcra,rate=2/m,burst=3,key=client", "algo=token-bucket,rate=30000/m,burst=2000,cost=tokens"]
    layered = [word for spec in limits for word in ("--limit", spec)]
    nginx = ["--algo", "nginx", "--rate", "1r/m", "--burst", "2", "--key", "client"]
    for flags, given in (
        (layered, dict(limits=limits)),
        (nginx, dict(algo="nginx", rate="1r/m", burst=2, key="client")),
    ):
        want = cli_json("replay", str(csv), *flags, *time)
        got = rls.replay(df, time="ts", time_format="unix-ms", tie="tie", partitions=4, **given)
        # The global layer refuses 75,075 events alone: it may refuse some in the run.
        said = f"sequential: `{limits[1]}` refuses 75075 alone" if "limits" in given else "sequential"
        assert got.method == said
        assert without_input(got) == without_input(want)
        decided = rls.decisions(df, time="ts", time_format="unix-ms", tie="tie", partitions=4, **given)
        assert decided.ratelimit_method == said.removesuffix(" 75075 alone").replace("refuses", "refuses alone")
        same_decisions(spark, decided.select("id", "passed"), emitted(csv_with_id(csv), *flags, *time))
    # Both layers refuse some: the global one is no bystander.
    assert all(layer["refused"] > 0 for layer in cli_json("replay", str(csv), *layered, *time)["layers"])
    # Each layer's column says whether it admitted the row.
    decided = rls.decisions(df, limits=limits, time="ts", time_format="unix-ms", tie="tie")
    assert decided.columns[-3:] == ["passed", *limits]
    assert decided.where(F.col("passed") & ~(F.col(limits[0]) & F.col(limits[1]))).count() == 0


@pytest.mark.parametrize("partitions", [1, 4])
def test_keyed_layers_beside_a_global_one_that_refuses_nothing_alone_run_by_key(spark, clients, partitions):
    # A global layer that refuses no event alone refuses none in the run: the keyed layers
    # decide each key alone, by key, and the global layer's report is of what passed.
    csv, parquet = clients
    df = spark.read.parquet(*parquet).withColumn("id", F.col("tie"))
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    limits = ["algo=gcra,rate=2/m,burst=3,key=client", "algo=sliding-log,rate=75000/m,cost=tokens",
              "algo=sliding-log,rate=3/m,key=client"]
    flags = [word for spec in limits for word in ("--limit", spec)]
    want = cli_json("replay", str(csv), *flags, *time)
    assert [layer["alone"] > 0 for layer in want["layers"]] == [True, False, True]
    got = rls.replay(df, limits=limits, time="ts", time_format="unix-ms", tie="tie", partitions=partitions)
    assert got.method == "by key: the global layers refuse nothing"
    assert without_input(got) == without_input(want)
    decided = rls.decisions(df, limits=limits, time="ts", time_format="unix-ms", tie="tie", partitions=partitions)
    assert decided.ratelimit_method == "by key: the global layers refuse nothing"
    assert decided.columns[-4:] == ["passed", *limits]
    same_decisions(spark, decided.select("id", "passed"), emitted(csv_with_id(csv), *flags, *time))
    assert decided.where(F.col("passed").isNotNull() & ~F.col(f"`{limits[1]}`")).count() == 0


@pytest.mark.parametrize("partitions", [1, 4])
def test_layers_keyed_by_one_column_on_spark_are_the_programs_by_key(spark, clients, partitions):
    # Every layer keyed by client: each key's layers decide its events alone, so each key
    # is replayed whole on its executor, and each layer's report merged as one limit's.
    csv, parquet = clients
    df = spark.read.parquet(*parquet).withColumn("id", F.col("tie"))
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    limits = ["algo=gcra,rate=2/m,burst=3,key=client", "algo=sliding-log,rate=40/m,key=client,cost=tokens"]
    flags = [word for spec in limits for word in ("--limit", spec)]
    want = cli_json("replay", str(csv), *flags, *time)
    got = rls.replay(df, limits=limits, time="ts", time_format="unix-ms", tie="tie", partitions=partitions)
    assert got.method == "by key"
    assert without_input(got) == without_input(want)
    assert all(layer["refused"] > 0 for layer in want["layers"]), "each layer refuses some"
    decided = rls.decisions(df, limits=limits, time="ts", time_format="unix-ms", tie="tie", partitions=partitions)
    assert decided.ratelimit_method == "by key" and decided.columns[-2:] == limits
    same_decisions(spark, decided.select("id", "passed"), emitted(csv_with_id(csv), *flags, *time))


@pytest.mark.parametrize("via", ["apply", "udtf"])
def test_keyed_work_through_apply_in_arrow_or_an_arrow_udtf_is_the_programs(spark, clients, via):
    # groupBy(bucket).applyInArrow hands each bucket over unsorted, sorted in Rust; TABLE(df)
    # PARTITION BY a hash bucket of the client ORDER BY client, ts, tie hands it over in
    # order. The answers are the program's, as by the default, though the rows come in
    # the reverse of their order: a bucket handed over as it came would decide a key's
    # events at one time in the wrong order.
    csv, parquet = clients
    df = spark.read.parquet(*parquet).withColumn("id", F.col("tie")).orderBy(F.col("tie").desc())
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    keyed = dict(key="client", time="ts", time_format="unix-ms", tie="tie", partitions=8, via=via)
    want = cli_json("min-bucket", str(csv), "--rate", "1/m", "--key", "client", "--cover", "99%", *time)
    assert rls.min_bucket(df, rate="1/m", cover="99%", **keyed) == want
    for algo, burst, cost in (("gcra", 2, None), ("token-bucket", 60, "tokens")):
        flags = ["--algo", algo, "--rate", "1/m", "--burst", str(burst), "--key", "client"]
        flags += ["--cost", cost] if cost else []
        want = cli_json("replay", str(csv), *flags, *time)
        got = rls.replay(df, algo=algo, rate="1/m", burst=burst, cost=cost, **keyed)
        assert without_input(got) == without_input(want), algo
    decided = rls.decisions(df, algo="gcra", rate="1/m", burst=2, **keyed)
    flags = ["--algo", "gcra", "--rate", "1/m", "--burst", "2", "--key", "client", *time]
    same_decisions(spark, decided.select("id", "passed"), emitted(csv_with_id(csv), *flags))


def test_the_order_an_engine_promised_is_checked_and_a_bucket_sorted_in_rust():
    from ratelimit_replay import _native

    # Two batches, as a partition arrives: client b's second row came before its first.
    table = pyarrow.Table.from_batches([
        pyarrow.record_batch({"client": ["a", "b"], "ts": [5, 9], "tie": [0, 1]}),
        pyarrow.record_batch({"client": ["b", "c"], "ts": [3, 1], "tie": [2, 3]}),
    ])
    with pytest.raises(ValueError, match=r"^<partition 2>: row 3 belongs before row 2 in \(client, ts, tie\) order"):
        _native.check_order(table, ["client", "ts", "tie"], "<partition 2>")
    ordered = table.take(pyarrow.array(_native.order_by(table, ["client", "ts", "tie"], "<bucket 0>")))
    assert ordered.column("tie").to_pylist() == [0, 2, 1, 3]
    _native.check_order(ordered, ["client", "ts", "tie"], "<bucket 0>")
    with pytest.raises(ValueError, match=r"^via: 'sorted' is not one of 'map', 'apply', 'udtf'$"):
        rls.replay(None, algo="gcra", rate="1/s", key="client", via="sorted")


def test_a_way_to_hand_keys_over_that_the_running_spark_lacks_is_a_one_line_error(monkeypatch):
    import pyspark

    monkeypatch.setattr(pyspark, "__version__", "4.0.1")
    with pytest.raises(ValueError, match=r"^via: 'udtf' needs Spark 4.1 or later; this is 4.0.1$"):
        rls.replay(None, algo="gcra", rate="1/s", key="client", via="udtf")
    monkeypatch.setattr(pyspark, "__version__", "3.5.7")
    with pytest.raises(ValueError, match=r"^via: 'apply' needs Spark 4.0 or later; this is 3.5.7$"):
        rls.decisions(None, algo="gcra", rate="1/s", key="client", via="apply")


def csv_with_id(csv):
    """`csv` with an `id` column, each row's number, as `emitted` keys decisions by it."""
    path = csv.with_name(csv.stem + "-id.csv")
    if not path.exists():
        lines = csv.read_text().splitlines()
        path.write_text("\n".join([lines[0] + ",id"] + [f"{line},{n}" for n, line in enumerate(lines[1:])]) + "\n")
    return path


def test_a_bad_row_in_a_replay_or_its_decisions_raises_the_programs_message(spark):
    df = spark.createDataFrame(
        [("2025-01-01T00:00:00Z", "a", 0), ("not a time", "a", 1)], "time string, client string, tie long"
    )
    said = r"^<partition \d+>: row 2, field `time`: \"not a time\" is not an RFC 3339 time"
    with pytest.raises(InputError, match=said):
        rls.replay(df, algo="gcra", rate="1/s", key="client", tie="tie", partitions=1)
    with pytest.raises(ValueError, match=said):
        rls.decisions(df, algo="sliding-log", rate="1/s", tie="tie", partitions=1).count()


def test_a_parquet_files_path_and_row_index_order_ties_as_the_files_read_in_turn(spark, tmp_path):
    # 3,000 events of 0 to 2 units at 30 instants, shuffled into 3 Parquet files: the order
    # the program reads them in, file after file, is (file path, row index), which
    # `_metadata` gives; a run that ignored it would move the stretch.
    import random

    rng = random.Random(9)
    rows = [(1_750_000_000_000 + (n // 100) * 1000, rng.randrange(0, 3)) for n in range(3000)]
    rng.shuffle(rows)
    parts = [rows[n * 1000 : (n + 1) * 1000] for n in range(3)]
    for n, part in enumerate(parts):
        table = pyarrow.table({"ts": [t for t, _ in part], "tokens": [c for _, c in part]})
        pyarrow.parquet.write_table(table, tmp_path / f"part-{n}.parquet")
    csv = tmp_path / "in-turn.csv"
    csv.write_text("ts,tokens\n" + "".join(f"{t},{c}\n" for part in parts for t, c in part))
    df = spark.read.parquet(str(tmp_path / "part-*.parquet")).select(
        "*", F.col("_metadata.file_path").alias("file"), F.col("_metadata.row_index").alias("row")
    )
    time = ["--time-column", "ts", "--time-format", "unix-ms", "--cost", "tokens"]
    want = cli_json("min-bucket", str(csv), "--rate", "90/s", *time)
    got = rls.min_bucket(df, rate="90/s", cost="tokens", time="ts", time_format="unix-ms", tie=["file", "row"], partitions=4)
    assert without_input(got) == without_input(want)
    # Another order of the same rows (row index first, then file) moves the stretch: the
    # order is what makes the answer.
    other = rls.min_bucket(df, rate="90/s", cost="tokens", time="ts", time_format="unix-ms", tie=["row", "file"], partitions=4)
    assert other != got


def test_the_readme_python_and_spark_examples_run_as_written(spark):
    """README's Python and Spark examples, run by doctest with this module's Spark."""
    result = doctest.testfile(
        str(REPO / "README.md"),
        module_relative=False,
        globs={"spark": spark},
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted >= 8, result
    assert result.failed == 0


def test_an_empty_dataframe_gives_no_events_as_the_program_does(spark):
    empty = spark.createDataFrame([], "time timestamp")
    program = cli_json("replay", "--algo", "gcra", "--rate", "1/m", stdin=b"time\n")
    report = rls.replay(empty, algo="gcra", rate="1/m")
    assert (report["events"], report["passed"]) == (program["events"], program["passed"]) == (0, 0)
    assert rls.decisions(empty, algo="gcra", rate="1/m").count() == 0
    assert rls.min_bucket(empty, rate="1/m")[0]["min_bucket"] == 0


def test_zone_less_times_are_read_as_utc_with_a_warning(spark):
    ntz = spark.createDataFrame([("2025-01-01 00:00:00",), ("2025-01-01 00:00:30",)], "t string")
    ntz = ntz.select(F.to_timestamp_ntz("t").alias("time"))
    with pytest.warns(UserWarning, match=r"^`time` holds times without a zone \(TIMESTAMP_NTZ\): they are read as UTC") as caught:
        report = rls.replay(ntz, algo="gcra", rate="1/m")
    assert caught[0].filename == __file__
    assert (report["events"], report["passed"]) == (2, 1)
    assert report["busiest_window"]["start"] == "2025-01-01T00:00:00Z"
