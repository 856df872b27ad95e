package io.sparkcollective.core.algorithm;

import io.sparkcollective.core.config.Tuning;

/**
 * Measures the link between a group's processes for AUTO's cost model, when the group is not told it
 * ({@code algorithm.measureLink}).
 *
 * <p>Three exchanges between the first ranks of the processes ("leaders"; the other ranks take no part), each
 * repeated and timed by every leader, the fastest of a leader's repetitions kept:
 * <ul>
 *   <li>{@link #roundTrip}: a leader sends a vector to the next process's leader (in the order of their lowest
 *   ranks, the last to the first), which sends it back when it has it all: of one element, and of one segment
 *   ({@link #largeElements});</li>
 *   <li>{@link #fan}: a leader sends one element to each of the next {@link #fanPeers} leaders, then receives one
 *   from each of the previous ones, as DIRECT does with every peer.</li>
 * </ul>
 * In the cost model's terms (a message of b bytes: the sender's {@code o + b/copy} of CPU, {@code (b + header) /
 * link} on its host's link and on the receiver's, the latency alpha, the receiver's {@code o + b/copy}), a round trip
 * in one segment costs
 *
 * <pre>
 *   t(b) = 2 alpha + 2 (b + header) / link + 4 o + 4 b / copy
 * </pre>
 *
 * so the two round trips give the link ({@code link = 2 (L - s) / (t(L) - t(s) - 4 (L - s) / copy)}), and
 * {@code alpha + 2 o}. The fan's time grows with o where the round trip's sum is fixed (F sends, then F receives
 * whose messages arrive one send apart), which splits the sum: o is found by bisection. The CPU a message costs
 * is what makes DIRECT's N-1 messages at once lose to RECURSIVE_DOUBLING's log2 N steps over sockets, so it is
 * measured too, and taken as at least {@code algorithm.messageMicros}.
 *
 * <p>Every process's link is in some round trip, both directions; the group takes the slowest leader's figures
 * (the largest of every rank's, by an all-reduce), so that every rank derives the same model from the same
 * numbers ({@link #estimate}). Estimates are rounded to eighths of an octave, so that groups of one cluster share
 * their choices (see {@link AlgorithmSelector}) instead of differing in the last digits.
 */
public final class LinkProbe {
  /** Most bytes of the large round trip: one segment of the group, at most this. */
  static final int LARGE_MAX_BYTES = 512 << 10;
  /** Most peers of the fan. */
  static final int FAN_MAX_PEERS = 4;
  /** Fastest link an estimate may give, bytes per second (a large round trip lost in the copies' cost). */
  private static final double MAX_LINK_BYTES_PER_SECOND = 400e9 / 8;
  /** Least latency and least CPU per message an estimate may give, seconds. */
  private static final double MIN_SECONDS = 0.25e-6;

  private LinkProbe() {
  }

  /** Elements of the large round trip for a group whose segments carry {@code segmentElements} of this size. */
  public static int largeElements(int segmentElements, int elementBytes) {
    return Math.max(2, Math.min(segmentElements, LARGE_MAX_BYTES / elementBytes));
  }

  /** Leaders each leader sends to (and receives from) in the fan, among {@code processes}. */
  public static int fanPeers(int processes) {
    return Math.min(FAN_MAX_PEERS, processes - 1);
  }

  /**
   * The round trip over {@code placement}: between the first ranks of consecutive processes, of the whole vector
   * each way. Needs at least two processes.
   */
  public static AllReduceAlgorithm roundTrip(Placement placement) {
    return new Exchange(placement, false);
  }

  /** The fan over {@code placement}: the whole vector to each of {@link #fanPeers} leaders and from as many. */
  public static AllReduceAlgorithm fan(Placement placement) {
    return new Exchange(placement, true);
  }

  private static final class Exchange implements AllReduceAlgorithm {
    private final Placement placement;
    private final boolean fan;

    Exchange(Placement placement, boolean fan) {
      if (placement.nodeCount() < 2) {
        throw new IllegalArgumentException("a link probe needs two processes, got " + placement);
      }
      this.placement = placement;
      this.fan = fan;
    }

    private int leader(int node) {
      return placement.members(Math.floorMod(node, placement.nodeCount()))[0];
    }

    @Override
    public void allReduce(Links links) {
      int node = placement.nodeOf(links.rank());
      if (leader(node) != links.rank()) {
        return;
      }
      int n = links.length();
      if (fan) {
        int peers = fanPeers(placement.nodeCount());
        for (int j = 1; j <= peers; j++) {
          links.send(leader(node + j), 0, 0, n);
        }
        for (int j = 1; j <= peers; j++) {
          links.recvCopy(leader(node - j), 0, 0, n);
        }
        return;
      }
      links.send(leader(node + 1), 0, 0, n);
      links.recvCopy(leader(node - 1), 0, 0, n);
      links.send(leader(node - 1), 1, 0, n);
      links.recvCopy(leader(node + 1), 1, 0, n);
    }

