"""Times ratelimit_replay.replay on an in-memory pyarrow table of a CSV catalog, and its
memory beyond the table; and the cost of a call, as 1,000 replays of its first 100 rows.
Used by bench/run.

    python bench/python_replay.py FILE RUNS
    -> median seconds, the peak resident memory beyond the loaded table in MiB, and the
       median time of one call on 100 rows in µs
"""

import statistics
import sys
import time

import pyarrow.csv

import ratelimit_replay as rl


def kib(field: str) -> int:
    """A field of /proc/self/status, in KiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


LIMIT = rl.Limit("gcra", "5/h", burst=5)


def per_call(table: pyarrow.Table, runs: int) -> float:
    """The median, over `runs`, of the mean time of one of 1,000 replays of 100 rows, in
    µs: what a call costs beyond its rows."""
    small = table.slice(0, 100)
    means = []
    for _ in range(runs):
        began = time.perf_counter()
        for _ in range(1000):
            rl.replay(small, LIMIT)
        means.append((time.perf_counter() - began) / 1000 * 1e6)
    return statistics.median(means)


def main() -> None:
    path, runs = sys.argv[1], int(sys.argv[2])
    # Times as pyarrow reads them: timestamps, taken as they are.
    table = pyarrow.csv.read_csv(path)
    seconds, beyond = [], 0
    for _ in range(runs):
        # The peak so far is pyarrow's reading, or the run before; from here, this run's.
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        before = kib("VmRSS")
        began = time.perf_counter()
        report = rl.replay(table, LIMIT)
        seconds.append(time.perf_counter() - began)
        beyond = max(beyond, kib("VmHWM") - before)
        assert report.events == table.num_rows and len(report.decisions) == table.num_rows
        del report
    print(f"{statistics.median(seconds):.3f} {beyond / 1024:.0f} {per_call(table, runs):.0f}")


if __name__ == "__main__":
    main()
