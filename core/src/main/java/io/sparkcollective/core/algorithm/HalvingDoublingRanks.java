package io.sparkcollective.core.algorithm;

/*
 * Halving-doubling on a group that is not a power of two, rank by rank, for the cost model. The fold makes the
 * ranks unlike each other (the first 2R ranks pair up, the odd ones go on as virtual ranks 0..R-1, the rest after
 * them), so no one host stands for all: every rank is followed, step by step, through the same program as the
 * algorithm's (fold, halving, doubling, unfold). In each step the segments a host's ranks send take the host's
 * link out in the order they are ready, then the receiving host's link in in the order they left, and arrive a
 * latency later; between ranks of one host they take the local latency. `groups` groups of n ranks can run at
 * once, one rank of each on every host (HIERARCHICAL's inner groups), or one group with k consecutive ranks per
 * host. Recursive doubling runs through the same: its fold and unfold are halving-doubling's, its steps between
 * them carry the whole vector at masks 1, 2, ..., P/2.
 *
 * Steps are taken one after another across the whole group, so a segment of a later step never passes one of
 * an earlier step on a link; ranks that are ahead wait for a link only as long as the earlier step holds it.
 */

/** Predicted time of halving-doubling with folded ranks, following every rank. */
final class HalvingDoublingRanks {
  /** Most segments followed at once; longer vectors are extrapolated from two shorter ones. */
  private static final int MAX_SEGMENTS = 1 << 14;

  private final AllReduceCostModel costs;
  private final int groups;
  private final int n;
  private final int ranksPerHost;
  private final int segmentBytes;
  /** Recursive doubling's program instead: the whole vector in every step, masks 1, 2, ..., P/2. */
  private final boolean doubling;

  /**
   * @param groups groups running at once (one rank of each per host), or 1
   * @param n ranks of a group
   * @param ranksPerHost with one group: consecutive ranks per host
   * @param doubling recursive doubling rather than halving-doubling
   */
  HalvingDoublingRanks(AllReduceCostModel costs, int groups, int n, int ranksPerHost, int segmentBytes,
      boolean doubling) {
    this.costs = costs;
    this.groups = Math.max(1, groups);
    this.n = n;
    this.ranksPerHost = Math.max(1, ranksPerHost);
    this.segmentBytes = segmentBytes;
    this.doubling = doubling;
  }

  /** Predicted seconds for a vector of {@code bytes}. */
  double seconds(double bytes) {
    double segments = Math.ceil((doubling ? bytes : bytes / 2) / segmentBytes) * groups * n;
    if (segments <= MAX_SEGMENTS) {
      return run(bytes);
    }
    // Beyond a few segments per message the time grows linearly with the bytes.
    double shorter = bytes * MAX_SEGMENTS / segments;
    double a = run(shorter / 2);
    double b = run(shorter);
    return b + (b - a) / (shorter / 2) * (bytes - shorter);
  }

  private int host(int id) {
    int j = id % n;
    return groups > 1 ? j : j / ranksPerHost;
  }

