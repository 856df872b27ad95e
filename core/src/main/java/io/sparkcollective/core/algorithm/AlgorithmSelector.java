package io.sparkcollective.core.algorithm;

import io.sparkcollective.core.api.Algorithm;

/**
 * Picks the all-reduce algorithm for a message of {@code bytes} on {@code ranks} ranks, like NCCL's tuning
 * tables: DIRECT for small messages in small groups (one latency), HALVING_DOUBLING for medium ones (log N
 * latencies, bandwidth-optimal for powers of two), RING for large ones (bandwidth-optimal for any N, best
 * pipelined). Thresholds come from configuration; a forced algorithm overrides the table.
 *
 * <p>HALVING_DOUBLING on a group that is not a power of two first folds the extra ranks in (each sends its
 * whole vector to a partner, which sends the whole result back at the end): two full-vector transfers in a
 * row on those links, against the ring's 2(N-1)/N spread over every link. Above DIRECT's size the fold costs
 * more than the ring's extra steps (at N=3, 1 MiB over 1 Gbit/s links: 25.2 ms against 11.7), so such groups
 * take RING there; HALVING_DOUBLING stays for small messages in groups too large for DIRECT.
 *
 * <p>Where DIRECT stops depends on the link: it puts (N-1) copies of the vector on every link in one step,
 * the others 2(N-1)/N of it in 2 log2 N (HALVING_DOUBLING) or 2(N-1) (RING) steps. Told the link's rate
 * (the six-argument constructor), AUTO keeps DIRECT only while its extra bytes take less link time than the other
 * algorithm's extra steps cost in latency: at 4 hosts on 1 Gbit/s links a 16 KiB all-reduce took 416 us
 * with DIRECT and 236 with HALVING_DOUBLING, while on loopback DIRECT wins there.
 *
 * <p>Where RING takes over depends on the link too. HALVING_DOUBLING sends a step's data only once the whole
 * previous step has arrived, so every step drains the link, and its queue (switch, NIC, qdisc), before the
 * next starts; the ring passes each piece on as soon as it lands. A slower link holds the same queueing
 * time in fewer bytes, so the crossover shrinks with the rate: the configured size stands for 10 Gbit/s
 * (and loopback), and a known slower link scales it down. At 4 hosts on 1 Gbit/s links (20 ms of queue):
 * 4 MiB took 66.6 ms with HALVING_DOUBLING and 55.5 with RING (53.8 and 53.4 with a 2 ms queue), a 1 M-float
 * gradient in Spark 65.2 against 56.9 ms; at 10 Gbit/s HALVING_DOUBLING still won at 1 and 4 MiB.
 */
public final class AlgorithmSelector {
  private final long directMaxBytes;
  private final int directMaxRanks;
  private final long ringMinBytes;
  private final Algorithm forced;
  /** Bytes per second of a host's link in each direction (0: not known), and one step's latency in seconds. */
  private final double linkBytesPerSecond;
  private final double stepSeconds;
  /** The link rate the configured RING threshold stands for: 10 Gbit/s, in bytes per second. */
  static final double REFERENCE_LINK_BYTES_PER_SECOND = 10_000 * 1e6 / 8;

  /** The table with the link rate unknown: DIRECT up to its configured size. */
  public AlgorithmSelector(long directMaxBytes, int directMaxRanks, long ringMinBytes, Algorithm forced) {
    this(directMaxBytes, directMaxRanks, ringMinBytes, forced, 0, 0);
  }

  /**
   * The table for hosts whose links move {@code linkMbps} megabits per second in each direction (0: not
   * known, DIRECT up to its configured size), where one step of an algorithm costs {@code stepMicros}.
   */
  public AlgorithmSelector(long directMaxBytes, int directMaxRanks, long ringMinBytes, Algorithm forced,
      long linkMbps, long stepMicros) {
    this.directMaxBytes = directMaxBytes;
    this.directMaxRanks = directMaxRanks;
    this.ringMinBytes = ringMinBytes;
    this.forced = forced;
    this.linkBytesPerSecond = linkMbps * 1e6 / 8;
    this.stepSeconds = stepMicros / 1e6;
  }

