package io.sparkcollective.core.api;

/**
 * All-reduce algorithms. {@link #AUTO} lets the selector pick by message size and group size; the
 * others force one (useful for tests and tuning). The cost model (alpha = latency per message,
 * beta = seconds per byte, S bytes, N ranks): RING 2(N-1)alpha + 2(N-1)/N S beta; HALVING_DOUBLING
 * 2 log2(N) alpha + 2(N-1)/N S beta; DIRECT alpha + (N-1) S beta.
 */
public enum Algorithm {
  AUTO,
  /** Chunked, pipelined ring: reduce-scatter then all-gather. Bandwidth-optimal. */
  RING,
  /** Every rank sends its whole vector to every peer; one step. Best for small messages. */
  DIRECT,
  /** Recursive halving reduce-scatter and recursive doubling all-gather (Rabenseifner). */
  HALVING_DOUBLING
}
