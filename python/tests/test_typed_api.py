"""The typed API: limits checked when built, typed reports, typed errors and warnings.

CI checks this file with ``mypy --strict`` as well as running it: it uses the package as a
typed program would, so a stub that lies fails there.
"""

from __future__ import annotations

import datetime as dt
import json
import pickle
import warnings
from pathlib import Path

import pyarrow
import pytest

import ratelimit_replay as rl

# Ten events, a minute apart, then five in one second.
TIMES = [f"2025-01-01T00:{m:02d}:00Z" for m in range(10)] + [f"2025-01-01T01:00:00.{i}Z" for i in range(5)]


def table(times: list[str] | None = None) -> pyarrow.Table:
    return pyarrow.table({"time": TIMES if times is None else times})


def test_a_limit_is_checked_when_built_and_says_itself() -> None:
    limit = rl.Limit("gcra", "5/h", burst=5)
    assert (limit.algo, limit.rate, limit.burst, limit.cost, limit.key) == ("gcra", "5/h", 5, 1, None)
    assert str(limit) == "algo=gcra,rate=5/h,burst=5"
    assert repr(limit) == "Limit('gcra', '5/h', burst=5)"
    assert limit == rl.Limit("gcra", "5/h", burst=5) and limit != rl.Limit("gcra", "5/h", burst=6)
    nginx = rl.Limit("nginx", "10r/s", burst=20, key="$binary_remote_addr", nodelay=True, dry_run=True)
    assert nginx.params == {"nodelay": True, "dry_run": True}
    assert (nginx.key, str(nginx)) == ("remote_addr", "algo=nginx,rate=10r/s,burst=20,key=remote_addr,nodelay,dry-run")
    # A system's own words for its rate.
    assert rl.Limit("traefik", average=100, period="1m").rate == "100/m"
    assert rl.Limit("haproxy", http_req_rate="10s", gt=20).rate == "20/10s"
    assert rl.Limit("gcra", "200000/m", cost="total_tokens").cost == "total_tokens"


