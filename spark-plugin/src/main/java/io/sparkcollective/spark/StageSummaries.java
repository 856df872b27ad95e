package io.sparkcollective.spark;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The driver's summary of each stage attempt's group, made once every rank has reported
 * ({@link Messages.Stats}, sent as its task ends): how long the group took to form, its operations and bytes
 * (per rank), the all-reduce bus bandwidth, and the rank that arrived last most often, with how late.
 *
 * <p>Who arrived last is read without comparing clocks of different machines: an operation ends on all ranks
 * at about the same time, so the rank that started it last is the one whose call took least, and the spread
 * of the ranks' durations is how much later it came than the first. The latest summary is also in the driver
 * plugin's metrics ({@code lastStage.*} gauges), so Spark's metrics sinks show it.
 *
 * <p>A slow link or host makes everyone wait without arriving late anywhere, so the ranks also report the
 * rate at which each network link delivered to them ({@link io.sparkcollective.core.transport.LinkReceipts}).
 * A host is named slow when every link into or out of it that carried at least {@link #LINK_MIN_BYTES}
 * delivered less than {@link #SLOW_SHARE} of the slowest link that does not touch it (so at least one such
 * link is needed: with two hosts, which one is slow cannot be told from rates alone).
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
  /** Links that carried less than this are not judged (their rate is mostly latency). */
  static final long LINK_MIN_BYTES = 1 << 20;
  /** A host is slow when all its links are below this share of every link elsewhere. */
  static final double SLOW_SHARE = 0.5;

  private volatile Summary last;

  /** The links of a group as judged: rates in MB/s, and a host whose links all lag (or null). */
  static final class Links {
    static final Links NONE = new Links(0, 0, 0, null, null, -1, 0, 0);
    final int judged;
    final double slowestMBps;
    final double fastestMBps;
    /** The slowest link, named by its ranks and hosts (null if none was judged). */
    final String slowest;
    final String slowHost;
    /** The lowest rank on the slow host, or -1. */
    final int slowHostRank;
    /** The fastest link into or out of the slow host, and the slowest elsewhere. */
    final double slowHostMBps;
    final double elsewhereMBps;

    Links(int judged, double slowestMBps, double fastestMBps, String slowest, String slowHost, int slowHostRank,
        double slowHostMBps, double elsewhereMBps) {
      this.judged = judged;
      this.slowestMBps = slowestMBps;
      this.fastestMBps = fastestMBps;
      this.slowest = slowest;
      this.slowHost = slowHost;
      this.slowHostRank = slowHostRank;
      this.slowHostMBps = slowHostMBps;
      this.elsewhereMBps = elsewhereMBps;
    }

    @Override
    public String toString() {
      if (judged == 0) {
        return "no network link carried " + LINK_MIN_BYTES + " bytes or more";
      }
      String s = String.format(Locale.ROOT, "%d network links delivered %.1f to %.1f MB/s, the slowest %s", judged,
          slowestMBps, fastestMBps, slowest);
      return slowHost == null ? s : s + String.format(Locale.ROOT, "; host %s (rank %d) is slow: its links at most "
          + "%.1f MB/s, the others at least %.1f MB/s", slowHost, slowHostRank, slowHostMBps, elsewhereMBps);
    }
  }

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
    final Links links;

    Summary(String group, int stageId, int stageAttempt, int ranks, double formedMs, long operations, long bytes,
        double busbwGBps, int lastRank, int lastRankTimes, int comparedOperations, double lastRankLateMs,
        Links links) {
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
      this.links = links;
    }

    @Override
    public String toString() {
      String straggler = lastRank < 0 ? "no operation to compare arrivals"
          : String.format(Locale.ROOT, "rank %d arrived last at %d of %d operations, a median %.1f ms after the first",
              lastRank, lastRankTimes, comparedOperations, lastRankLateMs);
      return String.format(Locale.ROOT, "stage %d attempt %d, group %s: %d ranks, formed in %.1f ms, %d operations "
          + "of %d bytes per rank, all-reduce busbw %.3f GB/s; %s; %s", stageId, stageAttempt, group, ranks,
          formedMs, operations, bytes, busbwGBps, straggler, links);
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
    gauge(registry, "slowestLinkMBps", s -> s.links.slowestMBps);
    gauge(registry, "fastestLinkMBps", s -> s.links.fastestMBps);
    gauge(registry, "slowHostRank", s -> s.links.slowHostRank);
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
        medianBusbw, lastRank, times, compared, late, links(all));
  }

  /** Judges the links the ranks reported (see the class comment). */
  static Links links(Messages.Stats[] all) {
    int n = all.length;
    List<int[]> pairs = new ArrayList<>();
    List<Double> rates = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      if (all[r].linkBytes.length != n) {
        continue;
      }
      for (int p = 0; p < n; p++) {
        if (all[r].linkBytes[p] >= LINK_MIN_BYTES && all[r].linkNanos[p] > 0) {
          pairs.add(new int[] {p, r});
          rates.add(all[r].linkBytes[p] * 1e3 / all[r].linkNanos[p]);
        }
      }
    }
    if (pairs.isEmpty()) {
      return Links.NONE;
    }
    int slowest = 0;
    int fastest = 0;
    for (int i = 1; i < rates.size(); i++) {
      slowest = rates.get(i) < rates.get(slowest) ? i : slowest;
      fastest = rates.get(i) > rates.get(fastest) ? i : fastest;
    }
    String slowHost = null;
    double slowHostMBps = 0;
    double elsewhereMBps = 0;
    Set<String> hosts = new TreeSet<>();
    for (Messages.Stats s : all) {
      hosts.add(s.host);
    }
    for (String h : hosts) {
      double touching = -1;
      double elsewhere = Double.MAX_VALUE;
      for (int i = 0; i < pairs.size(); i++) {
        if (all[pairs.get(i)[0]].host.equals(h) || all[pairs.get(i)[1]].host.equals(h)) {
          touching = Math.max(touching, rates.get(i));
        } else {
          elsewhere = Math.min(elsewhere, rates.get(i));
        }
      }
      if (touching >= 0 && elsewhere < Double.MAX_VALUE && touching < SLOW_SHARE * elsewhere
          && (slowHost == null || touching < slowHostMBps)) {
        slowHost = h;
        slowHostMBps = touching;
        elsewhereMBps = elsewhere;
      }
    }
    int slowHostRank = -1;
    for (int r = n - 1; r >= 0; r--) {
      slowHostRank = all[r].host.equals(slowHost) ? r : slowHostRank;
    }
    int[] s = pairs.get(slowest);
    String name = "rank " + s[0] + " (" + all[s[0]].host + ") -> rank " + s[1] + " (" + all[s[1]].host + ")";
    return new Links(pairs.size(), rates.get(slowest), rates.get(fastest), name, slowHost, slowHostRank,
        slowHostMBps, elsewhereMBps);
  }

  private static double median(long[] v) {
    long[] s = v.clone();
    Arrays.sort(s);
    int n = s.length;
    return n == 0 ? 0 : n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
  }
}
