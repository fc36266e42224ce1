"""Dask on a local cluster on 127.0.0.1 gives the program's answers from the same summaries."""

from __future__ import annotations

import dask.dataframe
import pyarrow.csv
import pytest
import dask.distributed  # noqa: F401  (a run without it fails, it does not skip)

from conftest import cli_json, synthetic_log, without_input
from ratelimit_replay import dask as rld


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """50,000 requests as CSV (for the program) and as a pandas frame with its row order."""
    csv = tmp_path_factory.mktemp("dask") / "log.csv"
    csv.write_text(synthetic_log(50_000, seed=41))
    options = pyarrow.csv.ConvertOptions(column_types={"client": pyarrow.string()}, strings_can_be_null=False)
    frame = pyarrow.csv.read_csv(csv, convert_options=options).to_pandas()
    frame["tie"] = range(len(frame))
    return csv, frame


@pytest.mark.parametrize("partitions", [1, 5])
def test_min_bucket_on_dask_is_the_programs_of_one_stream_and_per_key(client, log, partitions):
    csv, frame = log
    ddf = dask.dataframe.from_pandas(frame, npartitions=partitions)
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    kw = dict(time="ts", time_format="unix-ms", tie="tie")
    for cost in (None, "tokens"):
        weigh = ["--cost", cost] if cost else []
        want = cli_json("min-bucket", str(csv), "--rate", "100/m,30/s", *weigh, *time)
        assert rld.min_bucket(ddf, rate="100/m,30/s", cost=cost, **kw) == without_input(want)
        want = cli_json("min-bucket", str(csv), "--rate", "10/m", "--key", "client", *weigh, *time)
        assert rld.min_bucket(ddf, rate="10/m", key="client", cost=cost, **kw) == without_input(want)


def test_whole_second_ties_are_not_spread_in_parts(client, log):
    # A part may hold some of a second's events: spread there, they would not be the run's.
    _, frame = log
    ddf = dask.dataframe.from_pandas(frame, npartitions=2)
    kw = dict(time="ts", time_format="unix-ms", tie="tie", ties="spread")
    with pytest.raises(Exception, match='ties="spread" is not read in parts'):
        rld.min_bucket(ddf, rate="10/m", **kw)
    with pytest.raises(Exception, match='ties="spread" is not read in parts'):
        rld.replay(ddf, algo="gcra", rate="20/m", key="client", **kw)


@pytest.mark.parametrize("partitions", [1, 5])
def test_the_curve_on_dask_is_the_programs(client, log, partitions):
    from ratelimit_replay import _curve_table

    csv, frame = log
    ddf = dask.dataframe.from_pandas(frame, npartitions=partitions)
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    for cost in (None, "tokens"):
        want = _curve_table(cli_json("min-bucket", str(csv), "--curve", *(["--cost", cost] if cost else []), *time))
        got = rld.curve(ddf, cost=cost, time="ts", time_format="unix-ms", tie="tie")
        assert got.num_rows > 5 and got.equals(want), (cost, partitions)


@pytest.mark.parametrize("partitions", [1, 5])
def test_keyed_replay_on_dask_is_the_programs(client, log, partitions):
    csv, frame = log
    ddf = dask.dataframe.from_pandas(frame, npartitions=partitions)
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    for algo, burst, cost in (("gcra", 3, None), ("token-bucket", 40, "tokens"), ("leaky-queue", 2, None)):
        flags = ["--algo", algo, "--rate", "20/m", "--key", "client", "--burst", str(burst)]
        want = cli_json("replay", str(csv), *flags, *(["--cost", cost] if cost else []), *time)
        got = rld.replay(
            ddf, algo=algo, rate="20/m", burst=burst, key="client", cost=cost, time="ts", time_format="unix-ms", tie="tie"
        )
        assert without_input(got) == without_input(want), (algo, partitions)
        assert want["dropped"] > 0


def test_keyed_compare_on_dask_is_the_programs(client, log):
    csv, frame = log
    ddf = dask.dataframe.from_pandas(frame, npartitions=3)
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    want = cli_json("compare", str(csv), "--rate", "20/m", "--burst", "3", "--key", "client", "--algo", "sliding-log,gcra", *time)
    got = rld.compare(ddf, rate="20/m", burst=3, key="client", algos=["sliding-log", "gcra"], time="ts", time_format="unix-ms", tie="tie")
    assert without_input(got) == without_input(want)


@pytest.mark.parametrize(
    "algo,burst,method",
    [
        ("sliding-counter", None, "reset cuts"),
        ("fixed-window", None, "reset cuts"),
        ("token-bucket", 2, "transfer functions"),
        ("leaky-queue", 3, "transfer functions"),
    ],
)
def test_replay_of_one_stream_of_the_real_catalog_on_dask_is_the_programs(client, m5, m5_table, algo, burst, method):
    # The 11-year catalog at 1/h in 6 partitions in time order: cut where the limiter rests,
    # or each partition decided from its true start, then merged as on Spark.
    flags = ["--algo", algo, "--rate", "1/h", *(["--burst", str(burst)] if burst else [])]
    want = cli_json("replay", str(m5), *flags)
    frame = m5_table.select(["time", "id", "mag"]).to_pandas()
    frame["tie"] = range(len(frame))
    ddf = dask.dataframe.from_pandas(frame, npartitions=6)
    got = rld.replay(ddf, algo=algo, rate="1/h", burst=burst, tie="tie")
    assert got.method.startswith(method), got.method
    assert without_input(got) == without_input(want)
    assert want["dropped"] > 0