def test_a_misspelled_argument_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match=r"^Limit\(\) got an unexpected keyword argument 'brust' \(did you mean 'burst'\?\)$"):
        rl.Limit("gcra", "5/h", brust=5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nodelai'"):
        rl.Limit("nginx", "5r/s", nodelai=True)
    with pytest.raises(TypeError, match="must be str or int, not float"):
        rl.Limit("nginx", "5r/s", delay=1.5)  # type: ignore[arg-type]
    # The shorthand's keywords and a replay's reading keywords are named the same way.
    with pytest.raises(TypeError, match=r"^replay\(\) got an unexpected keyword argument 'brust' \(did you mean 'burst'\?\)$"):
        rl.replay(table(), algo="gcra", rate="5/h", brust=5)
    with pytest.raises(TypeError, match=r"^replay\(\) got an unexpected keyword argument 'time_fromat' \(did you mean 'time_format'\?\)$"):
        rl.replay(table(), rl.Limit("gcra", "5/h"), time_fromat="unix-ms")
    with pytest.raises(TypeError, match=r"^min_bucket\(\) got an unexpected keyword argument 'sytem' \(did you mean 'system'\?\)$"):
        rl.min_bucket(table(), rate="5/h", sytem="nginx")
    with pytest.raises(TypeError, match=r"^min_rate\(\) got an unexpected keyword argument 'since_' \(did you mean 'since'\?\)$"):
        rl.min_rate(table(), burst=5, since_="2025-01-01")


def test_a_limit_that_is_no_limit_is_a_policy_error() -> None:
    cases = {
        "burst=0: a burst must be at least 1": dict(algo="gcra", rate="5/h", burst=0),
        "burst= applies to": dict(algo="sliding-log", rate="5/h", burst=3),
        "rate=5/x:": dict(algo="gcra", rate="5/x"),
        "a limit needs rate=": dict(algo="gcra"),
        "algo=nope is not a limiter": dict(algo="nope", rate="5/h"),
        "nodelay applies to nginx, not gcra": dict(algo="gcra", rate="5/h", nodelay=True),
        "cost=: nginx counts each request once": dict(algo="nginx", rate="5r/s", cost="tokens"),
        "window must be longer than zero": dict(algo="gcra", rate="5/h", window="0h"),
        "HAProxy counts a period in whole milliseconds": dict(algo="haproxy", rate="5/1500us"),
        "burst= may be at most 1000000000000": dict(algo="gcra", rate="5/h", burst=10**13),
    }
    for message, kwargs in cases.items():
        with pytest.raises(rl.PolicyError) as refused:
            rl.Limit(**kwargs)  # type: ignore[arg-type]
        assert message in str(refused.value), str(refused.value)
        assert isinstance(refused.value, ValueError) and isinstance(refused.value, rl.RatelimitError)


def test_a_policy_is_all_or_nothing_and_checked_whole() -> None:
    a, b = rl.Limit("gcra", "5/h", burst=2, key="user"), rl.Limit("gcra", "20/d")
    policy = rl.Policy([a, b])
    assert len(policy) == 2 and policy.limits == [a, b]
    with pytest.raises(rl.PolicyError, match="1 to 16 limits, not 0"):
        rl.Policy([])
    with pytest.raises(rl.PolicyError, match="keyed by one column, and these name two: `user` and `org`"):
        rl.Policy([a, rl.Limit("gcra", "20/d", key="org")])
    with pytest.raises(rl.PolicyError, match="one busiest window, and these give two: 1h and 2h"):
        rl.Policy([rl.Limit("gcra", "5/h", window="1h"), rl.Limit("gcra", "5/h", window="2h")])


def test_a_limit_of_every_limiter_pickles_to_the_same_limit() -> None:
    # Spark and Dask send limits to their executors pickled: each comes back whole, its
    # window and its own parameters too.
    from ratelimit_replay import _native

    for name, with_burst, _ in _native.limiters():
        limit = rl.Limit(name, "5/s", burst=4 if with_burst else None, key="ip", window="1m")
        again = pickle.loads(pickle.dumps(limit))
        assert again == limit and again.window == "1m" and repr(again) == repr(limit), name
    weighed = rl.Limit("sliding-log", "75000/m", cost="tokens")
    nginx = rl.Limit("nginx", "10r/s", burst=20, key="$binary_remote_addr", nodelay=True, dry_run=True)
    for limit in (weighed, nginx):
        assert pickle.loads(pickle.dumps(limit)) == limit
    assert pickle.loads(pickle.dumps(nginx)).params == {"nodelay": True, "dry_run": True}
    # A replay in parts pickles as what it was made of, and plans the same again.
    from ratelimit_replay import _parts

    parts = _parts(dict(limits=[str(weighed), "algo=gcra,rate=5/s,key=ip"], time="ts", top=3))
    again = pickle.loads(pickle.dumps(parts))
    assert again.method() == parts.method() == ("one pass", False, "its layers are not all keyed by one column")
    assert again.beside() is not None and again.key is None


def test_sizes_and_compares_are_typed_and_are_the_programs_json() -> None:
    # Ten events a minute apart and five at 1:00: at 5/h (one token each 12 minutes), the
    # first and the last are 15 events in 60 minutes and 0.4 s, which refill 5 tokens and
    # a little: 10 must be held at once.
    sized = rl.min_bucket(table(), rate="5/h")
    assert isinstance(sized[0], rl.MinBucket) and (sized[0].rate, sized[0].min_bucket) == ("5/h", 10)
    assert sized[0].span is not None and sized[0].span.events == 15
    # Still the program's JSON: a dict, equal to what it prints, written back by json.
    assert sized[0]["min_bucket"] == 10 and json.loads(json.dumps(sized))[0] == sized[0].to_dict()
    rates = rl.min_rate(table(), burst=10)
    assert rates[0].burst == 10 and rates[0].rate is not None
    compared = rl.compare(table(), rate="5/h", burst=5, algos=["gcra", "fixed-window"])
    assert [row.algorithm for row in compared] == ["gcra", "fixed-window"]
    assert all(row.passed + row.dropped == row.events == 15 for row in compared)
    assert compared[0].min_bucket == 10 and compared[0].busiest_window is not None
    configs = rl.compare(table(), [rl.Limit("gcra", "5/h", burst=5), "algo=gcra,rate=5/h,burst=10"])
    specs = [row.spec for row in configs.configurations]
    assert specs == ["algo=gcra,rate=5/h,burst=5", "algo=gcra,rate=5/h,burst=10"]
    assert configs.configurations[1].dropped == 0 and configs.changes is not None
    needs = rl.min_bucket(table(), limits=["algo=gcra,rate=5/h,burst=5", "algo=fixed-window,rate=100/h"])
    assert [layer["min_bucket"] for layer in needs.layers][0] == 10
    assert needs.tightest == "algo=gcra,rate=5/h,burst=5"
    keyed = pyarrow.table({"time": table()["time"], "ip": ["a"] * 10 + ["b"] * 5})
    advice = rl.recommend(keyed, key="ip", untouched=0.5, rate=["5/h", "1/m"])
    assert isinstance(advice, rl.Recommendation) and advice.key_count == 2
    assert [point.burst for point in advice.frontier] == [5, 1]
    assert advice.recommended.untouched_keys >= 1 and advice.window is None


def test_a_replay_of_a_limit_is_the_shorthands_and_typed() -> None:
    limit = rl.Limit("gcra", "5/h", burst=5)
    report = rl.replay(table(), limit)
    assert report.to_dict() == rl.replay(table(), algo="gcra", rate="5/h", burst=5).to_dict()
    # Ten a minute apart: the first five empty the bucket, and the next five find under a
    # token (one comes back each 12 minutes); by 1:00 it is full again, for the last five.
    assert (report.events, report.passed, report.dropped) == (15, 10, 5)
    assert (report.algorithm, report.rate, report.burst) == ("gcra", "5/h", 5)
    window = report.busiest_window
    assert window is not None and (window.length_s, window.count) == (3600, 9)
    # All fifteen in the hour, less the five the rate brings in it.
    assert report.min_bucket == 10 and report.layers == [] and report.keys is None
    assert report.decisions is not None and len(report.decisions) == 15
    with pytest.raises(rl.PolicyError, match="give a Limit or a Policy, or rate=, not both"):
        rl.replay(table(), limit, rate="5/h")


def test_a_replay_of_a_policy_has_typed_layers() -> None:
    policy = rl.Policy([rl.Limit("gcra", "5/h", burst=5), rl.Limit("fixed-window", "3/m")])
    report = rl.replay(table(), policy)
    assert [layer.spec for layer in report.layers] == ["algo=gcra,rate=5/h,burst=5", "algo=fixed-window,rate=3/m"]
    refused = [layer.refused for layer in report.layers]
    assert sum(refused) >= report.dropped > 0 and all(isinstance(n, int) for n in refused)
    assert report.to_dict() == rl.replay(table(), limits=[str(limit) for limit in policy.limits]).to_dict()


def test_bad_arrow_data_is_an_input_error_with_its_row_and_column() -> None:
    times = ["2025-01-01T00:00:00Z"] * 3 + ["yesterday"] + ["2025-01-01T00:00:01Z"]
    with pytest.raises(rl.InputError) as refused:
        rl.replay(table(times), rl.Limit("gcra", "5/h"))
    error = refused.value
    assert (error.row, error.column, error.path, error.line) == (3, "time", None, None)
    assert isinstance(error, ValueError) and str(error).startswith("<arrow>: row 4, field `time`")
    # Pickled whole, as Spark and Dask send an executor's error to the driver.
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.row, again.column, str(again)) == (rl.InputError, 3, "time", str(error))


