"""Times ratelimit_replay.spark.replay, a keyed replay on Spark in local[2], against two
no-op floors over the rows cut by key and sorted, handed to Python as Arrow batches that
are only counted: mapInArrow after the same repartition and sortWithinPartitions, and an
Arrow UDTF over TABLE(df) PARTITION BY a hash bucket of the key (4,096) ORDER BY key,
time, tie; in one run, interleaved, with the program on the same rows' CSV. Used by
bench/spark.

    python bench/spark_replay.py BIN ROWS RUNS
    -> median seconds of the mapInArrow no-op, the UDTF no-op, the replay, the program
"""

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    program, rows, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import pyarrow
    import pyarrow.csv
    import pyarrow.parquet
    from pyspark.sql import SparkSession

    from ratelimit_replay import spark as rls

    folder = Path(tempfile.mkdtemp(prefix="ratelimit-spark-"))
    # Requests over an hour from 5,000 clients, each of 0 to 39 tokens, in time order.
    rng = random.Random(7)
    start = 1_750_000_000_000
    events = sorted((start + rng.randrange(3_600_000), rng.randrange(5_000), rng.randrange(40)) for _ in range(rows))
    csv = folder / "requests.csv"
    with open(csv, "w") as out:
        out.write("ts,client,tokens,tie\n")
        out.writelines(f"{t},c{c},{k},{n}\n" for n, (t, c, k) in enumerate(events))
    table = pyarrow.csv.read_csv(csv, convert_options=pyarrow.csv.ConvertOptions(column_types={"client": pyarrow.string()}))
    step = -(-table.num_rows // 4)
    for n in range(4):
        pyarrow.parquet.write_table(table.slice(n * step, step), folder / f"part-{n}.parquet")
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.parquet(*[str(folder / f"part-{n}.parquet") for n in range(4)])
    flags = dict(algo="gcra", rate="20/m", burst=5, key="client", time="ts", time_format="unix-ms", tie="tie", partitions=4)

    from pyspark.sql import functions as F
    from pyspark.sql.functions import arrow_udtf

    def noop(batches):
        count = sum(batch.num_rows for batch in batches)
        yield pyarrow.RecordBatch.from_pydict({"n": [count]})

    @arrow_udtf(returnType="n long")
    class Count:
        """Counts a bucket's rows, as they come in order."""

        def __init__(self):
            self.n = 0

        def eval(self, batch):
            self.n += batch.num_rows
            return iter(())

        def terminate(self):
            yield pyarrow.table({"n": pyarrow.array([self.n], pyarrow.int64())})

    bucketed = df.withColumn("bucket", F.expr("pmod(hash(client), 4096)"))

    def udtf():
        table = bucketed.asTable().partitionBy("bucket").orderBy("client", "ts", "tie")
        return sum(row["n"] for row in Count(table).collect())

    def floor():
        cut = df.repartition(4, "client").sortWithinPartitions("client", "ts", "tie")
        return sum(row["n"] for row in cut.mapInArrow(noop, "n long").collect())

    def replay():
        return rls.replay(df, **flags)["events"]

    def cli():
        argv = [program, "replay", str(csv), "--algo", "gcra", "--rate", "20/m", "--burst", "5", "--key", "client"]
        argv += ["--time-column", "ts", "--time-format", "unix-ms", "--format", "json"]
        subprocess.run(argv, check=True, capture_output=True)
        return rows

    times = {floor: [], udtf: [], replay: [], cli: []}
    for job in times:
        assert job() == rows, job.__name__
    for _ in range(runs):
        for job, seconds in times.items():
            began = time.perf_counter()
            job()
            seconds.append(time.perf_counter() - began)
    spark.stop()
    print(" ".join(f"{statistics.median(seconds):.2f}" for seconds in times.values()))


if __name__ == "__main__":
    main()