  /**
   * The largest message DIRECT takes on {@code ranks} ranks: the configured size, lowered, when the link
   * rate is known, to where DIRECT's (N-1) V on every link starts costing more than the other algorithm's
   * 2(N-1)/N V plus its extra steps.
   */
  long directMaxBytes(int ranks) {
    if (linkBytesPerSecond <= 0 || ranks <= 2) {
      return directMaxBytes; // two ranks: DIRECT moves as many bytes as the others, in fewer steps
    }
    double extraCopies = (ranks - 1) - 2.0 * (ranks - 1) / ranks;
    int steps = (ranks & (ranks - 1)) == 0 ? 2 * Integer.numberOfTrailingZeros(ranks) : 2 * (ranks - 1);
    double crossover = (steps - 1) * stepSeconds * linkBytesPerSecond / extraCopies;
    return Math.min(directMaxBytes, Math.round(crossover));
  }

  /**
   * The smallest message RING takes: the configured size, scaled down by the link's share of 10 Gbit/s when
   * the rate is known and lower.
   */
  long ringMinBytes() {
    if (linkBytesPerSecond <= 0 || linkBytesPerSecond >= REFERENCE_LINK_BYTES_PER_SECOND) {
      return ringMinBytes;
    }
    return Math.round(ringMinBytes * linkBytesPerSecond / REFERENCE_LINK_BYTES_PER_SECOND);
  }

  /** The concrete algorithm for a call that asked for {@code requested}, ignoring process boundaries. */
  public Algorithm select(Algorithm requested, long bytes, int ranks) {
    if (requested != Algorithm.AUTO) {
      return requested;
    }
    if (forced != Algorithm.AUTO) {
      return forced;
    }
    return table(bytes, ranks);
  }

  /**
   * The algorithm, and for HIERARCHICAL the one run across processes, for a call of {@code bytes} on a group
   * placed as {@code placement}: AUTO takes HIERARCHICAL when some process holds several ranks of a group that
   * spans several processes; the cross-process part then carries 1/k of the vector with k ranks per process.
   */
  public AlgorithmChoice select(Algorithm requested, long bytes, Placement placement) {
    int ranks = placement.ranks();
    int nodes = placement.nodeCount();
    Algorithm a = requested != Algorithm.AUTO ? requested : forced != Algorithm.AUTO ? forced
        : placement.isTwoLevel() ? Algorithm.HIERARCHICAL : table(bytes, ranks);
    int k = placement.evenRanksPerNode();
    return new AlgorithmChoice(a, a == Algorithm.HIERARCHICAL ? table(k > 0 ? bytes / k : bytes, nodes) : null);
  }

  private Algorithm table(long bytes, int ranks) {
    if (bytes <= directMaxBytes(ranks) && ranks <= directMaxRanks) {
      return Algorithm.DIRECT;
    }
    boolean powerOfTwo = (ranks & (ranks - 1)) == 0;
    if (bytes < ringMinBytes() && (powerOfTwo || bytes <= directMaxBytes)) {
      return Algorithm.HALVING_DOUBLING;
    }
    return Algorithm.RING;
  }

  public static AllReduceAlgorithm implementation(Algorithm algorithm) {
    switch (algorithm) {
      case RING:
        return RingAllReduce.INSTANCE;
      case DIRECT:
        return DirectAllReduce.INSTANCE;
      case HALVING_DOUBLING:
        return HalvingDoublingAllReduce.INSTANCE;
      default:
        throw new IllegalArgumentException("no implementation for " + algorithm);
    }
  }

  /** The implementation of {@code choice} (from {@link #select(Algorithm, long, Placement)}) over {@code placement}. */
  public static AllReduceAlgorithm implementation(AlgorithmChoice choice, Placement placement) {
    return choice.algorithm() == Algorithm.HIERARCHICAL
        ? new HierarchicalAllReduce(placement, implementation(choice.inner())) : implementation(choice.algorithm());
  }
}
