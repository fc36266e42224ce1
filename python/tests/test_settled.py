"""Limits settled after the response, from Python: the program's answers, the hand-worked
figures of a small log, and typed errors."""

from __future__ import annotations

import datetime as dt
import pickle
import subprocess

import pandas
import pyarrow
import pytest

import ratelimit_replay as rl
from conftest import PROGRAM, REPO, cli_json, without_input
from test_limiter import redis_server, redis_url  # noqa: F401  (fixtures: a real redis-server)

#: Five requests at once, then one at 10 s (tests/cli/settled.rs works it by hand).
LLM_LOG = (REPO / "tests" / "fixtures" / "llm_requests.csv").read_text()

TOKENS = "prompt_tokens+completion_tokens"
RESERVE = "prompt_tokens+max_tokens"


@pytest.fixture(scope="module")
def llm_frame() -> pandas.DataFrame:
    rows = [line.split(",") for line in LLM_LOG.splitlines()]
    frame = pandas.DataFrame(rows[1:], columns=rows[0])
    for column in ("prompt_tokens", "max_tokens", "completion_tokens"):
        frame[column] = frame[column].astype("int64")
    return frame


@pytest.fixture(scope="module")
def requests_csv(tmp_path_factory: pytest.TempPathFactory):
    """Requests of 40 clients with tokens and durations, from the program's own
    generator."""
    path = tmp_path_factory.mktemp("settled") / "requests.csv"
    args = ["synth", "requests", "--tokens", "--seed", "5", "--clients", "40", "--requests", "3000", "-o", str(path)]
    subprocess.run([str(PROGRAM), *args], check=True)
    return path


def test_a_reservation_of_a_data_frame_refuses_three_and_gives_back_225(llm_frame):
    limit = rl.Limit("gcra", "500/m", burst=500, reserve=RESERVE, cost=TOKENS)
    found = rl.replay(pyarrow.Table.from_pandas(llm_frame), limit, duration="duration")
    assert isinstance(found, rl.Settled)
    # 230 and 240 pass (470 of 500); 220, 225 and 233 do not fit; at 10 s, 110 does.
    assert (found.passed, found.refused) == (3, 3)
    layer = found.layers[0]
    assert (layer["reserved"], layer["refunded"], layer.most_spent, layer.overshot) == (580, 225, 355, False)


def test_charged_at_completion_five_pass_and_owe_675(llm_frame):
    limit = rl.Limit("token-bucket", "100/m", burst=100, charge="completion", cost=TOKENS)
    found = rl.replay(pyarrow.Table.from_pandas(llm_frame), limit, duration="duration")
    layer = found.layers[0]
    assert (found.passed, layer["charged_after"], layer.largest_debt, layer.most_spent) == (5, 778, 675, 778)
    assert layer.overshot and layer.peak_in_flight == 5


def test_a_policy_with_a_cap_in_flight_is_the_programs(requests_csv):
    cap = rl.Limit("concurrency", max=6, key="client")
    tokens = rl.Limit("gcra", "20000/m", burst=20000, reserve=RESERVE, cost="total_tokens", key="client")
    requests = rl.Limit("fixed-window", "10/m", charge="completion", key="client")
    policy = rl.Policy([cap, tokens, requests])
    flags = ["--duration", "duration_ms"] + [arg for layer in policy.limits for arg in ("--limit", str(layer))]
    want = cli_json("replay", str(requests_csv), *flags)
    assert want["refused"] > 0 and all(layer["refused"] > 0 for layer in want["layers"])
    assert rl.replay(requests_csv, policy, duration="duration_ms").to_dict() == want
    table = pyarrow.csv.read_csv(requests_csv, convert_options=pyarrow.csv.ConvertOptions(column_types={"time": pyarrow.string()}))
    got = rl.replay(table, policy, duration="duration_ms")
    assert without_input(got.to_dict()) == without_input(want)


@pytest.mark.parametrize(
    "asked, flags",
    [
        (dict(per="1m", cost="total_tokens", reserve=RESERVE, key="client"), ["--per", "1m", "--cost", "total_tokens", "--reserve", RESERVE, "--key", "client"]),
        (dict(per="1m", cost=TOKENS, charge="completion"), ["--per", "1m", "--cost", TOKENS, "--charge", "completion"]),
        (dict(concurrency=True, key="client"), ["--concurrency", "--key", "client"]),
    ],
    ids=["reserve-keyed", "completion", "concurrency"],
)
def test_min_limit_is_the_programs(requests_csv, asked, flags):
    want = cli_json("min-limit", str(requests_csv), "--duration", "duration_ms", *flags)
    got = rl.min_limit(requests_csv, duration="duration_ms", **asked)
    assert isinstance(got, rl.MinLimit) and got.to_dict() == want
    assert got.limit is not None and got.limit > 0