  private double run(double bytes) {
    int ranks = groups * n;
    int hosts = groups > 1 ? n : (n + ranksPerHost - 1) / ranksPerHost;
    int p = Integer.highestOneBit(n);
    int extra = n - p;
    int levels = Integer.numberOfTrailingZeros(p);
    int unfold = unfoldStep(levels);
    double firstBytes = doubling ? bytes : bytes / 2;
    double[] clock = new double[ranks];
    Links links = new Links(hosts);
    // Step 0 (the fold) goes out together with the first halving step of the ranks that do not wait for a fold:
    // the fold and a partner's half reach the folded-into rank's link in at once.
    double[][] early = new double[ranks][];
    double[][] arrival = new double[ranks][];
    double[] size = new double[ranks];
    for (int id = 0; id < ranks; id++) {
      int j = id % n;
      boolean waits = j < 2 * extra;
      size[id] = peer(j, 0, p, extra, levels) >= 0 ? bytes
          : !waits && levels > 0 ? firstBytes : 0;
    }
    exchange(clock, size, 0, p, extra, levels, arrival, links);
    receive(clock, 0, p, extra, levels, arrival, bytes, true);
    for (int id = 0; id < ranks; id++) {
      int j = id % n;
      if (j >= 2 * extra && levels > 0) {
        early[id] = arrival[id];
      }
      size[id] = j < 2 * extra && (j & 1) == 1 && levels > 0 ? firstBytes : 0;
    }
    for (int step = 1; step <= unfold; step++) {
      double stepBytes;
      if (step == unfold || doubling) {
        stepBytes = bytes;
      } else {
        int level = step <= levels ? step - 1 : 2 * levels - step;
        stepBytes = bytes / (2L << level);
      }
      if (step > 1) {
        for (int id = 0; id < ranks; id++) {
          size[id] = peer(id % n, step, p, extra, levels) >= 0 ? stepBytes : 0;
        }
      }
      java.util.Arrays.fill(arrival, null);
      exchange(clock, size, step, p, extra, levels, arrival, links);
      if (step == 1) {
        for (int id = 0; id < ranks; id++) {
          if (early[id] != null) {
            arrival[id] = early[id];
          }
        }
      }
      receive(clock, step, p, extra, levels, arrival, stepBytes, step <= levels);
    }
    double end = 0;
    for (double c : clock) {
      end = Math.max(end, c);
    }
    return end;
  }

  /** Each host's link out and in: when it is next free. */
  private static final class Links {
    final double[] out;
    final double[] in;

    Links(int hosts) {
      out = new double[hosts];
      in = new double[hosts];
    }
  }

  private int unfoldStep(int levels) {
    return doubling ? levels + 1 : 2 * levels + 1;
  }

  /**
   * Every rank that has a message of {@code step} takes it from its sender's segments as they arrive (in
   * recursive doubling a rank of the upper block stashes its own segment first and combines it after).
   */
  private void receive(double[] clock, int step, int p, int extra, int levels, double[][] arrival, double bytes,
      boolean combine) {
    int m = Math.max(1, (int) Math.ceil(bytes / segmentBytes));
    double last = bytes - (double) (m - 1) * segmentBytes;
    for (int src = 0; src < clock.length; src++) {
      int j = src % n;
      int peer = peer(j, step, p, extra, levels);
      if (peer < 0) {
        continue;
      }
      int id = src - j + peer;
      boolean upper = doubling && combine && step > 0 && (vrank(peer) & (1 << (step - 1))) != 0;
      double t = clock[id];
      for (int k = 0; k < m; k++) {
        double s = k < m - 1 ? segmentBytes : last;
        if (upper) {
          t = Math.max(t + costs.stash(s), arrival[src][k]) + costs.cpy(s) + costs.combine(s);
        } else {
          t = Math.max(t, arrival[src][k]) + (combine ? costs.red(s) : costs.cpy(s));
        }
      }
      clock[id] = t;
    }
  }

  /** Rank j's virtual rank after the fold (of a rank that goes on). */
  private int vrank(int j) {
    int extra = n - Integer.highestOneBit(n);
    return j < 2 * extra ? j >> 1 : j - extra;
  }

  /** Rank j's partner in {@code step} (whom it sends to), or -1 when it sends nothing then. */
  private int peer(int j, int step, int p, int extra, int levels) {
    boolean folded = j < 2 * extra && (j & 1) == 0;
    if (step == 0) {
      return folded ? j + 1 : -1;
    }
    if (step == unfoldStep(levels)) {
      return j < 2 * extra && (j & 1) == 1 ? j - 1 : -1;
    }
    if (folded) {
      return -1;
    }
    int mask = doubling ? 1 << (step - 1) : step <= levels ? p >> step : 1 << (step - levels - 1);
    int partner = vrank(j) ^ mask;
    return partner < extra ? 2 * partner + 1 : partner + extra;
  }

