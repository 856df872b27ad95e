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

  /** The concrete algorithm for a call that asked for {@code requested}. */
  public Algorithm select(Algorithm requested, long bytes, int ranks) {
    if (requested != Algorithm.AUTO) {
      return requested;
    }
    if (forced != Algorithm.AUTO) {
      return forced;
    }
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
}