def test_min_limit_of_the_small_log_holds_what_one_less_refuses(llm_frame):
    table = pyarrow.Table.from_pandas(llm_frame)
    found = rl.min_limit(table, per="1m", cost=TOKENS, duration="duration")
    assert found.limit == 778
    for limit, refused in ((778, 0), (777, 1)):
        layer = rl.Limit("token-bucket", f"{limit}/m", burst=limit, cost=TOKENS)
        assert rl.replay(table, layer, duration="duration").refused == refused


def test_a_settled_limit_reads_back_and_pickles():
    limit = rl.Limit("gcra", "500/m", burst=500, reserve=RESERVE, cost=TOKENS, key="user")
    assert (limit.charge, limit.reserve, limit.cost, limit.rate) == ("reserve", RESERVE, TOKENS, "500/m")
    assert rl.Limit.parse(str(limit)) == limit and pickle.loads(pickle.dumps(limit)) == limit
    cap = rl.Limit("concurrency", max=4)
    assert (cap.algo, cap.rate, cap.max, repr(cap)) == ("concurrency", None, 4, "Limit('concurrency', max=4)")


def test_what_cannot_settle_is_a_typed_error_naming_it(llm_frame):
    table = pyarrow.Table.from_pandas(llm_frame)
    limit = rl.Limit("gcra", "500/m", burst=500, reserve=RESERVE, cost=TOKENS)
    with pytest.raises(rl.PolicyError, match="is settled after the response: give duration= or end="):
        rl.replay(table, limit)
    with pytest.raises(rl.PolicyError, match="^duration= or end= is needed: when each request completes$"):
        rl.min_limit(table, per="1m", charge="completion")
    with pytest.raises(rl.PolicyError, match="^min_limit needs per=, the limit's period"):
        rl.min_limit(table, duration="duration")
    with pytest.raises(rl.PolicyError, match="^redis= is not taken by limits settled after the response"):
        rl.replay(table, limit, duration="duration", redis="redis://127.0.0.1:1")
    with pytest.raises(rl.PolicyError, match="^charge=reserve needs reserve=, the estimate$"):
        rl.Limit("gcra", "1/s", charge="reserve")
    with pytest.raises(TypeError, match="unexpected keyword argument 'maximum'"):
        rl.Limit("concurrency", maximum=3)  # type: ignore[call-arg]
    bad = llm_frame.copy()
    bad.loc[4, "duration"] = "-5"
    with pytest.raises(rl.InputError, match=r"^<arrow>: row 5, field `duration`: \"-5\" is negative"):
        rl.replay(pyarrow.Table.from_pandas(bad), limit, duration="duration")


def test_a_providers_preset_is_the_programs(requests_csv):
    policy = rl.Policy.preset("openai:tier-1:gpt-4o")
    assert [str(limit) for limit in policy.limits] == [
        "algo=token-bucket,rate=500/m,burst=500",
        "algo=token-bucket,rate=30000/m,burst=30000,reserve=prompt_tokens+max_tokens,cost=prompt_tokens+completion_tokens",
    ]
    want = cli_json("replay", str(requests_csv), "--preset", "openai:tier-1:gpt-4o", "--duration", "duration_ms")
    assert want["refused"] > 0
    assert rl.replay(requests_csv, policy, duration="duration_ms").to_dict() == want
    fit = rl.min_tier(requests_csv, "openai:*:gpt-4o", duration="duration_ms")
    assert isinstance(fit, rl.MinTier)
    assert fit.to_dict() == cli_json("min-limit", str(requests_csv), "--preset", "openai:*:gpt-4o", "--duration", "duration_ms")
    assert fit.smallest == next(tier["name"] for tier in fit.tiers if tier["refused"] == 0)
    listed = rl.presets()
    assert {preset["provider"] for preset in listed} == {"openai", "anthropic", "azure", "bedrock", "gemini"}
    assert all(preset["date"] and preset["source"].startswith("https://") for preset in listed)
    with pytest.raises(rl.PolicyError, match="names no preset"):
        rl.Policy.preset("openai:tier-9:gpt-4o")