  /**
   * Every rank with {@code size[id] > 0} sends that many bytes in segments to its partner (of {@code step}, or of
   * step 1 for a rank that has no message in step 0): when each segment arrives.
   */
  private void exchange(double[] clock, double[] size, int step, int p, int extra, int levels, double[][] arrival,
      Links links) {
    int ranks = clock.length;
    int[] to = new int[ranks];
    double[][] ready = new double[ranks][];
    double[][] start = new double[ranks][];
    double[][] left = new double[ranks][];
    int[] outCount = new int[links.out.length];
    int[] inCount = new int[links.out.length];
    for (int id = 0; id < ranks; id++) {
      to[id] = -1;
      if (size[id] <= 0) {
        continue;
      }
      int j = id % n;
      int peer = peer(j, step, p, extra, levels);
      to[id] = id - j + (peer >= 0 ? peer : peer(j, 1, p, extra, levels));
      int m = Math.max(1, (int) Math.ceil(size[id] / segmentBytes));
      double last = size[id] - (double) (m - 1) * segmentBytes;
      ready[id] = new double[m];
      start[id] = new double[m];
      left[id] = new double[m];
      arrival[id] = new double[m];
      double t = clock[id];
      boolean local = host(id) == host(to[id]);
      for (int k = 0; k < m; k++) {
        t += costs.snd(k < m - 1 ? segmentBytes : last);
        ready[id][k] = t;
        if (local) {
          arrival[id][k] = t + costs.localAlpha();
        }
      }
      clock[id] = t;
      if (!local) {
        outCount[host(id)]++;
        inCount[host(to[id])]++;
      }
    }
    int hosts = links.out.length;
    int[][] out = new int[hosts][];
    int[][] in = new int[hosts][];
    for (int h = 0; h < hosts; h++) {
      out[h] = new int[outCount[h]];
      in[h] = new int[inCount[h]];
      outCount[h] = 0;
      inCount[h] = 0;
    }
    for (int id = 0; id < ranks; id++) {
      if (to[id] >= 0 && host(id) != host(to[id])) {
        out[host(id)][outCount[host(id)]++] = id;
        in[host(to[id])][inCount[host(to[id])]++] = id;
      }
    }
    for (int h = 0; h < hosts; h++) {
      int[] next = new int[out[h].length];
      for (int pick; (pick = earliest(out[h], next, ready)) >= 0; ) {
        int id = out[h][pick];
        int k = next[pick]++;
        start[id][k] = Math.max(ready[id][k], links.out[h]);
        links.out[h] = start[id][k] + costs.wire(segment(size[id], k), 1);
        left[id][k] = links.out[h];
      }
    }
    for (int h = 0; h < hosts; h++) {
      int[] next = new int[in[h].length];
      for (int pick; (pick = earliest(in[h], next, start)) >= 0; ) {
        int id = in[h][pick];
        int k = next[pick]++;
        double end = Math.max(Math.max(start[id][k], links.in[h]) + costs.wire(segment(size[id], k), 1), left[id][k]);
        links.in[h] = end;
        arrival[id][k] = end + costs.alpha();
      }
    }
  }

  /** Bytes of segment k of a message of {@code bytes}. */
  private double segment(double bytes, int k) {
    return Math.min(segmentBytes, bytes - (double) k * segmentBytes);
  }

  /** Which of {@code ids} has the earliest next segment by {@code times}, or -1 when all are done. */
  private static int earliest(int[] ids, int[] next, double[][] times) {
    int best = -1;
    for (int q = 0; q < ids.length; q++) {
      double[] t = times[ids[q]];
      if (next[q] < t.length && (best < 0 || t[next[q]] < times[ids[best]][next[best]])) {
        best = q;
      }
    }
    return best;
  }
}
