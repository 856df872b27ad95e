package io.sparkcollective.core.algorithm;

import io.sparkcollective.core.api.Algorithm;

/**
 * Picks the all-reduce algorithm for a message of {@code bytes} on {@code ranks} ranks, like NCCL's tuning
 * tables: DIRECT for small messages in small groups (one latency), HALVING_DOUBLING for medium ones (log N
 * latencies, bandwidth-optimal for powers of two), RING for large ones (bandwidth-optimal for any N, best
 * pipelined). Thresholds come from configuration; a forced algorithm overrides the table.
 */
public final class AlgorithmSelector {
  private final long directMaxBytes;
  private final int directMaxRanks;
  private final long ringMinBytes;
  private final Algorithm forced;

  public AlgorithmSelector(long directMaxBytes, int directMaxRanks, long ringMinBytes, Algorithm forced) {
    this.directMaxBytes = directMaxBytes;
    this.directMaxRanks = directMaxRanks;
    this.ringMinBytes = ringMinBytes;
    this.forced = forced;
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
   * The algorithm, and for HIERARCHICAL the one its leaders run, for a call on {@code ranks} ranks spread over
   * {@code nodeCount} processes: AUTO takes HIERARCHICAL when some process holds several ranks of a group
   * that spans several processes.
   */
  public AlgorithmChoice select(Algorithm requested, long bytes, int ranks, int nodeCount) {
    return select(requested, bytes, ranks, nodeCount, bytes);
  }

  /** As above, with the cross-process part of HIERARCHICAL carrying {@code innerBytes} per all-reduce. */
  public AlgorithmChoice select(Algorithm requested, long bytes, int ranks, int nodeCount, long innerBytes) {
    Algorithm a = requested != Algorithm.AUTO ? requested : forced != Algorithm.AUTO ? forced
        : nodeCount > 1 && nodeCount < ranks ? Algorithm.HIERARCHICAL : table(bytes, ranks);
    return new AlgorithmChoice(a, a == Algorithm.HIERARCHICAL ? table(innerBytes, nodeCount) : null);
  }

  private Algorithm table(long bytes, int ranks) {
    if (bytes <= directMaxBytes && ranks <= directMaxRanks) {
      return Algorithm.DIRECT;
    }
    if (bytes < ringMinBytes) {
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

  /** The implementation of {@code choice} (from {@link #select(Algorithm, long, int, int)}) over {@code nodes}. */
  public static AllReduceAlgorithm implementation(AlgorithmChoice choice, int[] nodes) {
    return choice.algorithm() == Algorithm.HIERARCHICAL
        ? new HierarchicalAllReduce(nodes, implementation(choice.inner())) : implementation(choice.algorithm());
  }
}
