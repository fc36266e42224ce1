"""``recommend`` in Python: the program's answer, from a path or from Arrow data, typed,
with its errors typed."""

from __future__ import annotations

import pyarrow
import pytest

import ratelimit_replay as rl
from conftest import cli, cli_json

SITE = ["--clients", "300", "--requests", "8000", "--seed", "3", "--format", "clf"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A day of a site's access log, in nginx's combined layout with $msec."""
    path = tmp_path_factory.mktemp("site") / "site.log"
    assert cli("synth", "requests", *SITE, "-o", str(path)).returncode == 0
    return path


def test_recommend_is_the_programs(site):
    want = cli_json("recommend", str(site), "--key", "$binary_remote_addr", "--window", "1m", "--for", "nginx")
    got = rl.recommend(site, key="$binary_remote_addr", untouched=0.999, window="1m", system="nginx")
    assert got.to_dict() == want
    assert got.key_count == want["keys"] and got["untouched"] == "99.9%"
    assert [p.burst for p in got.frontier] == [p["burst"] for p in want["frontier"]]
    best = got.recommended
    assert (best.rate, best.burst, best.refused) == tuple(want["recommended"][f] for f in ("rate", "burst", "refused"))
    assert best.untouched_keys >= -(-999 * got.key_count // 1000)
    assert f"rate={best.rate.replace('/', 'r/')}" in got.system["config"]


def test_recommend_of_arrow_data_is_the_programs(log_csv, log_table):
    want = cli_json(
        "recommend", str(log_csv), "--key", "client", "--time-column", "ts", "--time-format", "unix-ms",
        "--untouched", "75%", "--rate", "10/s,1/s", "--cost", "tokens",
    )
    got = rl.recommend(
        log_table, key="client", time="ts", time_format="unix-ms", untouched="75%", rate=["10/s", "1/s"], cost="tokens"
    )
    # The input's name is the only difference: a path, or Arrow data.
    assert got.to_dict() == want
    assert got["cost"]["together"]["untouched_keys"] >= 4


@pytest.mark.parametrize(
    ("asked", "error", "says"),
    [
        (dict(untouched=1.5), rl.PolicyError, "untouched=1.5: a share is above 0 and at most 1"),
        (dict(untouched=True), rl.PolicyError, "untouched=True"),
        (dict(system="haproxy"), rl.PolicyError, "system=haproxy: recommend writes a bucket's burst"),
        (dict(prefer="most"), rl.PolicyError, "prefer='most' is not one of fewest-refused"),
        (dict(rate="5/h", system="nginx"), rl.PolicyError, "system=nginx: "),
        (dict(window="soon"), rl.PolicyError, "window=soon"),
        (dict(window="0s"), rl.PolicyError, "window=0s: a window is longer than 0"),
    ],
)
def test_recommend_refuses_what_it_cannot_do_in_typed_errors(site, asked, error, says):
    with pytest.raises(error, match=f"^{says}"):
        rl.recommend(site, key="$binary_remote_addr", **asked)


def test_recommend_needs_keys_in_the_data():
    with pytest.raises(rl.InputError, match="client"):
        rl.recommend(pyarrow.table({"time": ["2025-01-01T00:00:00Z"]}), key="client")