@pytest.mark.parametrize("partitions", [1, 5])
def test_replay_of_one_stream_that_never_rests_on_dask_is_the_programs_weighted_or_not(client, log, partitions):
    # 50,000 requests never idle long enough to cut: GCRA's partitions (and a token
    # bucket's, weighted by tokens, with the first request too big to pass) start where
    # the ones before left them; the sliding log is one pass. One partition is one pass whatever the limiter.
    csv, frame = log
    ddf = dask.dataframe.from_pandas(frame, npartitions=partitions)
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    for algo, rate, burst, cost, method in (
        ("gcra", "20/m", 3, None, "transfer functions"),
        ("sliding-log", "20/m", None, None, "sequential"),
        ("token-bucket", "60000/m", 300, "tokens", "transfer functions"),
    ):
        flags = ["--algo", algo, "--rate", rate, *(["--burst", str(burst)] if burst else [])]
        flags += ["--cost", cost] if cost else []
        want = cli_json("replay", str(csv), *flags, *time)
        got = rld.replay(ddf, algo=algo, rate=rate, burst=burst, cost=cost, time="ts", time_format="unix-ms", tie="tie")
        assert got.method.startswith(method if partitions > 1 else "sequential"), (algo, got.method)
        assert without_input(got) == without_input(want), (algo, partitions)
        assert want["dropped"] > 0 and (not cost or want["too_big"]["events"] > 0)


def test_layers_and_nginx_on_dask_are_the_programs(client, log):
    # Layers all keyed by one column, by key; a keyed layer beside a global one that
    # refuses nothing alone, by key; beside one that refuses, and nginx's keys (which
    # share its zone), in one pass in one task, saying why.
    csv, frame = log
    ddf = dask.dataframe.from_pandas(frame, npartitions=4)
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    keyed = ["algo=gcra,rate=2/m,burst=3,key=client", "algo=sliding-log,rate=40/m,key=client,cost=tokens"]
    beside = ["algo=gcra,rate=2/m,burst=3,key=client", "algo=sliding-log,rate=200000/m,cost=tokens"]
    mixed = ["algo=gcra,rate=2/m,burst=3,key=client", "algo=token-bucket,rate=30000/m,burst=2000,cost=tokens"]
    for flags, given, method in (
        ([w for spec in keyed for w in ("--limit", spec)], dict(limits=keyed), "by key"),
        # A global layer that refuses nothing alone refuses nothing in the run: by key.
        ([w for spec in beside for w in ("--limit", spec)], dict(limits=beside), "by key: the global layers refuse nothing"),
        ([w for spec in mixed for w in ("--limit", spec)], dict(limits=mixed), f"sequential: `{mixed[1]}` refuses 31050 alone"),
        (["--algo", "nginx", "--rate", "1r/m", "--burst", "2", "--key", "client"],
         dict(algo="nginx", rate="1r/m", burst=2, key="client"), "sequential"),
    ):
        want = cli_json("replay", str(csv), *flags, *time)
        got = rld.replay(ddf, time="ts", time_format="unix-ms", tie="tie", **given)
        assert got.method == method
        assert without_input(got) == without_input(want), method
        assert want["dropped"] > 0


def test_compare_of_one_stream_on_dask_is_the_programs(client, m5, m5_table):
    want = cli_json("compare", str(m5), "--rate", "1/h", "--burst", "3", "--algo", "sliding-log,gcra")
    frame = m5_table.select(["time", "id", "mag"]).to_pandas()
    frame["tie"] = range(len(frame))
    ddf = dask.dataframe.from_pandas(frame, npartitions=4)
    got = rld.compare(ddf, rate="1/h", burst=3, algos=["sliding-log", "gcra"], tie="tie")
    assert without_input(got) == without_input(want)


def test_spark_and_dask_name_no_limiter_and_ask_the_engine_which_method_is_exact():
    # Which limiter may be cut how is the registry's fact, planned by the engine: a limiter's
    # name as a string in spark.py's or dask.py's code would copy it (docstrings aside).
    import ast
    import pathlib

    from typing import Any

    import ratelimit_replay
    import ratelimit_replay as rl
    from ratelimit_replay import _native

    names = {name for name, _, _ in _native.limiters()}
    package = pathlib.Path(ratelimit_replay.__file__).parent
    for source in ("spark.py", "dask.py", "_spark_stream.py", "_spark_rows.py", "_layers.py"):
        tree = ast.parse((package / source).read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node) is not None
        }
        named = [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and id(node) not in docstrings and node.value in names
        ]
        assert named == [], f"{source} names {named}"
    # The engine's plan: keys that share a store go in one pass; what passes as GCRA, by
    # its functions.
    def method(spec: str, report: bool = False) -> Any:
        return _native.Parts([rl.Limit.parse(spec)], False).method(report)

    assert method("algo=nginx,rate=5r/s,key=ip")[0] == "one pass"
    assert method("algo=nginx,rate=5r/s")[0] == "ranges"
    assert method("algo=nginx,rate=5r/s", report=True)[0] == "one pass"
    assert method("algo=leaky-queue,rate=5/s,burst=2") == ("ranges", True, None)
    assert method("algo=sliding-log,rate=5/s,key=ip") == ("by key", False, None)
    # Layers all keyed by one column are by key; global ones in one pass, unless split.
    layers = [rl.Limit.parse("algo=gcra,rate=5/s,burst=2,key=ip"), rl.Limit.parse("algo=fixed-window,rate=9/m,key=ip")]
    assert _native.Parts(layers, True).method() == ("by key", False, None)
    assert _native.Parts(layers[:1] + [rl.Limit.parse("algo=gcra,rate=5/s")], True).method()[0] == "one pass"