def test_limits_that_count_on_arrival_need_no_completions(requests_csv):
    # Azure's tokens: the prompt and max_tokens charged on arrival, never settled.
    want = cli_json("replay", str(requests_csv), "--preset", "azure:tpm-100k:gpt-4o")
    got = rl.replay(requests_csv, rl.Policy.preset("azure:tpm-100k:gpt-4o"))
    assert isinstance(got, rl.Settled) and got.to_dict() == want and got.refused > 0


def test_retries_are_the_programs_and_say_they_are_a_simulation(requests_csv):
    cap = rl.Limit("concurrency", max=2, key="client")
    for retry in ("after", "exp:base=500ms,cap=10s,max=3,seed=9"):
        want = cli_json("replay", str(requests_csv), "--duration", "duration_ms", "--limit", str(cap), "--retry", retry)
        got = rl.replay(requests_csv, cap, duration="duration_ms", retry=retry)
        assert got.to_dict() == want and got.retry is not None
        assert got.retry["simulation"].startswith("a simulation") and got.retry["served_after_retry"] > 0
    with pytest.raises(rl.PolicyError, match="^retry=later: 'later' is no retry"):
        rl.replay(requests_csv, cap, duration="duration_ms", retry="later")


def test_a_reservation_decided_live_gives_back_when_settled():
    # 500 a minute reserving prompt + max_tokens: 230 and 240 pass, 220 does not. Settled
    # at 2 s for 150 of 230, 80 come back to the 30 left, with 2 s of refill: 126⅔ hold
    # a request of 120, which 46⅔ would not.
    limiter = rl.SettledLimiter(rl.Limit("gcra", "500/m", burst=500, reserve=RESERVE, cost=TOKENS, key="user"))
    start = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)

    def at(ms: int) -> dt.datetime:
        return start + dt.timedelta(milliseconds=ms)

    def asked(prompt: int, most: int) -> dict[str, int]:
        return {"prompt_tokens": prompt, "max_tokens": most}

    first = limiter.decide(at(0), "a", values=asked(30, 200))
    second = limiter.decide(at(0), "a", values=asked(40, 200))
    third = limiter.decide(at(0), "a", values=asked(20, 200))
    assert first.passed and second.passed and not third.passed
    assert third.id is None and third.refused == [0] and third.retry_after is not None
    assert not limiter.decide(at(2000), "a", values=asked(20, 100)).passed
    assert first.id is not None
    limiter.settle(first.id, time=at(2000), values={"completion_tokens": 120})
    assert limiter.decide(at(2000), "a", values=asked(20, 100)).passed
    assert limiter.open == 2
    with pytest.raises(rl.PolicyError, match="no open request has ticket"):
        limiter.settle(first.id, 1, time=at(2000))
    with pytest.raises(rl.PolicyError, match="decide it live with SettledLimiter"):
        rl.Limiter(rl.Limit("gcra", "500/m", burst=500, reserve=RESERVE, cost=TOKENS))


def test_settled_limiters_of_two_processes_share_one_redis(redis_url) -> None:
    # 500 tokens a minute by user, reserving the prompt and max_tokens, kept in Redis and
    # shared by two limiters (two processes' worth): 230 and 240 taken; 100 more does not
    # fit the 30 left until the first settles at 150 and gives 80 back.
    policy = rl.Limit("gcra", "500/m", burst=500, key="user", reserve=RESERVE, cost="total_tokens")
    here, there = rl.SettledLimiter(policy, redis=redis_url), rl.SettledLimiter(policy, redis=redis_url)
    first = here.decide(key="alice", values={"prompt_tokens": 30, "max_tokens": 200})
    second = there.decide(key="alice", values={"prompt_tokens": 40, "max_tokens": 200})
    assert (first.passed, second.passed) == (True, True)
    small = {"prompt_tokens": 10, "max_tokens": 90}
    refused = here.decide(key="alice", values=small)
    assert (refused.passed, refused.id, refused.refused, refused.retry_after) == (False, None, [0], None)
    assert there.decide(key="bob", values=small).passed, "bob has a bucket of his own"
    assert first.id is not None
    here.settle(first.id, values={"total_tokens": 150})
    assert here.decide(key="alice", values=small).passed
    assert (here.open, there.open) == (1, 2)
    with pytest.raises(rl.PolicyError, match="at the server's clock: give no time"):
        here.decide(dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc), "alice", values=small)
    with pytest.raises(rl.PolicyError, match=f"request {first.id} is not open"):
        here.settle(first.id, values={"total_tokens": 1})
    with pytest.raises(rl.PolicyError, match="litellm is not settled in Redis"):
        rl.SettledLimiter(rl.Limit("litellm", "5/m", key="user"), redis=redis_url)
