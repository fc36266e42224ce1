"""What the tests share: the program to compare with, the real catalogs, synthetic logs."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
from pathlib import Path

import pyarrow
import pyarrow.csv
import pytest

REPO = Path(__file__).resolve().parents[2]


def _program() -> Path:
    """The `ratelimit` program built from this clone: debug (as `cargo test` leaves it) or
    release, else built now."""
    for profile in ("debug", "release"):
        path = REPO / "target" / profile / "ratelimit"
        if path.exists():
            return path
    subprocess.run(["cargo", "build", "--bin", "ratelimit"], cwd=REPO, check=True)
    return REPO / "target" / "debug" / "ratelimit"


PROGRAM = _program()


def data_dir() -> Path:
    """The real catalogs: $RATELIMIT_DATA, else ../shared/data beside the clone. They are
    there in CI; a run without them fails, it does not skip."""
    path = Path(os.environ.get("RATELIMIT_DATA", REPO.parent / "shared" / "data"))
    assert (path / "usgs_m5_2015_2025.csv").exists(), f"the real catalogs are not in {path}"
    return path


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Runs the program with `args`."""
    return subprocess.run([str(PROGRAM), *args], input=stdin, capture_output=True)


def cli_json(*args: str, stdin: bytes | None = None):
    """Runs the program with `args` and `--format json` (and `stdin`), and returns what it
    printed."""
    done = cli(*args, "--format", "json", stdin=stdin)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def as_arrow(message: str, name: str) -> str:
    """The program's message on CSV `name` as it reads for the same rows in Arrow data:
    named `<arrow>`, and counting rows (from 1) where a CSV counts lines, its header the
    first."""
    message = message.replace(name, "<arrow>")
    return re.sub(r"\bline (\d+)", lambda m: f"row {int(m.group(1)) - 1}", message)


def without_input(report):
    """A report without its `input` fields (its own and its keys'), which name the path or
    `<arrow>`."""
    if isinstance(report, list):
        return [without_input(item) for item in report]
    if isinstance(report, dict):
        return {name: without_input(value) for name, value in report.items() if name != "input"}
    return report


@pytest.fixture(scope="session")
def m5() -> Path:
    """Every M≥5 earthquake of 2015–2025: 19,032 rows, in time order."""
    return data_dir() / "usgs_m5_2015_2025.csv"


@pytest.fixture(scope="session")
def m5_table(m5: Path) -> pyarrow.Table:
    """The M≥5 catalog as pyarrow reads it: times as timestamps."""
    return pyarrow.csv.read_csv(m5)


def synthetic_log(rows: int, seed: int) -> str:
    """A request log as CSV: times in milliseconds since the epoch, out of order (as merged
    logs are), a client key with some empty, a token count, and a row id."""
    rng = random.Random(seed)
    lines = ["id,ts,client,tokens"]
    for row in range(rows):
        ms = 1_750_000_000_000 + rng.randrange(0, 3_600_000)
        client = rng.choice(["a", "b", "c", "d", ""])
        lines.append(f"{row},{ms},{client},{rng.randrange(0, 400)}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def log_csv(tmp_path_factory) -> Path:
    """A synthetic log of 3,000 requests over an hour, written as CSV."""
    path = tmp_path_factory.mktemp("log") / "log.csv"
    path.write_text(synthetic_log(3000, seed=7))
    return path


@pytest.fixture(scope="session")
def log_table(log_csv: Path) -> pyarrow.Table:
    """The synthetic log as pyarrow reads it: times as integers, client as strings."""
    options = pyarrow.csv.ConvertOptions(column_types={"client": pyarrow.string()}, strings_can_be_null=False)
    return pyarrow.csv.read_csv(log_csv, convert_options=options)


@pytest.fixture(scope="session")
def spark():
    """Spark in local[2], on loopback, its UI off, its driver taking at most 1 MiB of
    results: only summaries may reach it. One session for every test module."""
    import sys

    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("ratelimit-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.maxResultSize", "1m")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def client():
    """Dask: two worker processes on loopback, no dashboard: a run that cannot start one
    fails. One cluster for every test module."""
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None, processes=True)
    with Client(cluster) as client:
        yield client
    cluster.close()
