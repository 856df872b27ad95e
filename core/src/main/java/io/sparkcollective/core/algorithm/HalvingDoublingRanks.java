package io.sparkcollective.core.algorithm;

import io.sparkcollective.core.time.EventQueue;
import java.util.Arrays;

/*
 * Halving-doubling on a group that is not a power of two, rank by rank, for the cost model. The fold makes the
 * ranks unlike each other (the first 2R ranks pair up, the odd ones go on as virtual ranks 0..R-1, the rest after
 * them), so no one host stands for all: every rank is followed through the same program as the algorithm's
 * (fold, halving, doubling, unfold), each at its own pace. A rank sends its message of a step in segments at CPU
 * pace, then takes its partner's segments as they arrive. The segments a host's ranks send take the host's link
 * out in the order they are ready, whatever their step, then the receiving host's link in in the order they
 * left the senders' links, and arrive a latency later; between ranks of one host they take the local latency.
 * So ranks that skip the fold run ahead and their later steps' segments share links with the others' earlier
 * ones, as on a real network. `groups` groups of n ranks can run at once, one rank of each on every host
 * (HIERARCHICAL's inner groups), or one group with k consecutive ranks per host. Recursive doubling runs through
 * the same: its fold and unfold are halving-doubling's, its steps between them carry the whole vector at masks
 * 1, 2, ..., P/2.
 *
 * Segments are taken in the order of the time they are ready (an EventQueue); a rank that waits for a message
 * goes on when its last segment is on its way.
 */

/** Predicted time of halving-doubling (or recursive doubling) with folded ranks, following every rank. */
final class HalvingDoublingRanks {
  /** Most segments followed at once; longer vectors are extrapolated from two shorter ones. */
  private static final int MAX_SEGMENTS = 1 << 13;

