// Decides requests as Guava's RateLimiter does (Debian's libguava-java), on a fake clock.
//
//     java -cp CLASSES:/usr/share/java/guava.jar com.google.common.util.concurrent.GuavaPeer \
//         PERMITS_PER_SECOND [WARMUP_MICROS COLD_FACTOR] < requests
//
// Each line of stdin is `micros,key,cost`, in time order; each line of stdout is 1 (passed)
// or 0 (refused). Each key has a RateLimiter of its own, created at its first request by the
// package-private factories that take a SleepingStopwatch (SmoothBursty; SmoothWarmingUp
// with a warm-up), its stopwatch reading the µs since then, as a real one does; a request
// is tryAcquire(cost, 0, MICROSECONDS). The class lives in Guava's package to reach them.
package com.google.common.util.concurrent;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

public final class GuavaPeer {
  /** The time of the request being decided, in µs since the epoch. */
  static long now;

  /** A key's stopwatch: the µs since its limiter was made. */
  static final class FakeStopwatch extends RateLimiter.SleepingStopwatch {
    final long made = now;

    @Override
    protected long readMicros() {
      return now - made;
    }

    @Override
    protected void sleepMicrosUninterruptibly(long micros) {}
  }

  public static void main(String[] args) throws Exception {
    double permitsPerSecond = Double.parseDouble(args[0]);
    boolean warm = args.length > 1;
    long warmupMicros = warm ? Long.parseLong(args[1]) : 0;
    double coldFactor = warm ? Double.parseDouble(args[2]) : 0;
    Map<String, RateLimiter> limiters = new HashMap<>();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
    BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, "UTF-8"));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isEmpty()) continue;
      String[] fields = line.split(",", -1);
      now = Long.parseLong(fields[0]);
      RateLimiter limiter = limiters.get(fields[1]);
      if (limiter == null) {
        FakeStopwatch clock = new FakeStopwatch();
        limiter = warm
            ? RateLimiter.create(
                permitsPerSecond, warmupMicros, TimeUnit.MICROSECONDS, coldFactor, clock)
            : RateLimiter.create(permitsPerSecond, clock);
        limiters.put(fields[1], limiter);
      }
      int cost = Integer.parseInt(fields[2]);
      out.write(limiter.tryAcquire(cost, 0, TimeUnit.MICROSECONDS) ? "1\n" : "0\n");
    }
    out.flush();
  }
}
