package io.sparkcollective.core.algorithm;

/*
 * Halving-doubling's power-of-two part step by step, for the cost model. Every rank does the same in each step
 * (send its half in segments, then receive and combine or copy the partner's), so following the `positions`
 * ranks of one host follows them all: position i's partner at a step of distance `mask` is position i ^ mask on
 * the same host when mask < localSpan, else position i on another host, whose ranks do at the same moments what
 * this host's do. Across hosts every segment takes its turn on the host's link in the order the host's ranks
 * send them (the peer host's link in, fed by this one host's link out, follows the same order) and arrives a
 * latency later.
 */

/** Predicted time of halving-doubling's exchanges, following each of one host's ranks. */
final class HalvingDoublingChain {
  private final AllReduceCostModel costs;
  private final int positions;
  private final int localSpan;
  private final int segmentBytes;
  private final double[] clock;
  private final int[] next;
  private double[][] arrival;
  /** When the host's link out is next free: segments of one step may still be on it when the next begins. */
  private double linkFree;

  /**
   * @param positions the ranks of one host that take part
   * @param localSpan partners closer than this are on the same host
   */
  HalvingDoublingChain(AllReduceCostModel costs, int positions, int localSpan, int segmentBytes) {
    this.costs = costs;
    this.positions = Math.max(1, positions);
    this.localSpan = Math.max(1, localSpan);
    this.segmentBytes = segmentBytes;
    this.clock = new double[this.positions];
    this.next = new int[this.positions];
    this.arrival = new double[this.positions][];
  }

  double finish() {
    double t = 0;
    for (double c : clock) {
      t = Math.max(t, c);
    }
    return t;
  }

  /** The halving steps then the doubling steps of a power of two {@code p} over {@code bytes}. */
  void run(int p, double bytes) {
    int levels = Integer.numberOfTrailingZeros(p);
    double[] sizes = new double[levels];
    double range = bytes;
    for (int i = 0; i < levels; i++) {
      range /= 2;
      sizes[i] = range;
    }
    for (int i = 0; i < levels; i++) {
      exchange(p >> (i + 1), sizes[i], true);
    }
    for (int i = levels - 1; i >= 0; i--) {
      exchange(p >> (i + 1), sizes[i], false);
    }
  }

  /**
   * Recursive doubling's steps on a power of two {@code p}: the whole {@code bytes} each way at masks 1, 2, ...,
   * p/2. The rank of a step's upper block stashes its own segment, copies the received one in and combines its
   * own after it; across hosts the host followed is taken as one of upper ranks (the slower side of the step).
   */
  void runDoubling(int p, double bytes) {
    for (int mask = 1; mask < p; mask <<= 1) {
      exchange(mask, bytes, true, true);
    }
  }

  private void exchange(int mask, double bytes, boolean combine) {
    exchange(mask, bytes, combine, false);
  }

  /**
   * One step: every position sends {@code bytes} to its partner at {@code mask}, then takes the partner's; with
   * {@code ordered}, a position of the upper block (all of them across hosts) combines its own after it.
   */
  private void exchange(int mask, double bytes, boolean combine, boolean ordered) {
    int m = Math.max(1, (int) Math.ceil(bytes / segmentBytes));
    double last = bytes - (double) (m - 1) * segmentBytes;
    boolean remote = mask >= localSpan;
    for (int i = 0; i < positions; i++) {
      if (arrival[i] == null || arrival[i].length < m) {
        arrival[i] = new double[m];
      }
      next[i] = 0;
    }
    double full = costs.snd(segmentBytes);
    double lastSend = costs.snd(last);
    if (remote) {
      // The host's sends in the order they are ready, each through the link in turn.
      double[] ready = clock.clone();
      for (int sent = 0; sent < positions * m; sent++) {
        int i = -1;
        for (int q = 0; q < positions; q++) {
          if (next[q] < m && (i < 0 || ready[q] + (next[q] < m - 1 ? full : lastSend)
              < ready[i] + (next[i] < m - 1 ? full : lastSend))) {
            i = q;
          }
        }
        int j = next[i]++;
        double s = j < m - 1 ? segmentBytes : last;
        ready[i] += j < m - 1 ? full : lastSend;
        double start = Math.max(ready[i], linkFree);
        linkFree = start + costs.wire(s, 1);
        arrival[i][j] = linkFree + costs.alpha();
      }
      for (int i = 0; i < positions; i++) {
        clock[i] = ready[i];
      }
    } else {
      for (int i = 0; i < positions; i++) {
        double t = clock[i];
        for (int j = 0; j < m; j++) {
          t += j < m - 1 ? full : lastSend;
          arrival[i][j] = t + costs.localAlpha();
        }
        clock[i] = t;
      }
    }
    for (int i = 0; i < positions; i++) {
      int partner = remote ? i : (i ^ mask) % positions;
      boolean upper = ordered && (remote || (i & mask) != 0);
      double t = clock[i];
      for (int j = 0; j < m; j++) {
        double s = j < m - 1 ? segmentBytes : last;
        if (upper) {
          t = Math.max(t + costs.stash(s), arrival[partner][j]) + costs.cpy(s) + costs.combine(s);
        } else {
          t = Math.max(t, arrival[partner][j]) + (combine ? costs.red(s) : costs.cpy(s));
        }
      }
      clock[i] = t;
    }
  }
}