  private final AllReduceCostModel costs;
  private final int groups;
  private final int n;
  private final int ranksPerHost;
  private final int segmentBytes;
  /** Recursive doubling's program instead: the whole vector in every step, masks 1, 2, ..., P/2. */
  private final boolean doubling;
  private final int p;
  private final int extra;
  private final int levels;
  private final int unfold;

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
    this.p = Integer.highestOneBit(n);
    this.extra = n - p;
    this.levels = Integer.numberOfTrailingZeros(p);
    this.unfold = doubling ? levels + 1 : 2 * levels + 1;
  }

  /** Predicted seconds for a vector of {@code bytes}. */
  double seconds(double bytes) {
    double segments = Math.ceil((doubling ? bytes : bytes / 2) / segmentBytes) * groups * n;
    if (segments <= MAX_SEGMENTS) {
      return new Run(bytes).finish();
    }
    // Beyond a few segments per message the time grows linearly with the bytes.
    double shorter = bytes * MAX_SEGMENTS / segments;
    double a = new Run(shorter / 2).finish();
    double b = new Run(shorter).finish();
    return b + (b - a) / (shorter / 2) * (bytes - shorter);
  }

  private int host(int id) {
    int j = id % n;
    return groups > 1 ? j : j / ranksPerHost;
  }

  /** Rank j's virtual rank after the fold (of a rank that goes on). */
  private int vrank(int j) {
    return j < 2 * extra ? j >> 1 : j - extra;
  }

  /** Rank j's partner in {@code step} (whom it sends to), or -1 when it sends nothing then. */
  private int sendsTo(int j, int step) {
    boolean folded = j < 2 * extra && (j & 1) == 0;
    if (step == 0) {
      return folded ? j + 1 : -1;
    }
    if (step == unfold) {
      return j < 2 * extra && (j & 1) == 1 ? j - 1 : -1;
    }
    return folded ? -1 : partner(j, step);
  }

  /** Whom rank j receives from in {@code step}, or -1. */
  private int receivesFrom(int j, int step) {
    boolean folded = j < 2 * extra && (j & 1) == 0;
    if (step == 0) {
      return j < 2 * extra && (j & 1) == 1 ? j - 1 : -1;
    }
    if (step == unfold) {
      return folded ? j + 1 : -1;
    }
    return folded ? -1 : partner(j, step);
  }

  private int partner(int j, int step) {
    int mask = doubling ? 1 << (step - 1) : step <= levels ? p >> step : 1 << (step - levels - 1);
    int partner = vrank(j) ^ mask;
    return partner < extra ? 2 * partner + 1 : partner + extra;
  }

  /** Bytes of a step's message. */
  private double stepBytes(int step, double bytes) {
    if (step == 0 || step == unfold || doubling) {
      return bytes;
    }
    int level = step <= levels ? step - 1 : 2 * levels - step;
    return bytes / (2L << level);
  }

  /** Events: a segment ready to leave, a segment starting out on the link, a rank going on. */
  private static final int READY = 0;
  private static final int ENTER = 1;
  private static final int RESUME = 2;

  /** An event's reference: rank in bits 38 and up, step 32-37, segment 0-31. */
  private static long segmentRef(int id, int step, int k) {
    return ((long) id << 38) | ((long) step << 32) | k;
  }

  /** One vector's all-reduce, event by event (at the same time in the order they were added). */
  private final class Run {
    private final double bytes;
    private final int ranks;
    private final double[] clock;
    private final int[] step;
    /** The step a rank waits to receive in, or -1. */
    private final int[] waiting;
    /** When each segment of a rank's message of a step arrives, and how many are on their way. */
    private final double[][][] arrival;
    private final int[][] arrived;
    private final double[] out;
    private final double[] in;
    private final EventQueue events = new EventQueue();
    private double end;

    Run(double bytes) {
      this.bytes = bytes;
      this.ranks = groups * n;
      int hosts = groups > 1 ? n : (n + ranksPerHost - 1) / ranksPerHost;
      clock = new double[ranks];
      step = new int[ranks];
      waiting = new int[ranks];
      arrival = new double[ranks][unfold + 1][];
      arrived = new int[ranks][unfold + 1];
      out = new double[hosts];
      in = new double[hosts];
      Arrays.fill(waiting, -1);
      for (int id = 0; id < ranks; id++) {
        events.add(0, RESUME, segmentRef(id, 0, 0));
      }
      while (!events.isEmpty()) {
        double t = events.peekTime();
        int kind = events.peekKind();
        long ref = events.peekRef();
        events.poll();
        int id = (int) (ref >>> 38);
        int s = (int) (ref >>> 32) & 0x3f;
        int k = (int) ref;
        if (kind == READY) {
          leave(t, id, s, k);
        } else if (kind == ENTER) {
          enter(t, id, s, k);
        } else {
          advance(id);
        }
      }
    }

    double finish() {
      return end;
    }

    private int segments(double b) {
      return Math.max(1, (int) Math.ceil(b / segmentBytes));
    }

    private double segment(double b, int k) {
      return Math.min(segmentBytes, b - (double) k * segmentBytes);
    }

    /** Rank id goes on from its clock: sends its message of the step, then receives, or waits to. */
    private void advance(int id) {
      int j = id % n;
      while (step[id] <= unfold) {
        int s = step[id];
        double b = stepBytes(s, bytes);
        int to = sendsTo(j, s);
        if (to >= 0 && waiting[id] != s) {
          int m = segments(b);
          double t = clock[id];
          for (int k = 0; k < m; k++) {
            t += costs.snd(segment(b, k));
            events.add(t, READY, segmentRef(id, s, k));
          }
          clock[id] = t;
        }
        int from = receivesFrom(j, s);
        if (from >= 0) {
          int m = segments(b);
          if (arrived[id][s] < m) {
            waiting[id] = s;
            return;
          }
          waiting[id] = -1;
          receive(id, s, b, m);
        }
        step[id]++;
        if (to >= 0 || from >= 0) {
          // Go on at the new clock, after what is due before it.
          events.add(clock[id], RESUME, segmentRef(id, 0, 0));
          return;
        }
      }
      end = Math.max(end, clock[id]);
    }

    /** Rank id takes the m segments of step s as they arrive. */
    private void receive(int id, int s, double b, int m) {
      boolean combine = s <= levels;
      boolean upper = doubling && combine && s > 0 && (vrank(id % n) & (1 << (s - 1))) != 0;
      double[] at = arrival[id][s];
      double t = clock[id];
      for (int k = 0; k < m; k++) {
        double sz = segment(b, k);
        if (upper) {
          t = Math.max(t + costs.stash(sz), at[k]) + costs.cpy(sz) + costs.combine(sz);
        } else {
          t = Math.max(t, at[k]) + (combine ? costs.red(sz) : costs.cpy(sz));
        }
      }
      clock[id] = t;
      arrival[id][s] = null;
    }

    /** Segment k of rank id's message of step s, ready at t: onto its host's link out, in the order ready. */
    private void leave(double t, int id, int s, int k) {
      int to = id - id % n + sendsTo(id % n, s);
      int from = host(id);
      if (from == host(to)) {
        arrive(t, to, s, k, t + costs.localAlpha());
        return;
      }
      double start = Math.max(t, out[from]);
      out[from] = start + costs.wire(segment(stepBytes(s, bytes), k), 1);
      events.add(start, ENTER, segmentRef(id, s, k));
    }

    /** The segment starts out at t: onto the receiving host's link in, in the order segments left. */
    private void enter(double t, int id, int s, int k) {
      int to = id - id % n + sendsTo(id % n, s);
      int dest = host(to);
      double w = costs.wire(segment(stepBytes(s, bytes), k), 1);
      double done = Math.max(t, in[dest]) + w;
      in[dest] = done;
      arrive(t, to, s, k, done + costs.alpha());
    }

    private void arrive(double t, int to, int s, int k, double at) {
      int m = segments(stepBytes(s, bytes));
      if (arrival[to][s] == null) {
        arrival[to][s] = new double[m];
      }
      arrival[to][s][k] = at;
      if (++arrived[to][s] == m && waiting[to] == s) {
        // Its receive can be worked out now; it resumes once the events before it are taken.
        events.add(t, RESUME, segmentRef(to, 0, 0));
      }
    }
  }
}
