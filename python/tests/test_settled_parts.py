"""Limits settled after the response on Spark and Dask: the engine's plan (by key where
every layer is keyed by the one column, else in one pass), and the answer of one replay of
the same rows, peak in flight of all keys included."""

from __future__ import annotations

import subprocess

import pyarrow
import pyarrow.csv
import pytest

import ratelimit_replay as rl
from conftest import PROGRAM

# The real things, installed by .ci/run: a run without them fails, it does not skip.
from ratelimit_replay import spark as rls  # noqa: E402

RESERVE = "reserve=prompt_tokens+max_tokens,cost=total_tokens"

#: Every layer keyed by client: a reserving GCRA, LiteLLM's window and a cap of two.
BY_KEY = [
    f"algo=gcra,rate=6000/m,burst=6000,key=client,{RESERVE}",
    "algo=litellm,rate=30/m,key=client",
    "algo=concurrency,max=2,key=client",
]
#: A token bucket for all clients beside a cap by client: one pass.
GLOBAL = [f"algo=token-bucket,rate=60000/m,burst=60000,{RESERVE}", "algo=concurrency,max=2,key=client"]


@pytest.fixture(scope="module")
def requests_table(tmp_path_factory: pytest.TempPathFactory) -> pyarrow.Table:
    """Requests (18,469) of 60 clients in a day, with tokens and heavy-tailed durations,
    from the program's own generator, and each row's number (`tie`)."""
    path = tmp_path_factory.mktemp("settled-parts") / "requests.csv"
    args = ["synth", "requests", "--tokens", "--seed", "8", "--clients", "60", "--requests", "6000", "--days", "1"]
    subprocess.run([str(PROGRAM), *args, "-o", str(path)], check=True)
    options = pyarrow.csv.ConvertOptions(column_types={"client": pyarrow.string()})
    table = pyarrow.csv.read_csv(path, convert_options=options)
    return table.append_column("tie", pyarrow.array(range(table.num_rows), pyarrow.int64()))


def one_replay(table: pyarrow.Table, specs: list[str]) -> dict:
    found = rl.replay(table, rl.Policy([rl.Limit.parse(spec) for spec in specs]), duration="duration_ms").to_dict()
    found.pop("input")
    return found


@pytest.mark.parametrize("partitions", [1, 3])
def test_spark_replays_layers_keyed_by_one_column_by_key_as_one_replay(spark, requests_table, partitions) -> None:
    want = one_replay(requests_table, BY_KEY)
    assert want["refused"] > 100 and want["peak_in_flight"] > 2, want
    df = spark.createDataFrame(requests_table.to_pandas())
    got = rls.replay(df, limits=BY_KEY, duration="duration_ms", tie="tie", partitions=partitions)
    assert got.method == "by key"
    assert got.pop("input") == "<DataFrame>"
    assert got == want


def test_spark_replays_a_layer_for_every_key_in_one_pass_as_one_replay(spark, requests_table) -> None:
    want = one_replay(requests_table, GLOBAL)
    df = spark.createDataFrame(requests_table.to_pandas())
    got = rls.replay(df, limits=GLOBAL, duration="duration_ms", tie="tie", partitions=3)
    assert got.method.startswith("one pass: a layer without key= counts every key's requests together")
    assert got.pop("input") == "<DataFrame>"
    assert got == want


def test_the_peak_in_flight_of_all_keys_counts_a_request_that_completes_at_once(spark) -> None:
    # At 0 s `a` arrives for 2 s; at 1 s `b` and then `c` arrive and each completes at
    # once, in flight for a moment beside `a`: two at once, never three.
    table = pyarrow.table({
        "time": pyarrow.array([0, 1_000, 1_000, 3_000], pyarrow.int64()),
        "client": ["a", "b", "c", "a"],
        "d": pyarrow.array([2_000, 0, 0, 0], pyarrow.int64()),
        "tie": pyarrow.array(range(4), pyarrow.int64()),
    })
    specs = ["algo=concurrency,max=5,key=client"]
    want = rl.replay(table, rl.Policy([rl.Limit.parse(s) for s in specs]), duration="d", time_format="unix-ms")
    assert want.peak_in_flight == 2
    df = spark.createDataFrame(table.to_pandas())
    got = rls.replay(df, limits=specs, duration="d", tie="tie", time_format="unix-ms", partitions=2)
    assert (got.method, got.peak_in_flight, got.passed) == ("by key", 2, 4)


@pytest.mark.parametrize("specs", [BY_KEY, GLOBAL], ids=["by key", "one pass"])
def test_dask_replays_settled_layers_as_one_replay(client, requests_table, specs) -> None:
    import dask.dataframe

    from ratelimit_replay import dask as rld

    want = one_replay(requests_table, specs)
    ddf = dask.dataframe.from_pandas(requests_table.to_pandas(), npartitions=3)
    got = rld.replay(ddf, limits=specs, duration="duration_ms", tie="tie")
    assert got.method.startswith("by key" if specs is BY_KEY else "one pass: ")
    assert got.pop("input") == "<DataFrame>"
    assert got == want


def test_a_layer_settled_after_the_response_needs_completions_on_spark_too(spark, requests_table) -> None:
    df = spark.createDataFrame(requests_table.slice(0, 10).to_pandas())
    with pytest.raises(rl.PolicyError, match="is settled after the response: give duration= or end="):
        rls.replay(df, limits=[f"algo=gcra,rate=10/m,key=client,{RESERVE}"], tie="tie")
