"""The package gives exactly the program's answers, on the real catalogs and on logs."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pyarrow
import pytest

import ratelimit_replay as rl
from conftest import cli, cli_json, without_input


def algorithms() -> list[str]:
    """Every limiter, as the program lists them when given one it does not know."""
    refused = cli("replay", "--algo", "none", "--rate", "1/s", "--sample").stderr.decode()
    found = re.search(r"\[possible values: ([^\]]+)\]", refused)
    assert found, refused
    names = found.group(1).split(", ")
    # The package refuses it too, naming the same limiters.
    with pytest.raises(rl.PolicyError, match=f"algo=none is not a limiter: one of {', '.join(names)}$"):
        rl.replay(pyarrow.table({"time": ["2025-01-01"]}), algo="none", rate="1/s")
    return names


ALGORITHMS = algorithms()


# The limiters whose systems count each request once, whatever it costs: they take no cost.
UNWEIGHED = {"nginx", "traefik", "envoy-local", "express-rate-limit", "nestjs-throttler", "rack-attack", "django-ratelimit"}


def test_every_limiter_is_listed():
    assert len(ALGORITHMS) == 24 and "gcra" in ALGORITHMS and "haproxy" in ALGORITHMS


@pytest.mark.parametrize("algo", ALGORITHMS)
@pytest.mark.parametrize("keyed", [False, True], ids=["one", "keyed"])
def test_replay_of_the_real_catalog_is_the_programs(m5, m5_table, algo, keyed):
    flags = ["--algo", algo, "--rate", "1/m"] + (["--key", "net"] if keyed else [])
    want = cli_json("replay", str(m5), *flags)
    key = "net" if keyed else None
    got = rl.replay(m5_table, algo=algo, rate="1/m", key=key)
    assert without_input(got.to_dict()) == without_input(want)
    assert got.passed == want["passed"] and got.dropped == want["dropped"]
    # From the path, the package reads as the program reads: the same object, input too.
    assert rl.replay(m5, algo=algo, rate="1/m", key=key).to_dict() == want


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_weighted_keyed_replay_of_a_log_is_the_programs(log_csv, log_table, algo):
    flags = ["--algo", algo, "--rate", "2000/m", "--key", "client", "--cost", "tokens"]
    flags += ["--time-column", "ts", "--time-format", "unix-ms"]
    done = cli("replay", str(log_csv), *flags, "--format", "json")
    kwargs = dict(algo=algo, rate="2000/m", key="client", cost="tokens", time="ts", time_format="unix-ms")
    if done.returncode != 0:
        # A model whose system counts each request once refuses a cost, in the same words.
        with pytest.raises(ValueError) as refused:
            rl.replay(log_table, **kwargs)
        # Its flag named as the keyword it is here.
        program = done.stderr.decode().strip().removeprefix("ratelimit: ")
        assert str(refused.value) == program.replace("--cost:", "cost=:", 1)
        return
    import json

    got = rl.replay(log_table, **kwargs)
    assert without_input(got.to_dict()) == without_input(json.loads(done.stdout))


BURSTS = {"token-bucket", "gcra", "leaky-queue", "nginx", "traefik", "envoy-local"}


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_decisions_are_the_programs_emitted_row_by_row(log_csv, log_table, algo):
    burst = 5 if algo in BURSTS else None
    flags = ["--algo", algo, "--rate", "30/m", "--key", "client"] + (["--burst", str(burst)] if burst else [])
    flags += ["--time-column", "ts", "--time-format", "unix-ms"]
    done = cli("replay", str(log_csv), *flags, "--emit", "all", "--quiet")
    assert done.returncode == 0, done.stderr.decode()
    # Emitted in time order, each row with its decision last; the id says which row.
    want = {}
    for line in done.stdout.decode().splitlines()[1:]:
        fields = line.split(",")
        want[int(fields[0])] = fields[-1] == "passed"
    got = rl.replay(log_table, algo=algo, rate="30/m", burst=burst, key="client", time="ts", time_format="unix-ms")
    assert len(got.decisions) == log_table.num_rows == len(want)
    assert got.decisions.null_count == 0
    assert got.decisions.to_pylist() == [want[row] for row in log_table["id"].to_pylist()]
    assert sum(got.decisions.to_pylist()) == got.passed


def test_layered_replay_is_the_programs(log_csv, log_table):
    limits = ["algo=gcra,rate=100/m,burst=20,key=client", "algo=token-bucket,rate=20000/m,burst=5000,cost=tokens"]
    flags = [word for spec in limits for word in ("--limit", spec)]
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    want = cli_json("replay", str(log_csv), *flags, *time)
    got = rl.replay(log_table, limits=limits, time="ts", time_format="unix-ms")
    assert without_input(got.to_dict()) == without_input(want)
    done = cli("replay", str(log_csv), *flags, *time, "--emit", "all", "--quiet")
    emitted = {int(line.split(",")[0]): line.endswith(",passed") for line in done.stdout.decode().splitlines()[1:]}
    ids = log_table["id"].to_pylist()
    assert got.decisions.column_names == ["passed", *limits]
    assert got.decisions["passed"].to_pylist() == [emitted[row] for row in ids]
    # Each layer's own column: a row passes when every layer admits it, and each layer
    # refused as many as its report says.
    layers = [got.decisions[spec].to_pylist() for spec in limits]
    assert got.decisions["passed"].to_pylist() == [all(each) for each in zip(*layers)]
    for spec, admitted, report in zip(limits, layers, got.layers):
        assert admitted.count(False) == report["refused"], spec
    assert sum(1 for each in zip(*layers) if each.count(False) == 1) == sum(r["only"] for r in got.layers)


@pytest.mark.parametrize("keyed", [False, True], ids=["one", "keyed"])
def test_compare_and_min_bucket_are_the_programs(m5, m5_table, keyed):
    key = ["--key", "net"] if keyed else []
    assert without_input(rl.compare(m5_table, rate="5/h", burst=5, key="net" if keyed else None)) == without_input(
        cli_json("compare", str(m5), "--rate", "5/h", "--burst", "5", *key)
    )
    want = cli_json("min-bucket", str(m5), "--rate", "5/h", *key)
    assert without_input(rl.min_bucket(m5_table, rate="5/h", key="net" if keyed else None)) == without_input(want)


def test_compare_of_every_weighed_limiter_keyed_is_the_programs(log_csv, log_table):
    weighed = [algo for algo in ALGORITHMS if algo not in UNWEIGHED]
    flags = ["--rate", "2000/m", "--key", "client", "--cost", "tokens", "--time-column", "ts", "--time-format", "unix-ms"]
    want = cli_json("compare", str(log_csv), "--algo", ",".join(weighed), *flags)
    got = rl.compare(log_table, rate="2000/m", algos=weighed, key="client", cost="tokens", time="ts", time_format="unix-ms")
    assert len(got) == len(weighed) and without_input(got) == without_input(want)


def test_weighted_min_bucket_min_rate_and_curve_are_the_programs(log_csv, log_table):
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    kw = dict(time="ts", time_format="unix-ms", cost="tokens")
    want = cli_json("min-bucket", str(log_csv), "--rate", "2000/m", "--cost", "tokens", *time)
    assert without_input(rl.min_bucket(log_table, rate="2000/m", **kw)) == without_input(want)
    want = cli_json("min-rate", str(log_csv), "--burst", "5000", "--cost", "tokens", *time)
    assert without_input(rl.min_rate(log_table, burst=5000, **kw)) == without_input(want)
    # Per key, as min_bucket takes key=: the highest rate any client's own bucket needs.
    want = cli_json("min-rate", str(log_csv), "--burst", "5000", "--cost", "tokens", "--key", "client", *time)
    keyed = rl.min_rate(log_table, burst=5000, key="client", **kw)
    assert without_input(keyed) == without_input(want) and keyed[0].worst_key == want[0]["worst_key"]
    assert keyed[0].worst_key is not None and keyed[0].per_hour < rl.min_rate(log_table, burst=5000, **kw)[0].per_hour
    want = cli_json("min-bucket", str(log_csv), "--curve", "--cost", "tokens", *time)
    curve = rl.curve(log_table, **kw)
    assert curve.column_names[:2] == ["rate", "min_bucket"]
    renamed = {"rate": "from", "rate_per_hour": "from_per_hour"}
    assert [{renamed.get(k, k): v for k, v in row.items()} for row in curve.to_pylist()] == [
        {k: piece[k] for k in [renamed.get(c, c) for c in curve.column_names]} for piece in want
    ]
    assert sorted(renamed.get(c, c) for c in curve.column_names) == sorted(want[0])


def page_data(path) -> dict:
    """The data a report page draws from, but how and how fast it was made."""
    text = path.read_text()
    assert text.startswith("<!doctype html>") and text.rstrip().endswith("</html>")
    data = json.loads(text.split('<script type="application/json" id="report-data">')[1].split("</script>")[0])
    for made in ("command", "seconds"):
        data["meta"].pop(made)
    return data


def test_report_writes_the_programs_page(m5, m5_table, tmp_path):
    page = tmp_path / "report.html"
    rl.report(m5_table, page, algo="gcra", rate="5/h", burst=5)
    data = page_data(page)
    assert data["meta"]["input"] == "<arrow>" and data["meta"]["events"] == 19032
    # The page of the file, and of the same rows led by the same limit, is the program's.
    rl.report(m5, page, rl.Limit("gcra", "5/h", burst=5))
    want = tmp_path / "want.html"
    assert cli("report", str(m5), "--algo", "gcra", "--rate", "5/h", "--burst", "5", "-o", str(want)).returncode == 0
    assert page_data(page) == page_data(want)


@pytest.mark.parametrize("side_by_side", [False, True])
def test_a_report_of_keyed_layers_is_the_programs(log_csv, tmp_path, side_by_side):
    specs = ["algo=gcra,rate=30/m,burst=5,key=client", "algo=sliding-log,rate=40000/h,cost=tokens"]
    page, want = tmp_path / "page.html", tmp_path / "want.html"
    rl.report(log_csv, page, limits=specs, time="ts", time_format="unix-ms", side_by_side=side_by_side, top=3)
    args = ["report", str(log_csv), "--time-column", "ts", "--time-format", "unix-ms", "--top", "3", "-o", str(want)]
    args += [word for spec in specs for word in ("--limit", spec)] + (["--side-by-side"] if side_by_side else [])
    done = cli(*args)
    assert done.returncode == 0, done.stderr.decode()
    assert page_data(page) == page_data(want)


def test_a_report_never_writes_over_its_input(log_csv, tmp_path):
    copy = tmp_path / "log.csv"
    copy.write_bytes(log_csv.read_bytes())
    with pytest.raises(rl.RatelimitError, match="refusing to write .* over the input .*: it is the same file"):
        rl.report(copy, copy, algo="gcra", rate="30/m", time="ts", time_format="unix-ms")
    assert copy.read_bytes() == log_csv.read_bytes()
    with pytest.raises(rl.PolicyError, match="side_by_side compares limits"):
        rl.report(copy, tmp_path / "page.html", algo="gcra", rate="30/m", side_by_side=True)
    with pytest.raises(TypeError, match="report\\(\\) got an unexpected keyword argument 'cuver'"):
        rl.report(copy, tmp_path / "page.html", algo="gcra", rate="30/m", cuver="90%")


def test_a_fleet_and_each_layers_need_are_the_programs(m5, m5_table):
    """A simulated fleet (replay's one share, compare's every share) and min-bucket's
    layers, through the engine's calls, are the program's."""
    fleet = ["--servers", "4", "--route", "random", "--seed", "3", "--share", "split"]
    want = cli_json("replay", str(m5), "--algo", "gcra", "--rate", "5/h", "--burst", "5", *fleet)
    got = rl.replay(m5_table, algo="gcra", rate="5/h", burst=5, servers=4, route="random", seed=3, share="split")
    assert without_input(got.to_dict()) == without_input(want)
    want = cli_json("compare", str(m5), "--algo", "gcra", "--rate", "5/h", "--burst", "5", "--servers", "3", "--sync", "10m", "--sync", "1h")
    got = rl.compare(m5_table, rate="5/h", burst=5, algos=["gcra"], servers=3, sync=["10m", "1h"])
    assert without_input(got) == without_input(want) and len(got) == 4
    limits = ["algo=gcra,rate=5/h,burst=5,key=net", "algo=fixed-window,rate=40/d"]
    want = cli_json("min-bucket", str(m5), *[w for spec in limits for w in ("--limit", spec)])
    assert without_input(rl.min_bucket(m5_table, limits=limits)) == without_input(want)
    with pytest.raises(rl.PolicyError, match="^servers=0: |^servers= must be from 1"):
        rl.replay(m5_table, algo="gcra", rate="5/h", servers=0)


@pytest.mark.parametrize("system,rate", [("nginx", "1r/m"), ("haproxy", "1/h"), ("traefik", "1/h")])
def test_a_systems_own_setting_is_the_programs(m5, m5_table, system, rate):
    want = cli_json("min-bucket", str(m5), "--rate", rate, "--key", "net", "--for", system)
    got = rl.min_bucket(m5_table, rate=rate, key="net", system=system)
    assert without_input(got) == without_input(want)
    own = got[0]["system_size"]
    assert own["system"] == system and own["value"] > 0


def test_rates_listed_or_ranged_are_the_programs(m5, m5_table):
    # A comma list, a range, and a list of them, as --rate takes them.
    want = cli_json("min-bucket", str(m5), "--rate", "1/h,5/h", "--rate", "1/d..3/d")
    assert without_input(rl.min_bucket(m5_table, rate=["1/h,5/h", "1/d..3/d"])) == without_input(want)
    assert len(want) == 5
    assert without_input(rl.min_bucket(m5_table, rate="1/h,5/h")) == without_input(want[:2])


def test_a_written_report_leaves_ctrl_c_to_python(tmp_path):
    # The program removes a half-written file at a signal, and exits; in Python, Ctrl-C
    # stays a KeyboardInterrupt after a report is written. Run apart: a lost SIGINT
    # would end the test run.
    script = f"""
