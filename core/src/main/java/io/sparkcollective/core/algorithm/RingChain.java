package io.sparkcollective.core.algorithm;

/*
 * The ring's schedule step by step, for the cost model: every member sends its own chunk, then for each of the
 * pass's steps receives the chunk's segments one after another from its left neighbour (combining them in the
 * first reduceSteps steps, copying them after) and sends each on to the right (except after the last step).
 *
 * Hosts are alike and hold `period` consecutive members each, so member p of one host does exactly what member
 * p of every other host does at the same time: following the `period` members of one host is following the
 * whole ring. With a period of one every member is alone on its host. Member 0 receives across hosts
 * (latency alpha; its left neighbour's segment first crosses that host's link, which `flows` rings share, one
 * segment each in turn), the others from a member of their host (the local latency). Segments of one chunk are
 * as the engine cuts them: whole segments and the remainder.
 *
 * The state (every member's clock, the link's next free moment) carries from one pass to the next; a long run
 * of equal passes is followed for two of them and the rest added at the second one's pace, which is exact for
 * this max-plus recursion once its pace settles.
 */

/** Predicted time of ring passes, following the segments through each step of one host's members. */
final class RingChain {
  private final AllReduceCostModel costs;
  private final int period;
  private final boolean remote;
  private final int flows;
  private final int segmentBytes;
  private final double[] clock;
  /** When each member's segment of the previous step is available to its right neighbour, per segment. */
  private double[] ready;
  private double[] next;
  private double linkFree;
  /** How far the last of the rings sharing the link runs behind this one. */
  private double stagger;

  /**
   * @param period members per host, consecutive along the ring
   * @param remote whether the ring crosses hosts at all (every {@code period}-th hop)
   * @param flows rings sharing each host's link
   */
  RingChain(AllReduceCostModel costs, int period, boolean remote, int flows, int segmentBytes) {
    this.costs = costs;
    this.period = Math.max(1, period);
    this.remote = remote;
    this.flows = Math.max(1, flows);
    this.segmentBytes = segmentBytes;
    this.clock = new double[this.period];
  }

  /**
   * When the last member finishes: of the rings that share the link, the one whose first segments queued behind
   * all the others' stays that far behind.
   */
  double finish() {
    double t = 0;
    for (double c : clock) {
      t = Math.max(t, c);
    }
    return t + stagger;
  }

  /** Starts every member at {@code t} (the end of whatever came before, which the rings left in step). */
  void startAt(double t) {
    java.util.Arrays.fill(clock, t);
    linkFree = Math.max(linkFree, t);
    stagger = 0;
  }

  /**
   * {@code passes} passes of {@code steps} steps each over chunks of {@code chunkBytes}, the first
   * {@code reduceSteps} of them combining.
   */
  void passes(long passes, int steps, int reduceSteps, double chunkBytes) {
    if (passes <= 3) {
      for (long i = 0; i < passes; i++) {
        pass(steps, reduceSteps, chunkBytes);
      }
      return;
    }
    pass(steps, reduceSteps, chunkBytes);
    double first = finish();
    pass(steps, reduceSteps, chunkBytes);
    double pace = finish() - first;
    shift((passes - 3) * pace);
    pass(steps, reduceSteps, chunkBytes);
  }

  private void shift(double dt) {
    for (int p = 0; p < period; p++) {
      clock[p] += dt;
    }
    linkFree += dt;
  }

  /** One pass. */
  void pass(int steps, int reduceSteps, double chunkBytes) {
    int m = Math.max(1, (int) Math.ceil(chunkBytes / segmentBytes));
    double last = chunkBytes - (double) (m - 1) * segmentBytes;
    if (remote) {
      stagger = Math.max(stagger, (flows - 1) * costs.wire(Math.min(chunkBytes, segmentBytes), 1));
    }
    if (ready == null || ready.length < period * m) {
      ready = new double[period * m];
      next = new double[period * m];
    }
    for (int p = 0; p < period; p++) {
      for (int k = 0; k < m; k++) {
        double s = k < m - 1 ? segmentBytes : last;
        clock[p] += costs.snd(s);
        ready[p * m + k] = depart(p, clock[p], s);
      }
    }
    for (int j = 1; j <= steps; j++) {
      boolean combine = j <= reduceSteps;
      boolean forward = j < steps;
      for (int p = 0; p < period; p++) {
        int left = p == 0 ? period - 1 : p - 1;
        double latency = p == 0 && remote ? costs.alpha() : costs.localAlpha();
        double c = clock[p];
        for (int k = 0; k < m; k++) {
          double s = k < m - 1 ? segmentBytes : last;
          c = Math.max(c, ready[left * m + k] + latency) + (combine ? costs.red(s) : costs.cpy(s));
          if (forward) {
            c += costs.snd(s);
            next[p * m + k] = depart(p, c, s);
          }
        }
        clock[p] = c;
      }
      double[] t = ready;
      ready = next;
      next = t;
    }
  }

  /**
   * When a segment that member {@code p} finished sending at {@code t} leaves its host: at once for a neighbour
   * on the host; across hosts, after its own time on the link, which it then shares with the other rings'
   * segments (they fall into step behind each other after the first hop, so a segment waits for them only when
   * its ring's previous one still does).
   */
  private double depart(int p, double t, double s) {
    if (!remote || p != period - 1) {
      return t;
    }
    double w = costs.wire(s, 1);
    double start = Math.max(t, linkFree);
    linkFree = start + flows * w;
    return start + w;
  }
}
