package io.sparkcollective.spark;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The driver's summary of each stage attempt's group, made once every rank has reported
 * ({@link Messages.Stats}, sent as its task ends): how long the group took to form, its operations and bytes
 * (per rank), the all-reduce bus bandwidth, and the rank that arrived last most often, with how late.
 *
 * <p>Who arrived last is read without comparing clocks of different machines: an operation ends on all ranks
 * at about the same time, so the rank that started it last is the one whose call took least, and the spread
 * of the ranks' durations is how much later it came than the first. The latest summary is also in the driver
 * plugin's metrics ({@code lastStage.*} gauges), so Spark's metrics sinks show it.
 */
final class StageSummaries {
  /** Groups waiting for their other ranks' reports (the oldest is dropped first: a rank that never reports). */
  private static final int PENDING_KEPT = 256;

  private final Map<String, Messages.Stats[]> pending = new LinkedHashMap<String, Messages.Stats[]>() {
    private static final long serialVersionUID = 1L;

    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Messages.Stats[]> eldest) {
      return size() > PENDING_KEPT;
    }
  };
  private volatile Summary last;

  /** One stage attempt's group, summarised. */
  static final class Summary {
    final String group;
    final int stageId;
    final int stageAttempt;
    final int ranks;
    final double formedMs;
    final long operations;
    final long bytes;
    /** All-reduce bus bandwidth, GB/s: 2(N-1)/N of the vector per unit of time, median over ranks. */
    final double busbwGBps;
    /** The rank that arrived last at the most operations (-1 with fewer than two ranks or no operation). */
    final int lastRank;
    final int lastRankTimes;
    final int comparedOperations;
    /** By how much the last rank arrived after the first at the operations where it was last, median, ms. */
    final double lastRankLateMs;

    Summary(String group, int stageId, int stageAttempt, int ranks, double formedMs, long operations, long bytes,
        double busbwGBps, int lastRank, int lastRankTimes, int comparedOperations, double lastRankLateMs) {
      this.group = group;
      this.stageId = stageId;
      this.stageAttempt = stageAttempt;
      this.ranks = ranks;
      this.formedMs = formedMs;
      this.operations = operations;
      this.bytes = bytes;
      this.busbwGBps = busbwGBps;
      this.lastRank = lastRank;
      this.lastRankTimes = lastRankTimes;
      this.comparedOperations = comparedOperations;
      this.lastRankLateMs = lastRankLateMs;
    }

    @Override
    public String toString() {
      String straggler = lastRank < 0 ? "no operation to compare arrivals"
          : String.format(Locale.ROOT, "rank %d arrived last at %d of %d operations, a median %.1f ms after the first",
              lastRank, lastRankTimes, comparedOperations, lastRankLateMs);
      return String.format(Locale.ROOT, "stage %d attempt %d, group %s: %d ranks, formed in %.1f ms, %d operations "
          + "of %d bytes per rank, all-reduce busbw %.3f GB/s; %s", stageId, stageAttempt, group, ranks, formedMs,
          operations, bytes, busbwGBps, straggler);
    }
  }

  /** Registers the {@code lastStage.*} gauges in {@code registry}. */
  void register(MetricRegistry registry) {
    gauge(registry, "stage", s -> s.stageId);
    gauge(registry, "attempt", s -> s.stageAttempt);
    gauge(registry, "ranks", s -> s.ranks);
    gauge(registry, "groupFormedMs", s -> s.formedMs);
    gauge(registry, "operations", s -> s.operations);
    gauge(registry, "bytes", s -> s.bytes);
    gauge(registry, "busbwGBps", s -> s.busbwGBps);
    gauge(registry, "lastRank", s -> s.lastRank);
    gauge(registry, "lastRankTimes", s -> s.lastRankTimes);
    gauge(registry, "lastRankLateMs", s -> s.lastRankLateMs);
  }

  private void gauge(MetricRegistry registry, String name, java.util.function.Function<Summary, Number> value) {
    registry.register("lastStage." + name, (Gauge<Number>) () -> {
      Summary s = last;
      return s == null ? 0 : value.apply(s);
    });
  }

  /** The latest summary, or null. */
  Summary last() {
    return last;
  }

  /** Takes one rank's report; returns its group's summary once every rank has reported, else null. */
  synchronized Summary add(Messages.Stats r) {
    if (r.size < 1 || r.size > CollectiveDriverPlugin.MAX_GROUP_SIZE || r.rank < 0 || r.rank >= r.size) {
      return null;
    }
    Messages.Stats[] all = pending.computeIfAbsent(r.group, g -> new Messages.Stats[r.size]);
    if (all.length != r.size) {
      return null;
    }
    all[r.rank] = r;
    for (Messages.Stats s : all) {
      if (s == null) {
        return null;
      }
    }
    pending.remove(r.group);
    Summary s = summarise(all);
    last = s;
    return s;
  }

  static Summary summarise(Messages.Stats[] all) {
    int n = all.length;
    double formedMs = 0;
    long operations = 0;
    long bytes = 0;
    double[] busbw = new double[n];
    int compared = Integer.MAX_VALUE;
    for (int r = 0; r < n; r++) {
      formedMs = Math.max(formedMs, all[r].formedNanos / 1e6);
      operations = Math.max(operations, all[r].operations);
      bytes = Math.max(bytes, all[r].bytes);
      busbw[r] = all[r].allReduceNanos == 0 ? 0
          : 2.0 * (n - 1) / n * all[r].allReduceBytes / all[r].allReduceNanos;
      compared = Math.min(compared, all[r].opMicros.length);
    }
    int lastRank = -1;
    int times = 0;
    double late = 0;
    if (n > 1 && compared > 0) {
      int[] lastAt = new int[compared];
      long[] spread = new long[compared];
      int[] count = new int[n];
      for (int i = 0; i < compared; i++) {
        int min = 0;
        long max = Long.MIN_VALUE;
        for (int r = 0; r < n; r++) {
          long d = all[r].opMicros[i];
          if (d < all[min].opMicros[i]) {
            min = r;
          }
          max = Math.max(max, d);
        }
        lastAt[i] = min;
        spread[i] = max - all[min].opMicros[i];
        count[min]++;
      }
      for (int r = 0; r < n; r++) {
        if (count[r] > times) {
          times = count[r];
          lastRank = r;
        }
      }
      long[] itsSpread = new long[times];
      int k = 0;
      for (int i = 0; i < compared; i++) {
        if (lastAt[i] == lastRank) {
          itsSpread[k++] = spread[i];
        }
      }
      late = median(itsSpread) / 1000.0;
    } else {
      compared = 0;
    }
    Arrays.sort(busbw);
    double medianBusbw = n % 2 == 1 ? busbw[n / 2] : (busbw[n / 2 - 1] + busbw[n / 2]) / 2;
    return new Summary(all[0].group, all[0].stageId, all[0].stageAttempt, n, formedMs, operations, bytes,
        medianBusbw, lastRank, times, compared, late);
  }

  private static double median(long[] v) {
    long[] s = v.clone();
    Arrays.sort(s);
    int n = s.length;
    return n == 0 ? 0 : n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
  }
}