def test_a_bad_file_is_an_input_error_with_its_path_and_line(tmp_path: Path) -> None:
    path = tmp_path / "events.csv"
    path.write_text("time,user\n2025-01-01T00:00:00Z,a\nnot a time,b\n")
    with pytest.raises(rl.InputError) as refused:
        rl.replay(path, rl.Limit("gcra", "5/h"))
    error = refused.value
    assert (error.path, error.line, error.column, error.row) == (str(path), 3, "time", None)
    with pytest.raises(FileNotFoundError):
        rl.replay(tmp_path / "missing.csv", rl.Limit("gcra", "5/h"))


def test_the_programs_notes_are_ratelimit_warnings() -> None:
    seconds = [f"2025-01-01T00:00:{s:02d}Z" for s in range(3)] * 2
    with pytest.warns(rl.RatelimitWarning, match="the times are whole seconds"):
        rl.replay(table(sorted(seconds)), rl.Limit("gcra", "1/s"))
    # A warning like any other: a filter can make it an error.
    with warnings.catch_warnings():
        warnings.simplefilter("error", rl.RatelimitWarning)
        with pytest.raises(rl.RatelimitWarning):
            rl.replay(table(sorted(seconds)), rl.Limit("gcra", "1/s"))


def test_a_limiter_decides_a_limit() -> None:
    start = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
    limiter = rl.Limiter(rl.Limit("gcra", "1/m", burst=2))
    passed = [limiter.decide(start + dt.timedelta(seconds=s), key="a").passed for s in (0, 1, 2, 61)]
    assert passed == [True, True, False, True]
    both = rl.Limiter(rl.Policy([rl.Limit("gcra", "1/m", burst=2, key="k"), rl.Limit("fixed-window", "2/h")]))
    at = [start + dt.timedelta(seconds=s) for s in (0, 1, 2)]
    outcomes = [both.decide(t, key=k) for t, k in zip(at, ["a", "b", "c"])]
    # Each key has its own bucket; the window for all holds two.
    assert [o.passed for o in outcomes] == [True, True, False]
    assert (outcomes[1].remaining, outcomes[2].remaining) == (0, 0)
    with pytest.raises(rl.PolicyError, match="give a Limit or a Policy, or algo=, not both"):
        rl.Limiter(rl.Limit("gcra", "1/m"), algo="gcra")