import os, signal, time, pyarrow, ratelimit_replay as rl
rl.report(pyarrow.table({{"time": ["2025-01-01T00:00:00Z"]}}), {str(tmp_path / "r.html")!r}, algo="gcra", rate="1/s")
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
except KeyboardInterrupt:
    print("interrupted")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, b"interrupted\n"), done.stderr.decode()


def test_configurations_side_by_side_are_the_programs(log_csv, log_table):
    limits = ["algo=gcra,rate=30/m,burst=5,key=client", "algo=nginx,rate=1r/s,burst=3,nodelay,key=client"]
    flags = [word for spec in limits for word in ("--limit", spec)]
    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    want = cli_json("compare", str(log_csv), *flags, *time)
    got = rl.compare(log_table, limits=limits, time="ts", time_format="unix-ms")
    assert without_input(got) == without_input(want)
    assert got["changes"]["newly_refused"] + got["changes"]["newly_passed"] > 0


@pytest.mark.parametrize("ties", ["together", "spread"])
def test_whole_second_ties_read_either_way_are_the_programs(tmp_path, ties):
    # Three at second 0 and two at second 2: at 2/s with a burst of 1, spread or not.
    log = tmp_path / "whole.csv"
    log.write_text("time\n" + "2025-01-01T00:00:00Z\n" * 3 + "2025-01-01T00:00:02Z\n" * 2)
    limits = ["algo=gcra,rate=2/s,burst=1", "algo=sliding-log,rate=2/s"]
    flags = [word for spec in limits for word in ("--limit", spec)]
    want = cli_json("compare", str(log), *flags, "--ties", ties)
    got = rl.compare(log, limits=limits, ties=ties)
    assert got == want
    other = "together" if ties == "spread" else "spread"
    assert got["configurations"][0]["other_ties"]["ties"] == other
    # GCRA, I = 1/2 s: together it passes one a second (3 dropped); spread, at 0, 1/3, 2/3,
    # 2 and 2.5 s, only 1/3 s comes too soon (1 dropped).
    dropped = {"together": (3, 1), "spread": (1, 3)}[ties]
    assert (got["configurations"][0]["dropped"], got["configurations"][0]["other_ties"]["dropped"]) == dropped
    with pytest.raises(rl.PolicyError, match="'apart' is not a reading of ties: together or spread"):
        rl.compare(log, limits=limits, ties="apart")