    @Override
    public long steps(int ranks, long length, int segmentElements) {
      return 2;
    }
  }

  /**
   * The cost model of a link whose slowest leaders took {@code roundTrip} seconds for a round trip of
   * {@code smallBytes}, {@code largeRoundTrip} for one of {@code largeBytes} (both one segment) and {@code fan}
   * for a fan of {@code smallBytes} among {@code processes}; segments of {@code segmentBytes}; reduction, copies,
   * headers and the latency between ranks of one host as {@link AllReduceCostModel#ofLink} takes them. The CPU per
   * message is at least {@code messageMicros}, and that with fewer than three processes (a fan of one peer tells
   * nothing apart).
   */
  public static AllReduceCostModel estimate(double roundTrip, double fan, double largeRoundTrip, int processes,
      long smallBytes, long largeBytes, double messageMicros, int segmentBytes) {
    if (!(largeBytes > smallBytes) || !(roundTrip > 0) || !(largeRoundTrip > 0) || !(fan > 0)) {
      throw new IllegalArgumentException("round trips of " + smallBytes + " bytes in " + roundTrip + " s and "
          + largeBytes + " bytes in " + largeRoundTrip + " s, a fan in " + fan + " s");
    }
    double copy = Tuning.MODEL_COPY_BYTES_PER_SECOND;
    int header = Tuning.MODEL_HEADER_BYTES;
    double extra = largeBytes - smallBytes;
    double onWire = Math.max(largeRoundTrip - roundTrip - 4 * extra / copy, 2 * extra / MAX_LINK_BYTES_PER_SECOND);
    double link = rounded(2 * extra / onWire, 8);
    // What the small round trip leaves for 2 alpha + 4 o.
    double fixed = Math.max(roundTrip - 4 * smallBytes / copy - 2 * (smallBytes + header) / link, 0);
    int peers = fanPeers(processes);
    double o;
    if (peers < 2) {
      o = messageMicros * 1e-6;
    } else {
      double low = 0;
      double high = fixed / 4;
      for (int i = 0; i < 60; i++) {
        double mid = (low + high) / 2;
        if (fanSeconds(peers, mid, (fixed - 4 * mid) / 2, smallBytes, link, copy, header) < fan) {
          low = mid;
        } else {
          high = mid;
        }
      }
      o = (low + high) / 2;
    }
    // At least the configured CPU per message: on six emulated hosts of two cores the fan came out no slower than
    // the round trips' latency alone (0 us of CPU), where RECURSIVE_DOUBLING's 4 steps beat DIRECT's 5 messages
    // at once 2x at 4 bytes. Rounded to eighths of an octave (4.4% at most: at quarters, 5 us of latency came out
    // as 5.39 and took a choice 12% off the best on the simulated grid), the floor applied again after rounding.
    o = Math.max(o, messageMicros * 1e-6);
    double alpha = rounded(Math.max((fixed - 4 * o) / 2, MIN_SECONDS), 8);
    o = Math.max(rounded(Math.max(o, MIN_SECONDS), 8), messageMicros * 1e-6);
    return new AllReduceCostModel(link, alpha, Tuning.MODEL_LOCAL_LATENCY_SECONDS, o,
        Tuning.MODEL_REDUCE_BYTES_PER_SECOND, copy, header, segmentBytes);
  }

  /**
   * The fan's time for a leader in the model: its {@code peers} sends one after another, each onto its host's link
   * in turn; the messages to it, sent as the same turn of each sender's, through its host's link in the order they
   * left and a latency later; its receives in that order, after its sends.
   */
  static double fanSeconds(int peers, double o, double alpha, long bytes, double link, double copy, int header) {
    double cpu = o + bytes / copy;
    double wire = (bytes + header) / link;
    double egress = 0;
    double ingress = 0;
    double done = peers * cpu;
    for (int j = 1; j <= peers; j++) {
      double start = Math.max(j * cpu, egress);
      egress = start + wire;
      ingress = Math.max(Math.max(start, ingress) + wire, egress);
      done = Math.max(done, ingress + alpha) + cpu;
    }
    return done;
  }

  /** {@code x} rounded to the nearest power of two to the {@code 1/perOctave} (the same on every JVM). */
  static double rounded(double x, int perOctave) {
    double steps = Math.rint(StrictMath.log(x) / StrictMath.log(2) * perOctave);
    return StrictMath.pow(2, steps / perOctave);
  }
}
