package io.sparkcollective.core.api;

/**
 * All-reduce algorithms. {@link #AUTO} lets the selector pick by message size and group size; the
 * others force one (useful for tests and tuning). The cost model (alpha = latency per message,
 * beta = seconds per byte, S bytes, N ranks): RING 2(N-1)alpha + 2(N-1)/N S beta; HALVING_DOUBLING
 * 2 log2(N) alpha + 2(N-1)/N S beta; DIRECT alpha + (N-1) S beta; RECURSIVE_DOUBLING log2(N) alpha +
 * log2(N) S beta (for powers of two; the others add a fold and an unfold of the whole vector).
 */
public enum Algorithm {
  AUTO,
  /** Chunked, pipelined ring: reduce-scatter then all-gather. Bandwidth-optimal. */
  RING,
  /** Every rank sends its whole vector to every peer; one step. Best for small messages. */
  DIRECT,
  /** Recursive halving reduce-scatter and recursive doubling all-gather (Rabenseifner). */
  HALVING_DOUBLING,
  /**
   * Two levels, for groups whose ranks share processes (executors): each process's ranks reduce into its
   * lowest rank in memory, those leaders all-reduce across processes (RING, DIRECT or HALVING_DOUBLING by
   * size, over the number of processes), and each leader hands the result to its local ranks. AUTO picks it
   * whenever the group spans several processes and one of them holds two ranks or more.
   */
  HIERARCHICAL,
  /**
   * A ring in two dimensions, for large groups: the N = a x b ranks form rows of a consecutive ranks; a ring
   * reduce-scatter along each row, a ring all-reduce of each row's chunk down the columns, a ring all-gather
   * along the rows. 2(a-1) + 2(b-1) latencies instead of the ring's 2(N-1), the same 2(N-1)/N of the vector per
   * rank. A group whose size has no such factors (a prime) runs the plain ring.
   */
  RING_2D,
  /**
   * log2 N steps, in each of which a rank exchanges its whole vector with one partner and combines it: half
   * the latencies of HALVING_DOUBLING, one message per step where DIRECT sends N - 1 at once; for small
   * messages. Every rank combines in the same order, so all end with the same bits (NaN payloads aside).
   */
  RECURSIVE_DOUBLING;

  /** The code frames carry for {@code algorithm} (with {@code inner} for HIERARCHICAL). */
  public static int wireCode(Algorithm algorithm, Algorithm inner) {
    return algorithm == HIERARCHICAL ? HIERARCHICAL.ordinal() | (inner.ordinal() << 4) : algorithm.ordinal();
  }

  /** How a frame's algorithm code is named in error messages, e.g. {@code HIERARCHICAL(RING)}. */
  public static String nameOfWireCode(int code) {
    int outer = code & 0xF;
    int inner = code >>> 4;
    Algorithm[] all = values();
    if (outer <= 0 || outer >= all.length || inner >= all.length) {
      return "algorithm#" + code;
    }
    return outer == HIERARCHICAL.ordinal() ? "HIERARCHICAL(" + all[inner] + ")" : all[outer].name();
  }
}