@pytest.mark.parametrize("algo", ALGORITHMS)
def test_typed_replays_of_every_limiter_are_the_programs(m5, m5_table, log_csv, log_table, algo):
    """A Limit and a Policy replay as the program's flags do: keyed on the real catalog,
    weighed on a log, and layered, for every limiter; the typed figures are the JSON's."""
    burst = 5 if algo in BURSTS else None
    size = ["--burst", "5"] if burst else []
    want = cli_json("replay", str(m5), "--algo", algo, "--rate", "1/m", "--key", "net", *size)
    got = rl.replay(m5_table, rl.Limit(algo, "1/m", burst=burst, key="net"))
    assert without_input(got.to_dict()) == without_input(want)
    assert (got.passed, got.dropped, got.min_bucket) == (want["passed"], want["dropped"], want.get("min_bucket"))
    assert got.busiest_window is not None and got.busiest_window.count == want["busiest_window"]["count"]
    assert got.keys is not None and got.keys["count"] == want["keys"]["count"]

    time = ["--time-column", "ts", "--time-format", "unix-ms"]
    weighed = ["--algo", algo, "--rate", "2000/m", "--key", "client", "--cost", "tokens", *time]
    done = cli("replay", str(log_csv), *weighed, "--format", "json")
    if done.returncode != 0:
        # A model whose system counts each request once refuses a cost, as it is built.
        with pytest.raises(rl.PolicyError, match="counts each request once"):
            rl.Limit(algo, "2000/m", key="client", cost="tokens")
    else:
        limit = rl.Limit(algo, "2000/m", key="client", cost="tokens")
        got = rl.replay(log_table, limit, time="ts", time_format="unix-ms")
        assert without_input(got.to_dict()) == without_input(json.loads(done.stdout))

    layers = [rl.Limit(algo, "100/m", burst=burst, key="client"), rl.Limit("gcra", "1000/h", burst=50)]
    specs = [word for layer in layers for word in ("--limit", str(layer))]
    want = cli_json("replay", str(log_csv), *specs, *time)
    got = rl.replay(log_table, rl.Policy(layers), time="ts", time_format="unix-ms")
    assert without_input(got.to_dict()) == without_input(want)
    assert [layer.refused for layer in got.layers] == [layer["refused"] for layer in want["layers"]]
