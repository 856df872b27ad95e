package io.sparkcollective.core.algorithm;

import io.sparkcollective.core.api.Algorithm;

/**
 * What {@link AlgorithmSelector} picked for one all-reduce: the algorithm and, for
 * {@link Algorithm#HIERARCHICAL}, the one it runs across processes (else null).
 */
public final class AlgorithmChoice {
  private final Algorithm algorithm;
  private final Algorithm inner;

  AlgorithmChoice(Algorithm algorithm, Algorithm inner) {
    this.algorithm = algorithm;
    this.inner = inner;
  }

  /** A choice made elsewhere (a forced pair, a simulation's candidate); {@code inner} only for HIERARCHICAL. */
  public static AlgorithmChoice of(Algorithm algorithm, Algorithm inner) {
    if ((algorithm == Algorithm.HIERARCHICAL) != (inner != null) || algorithm == Algorithm.AUTO
        || inner == Algorithm.AUTO || inner == Algorithm.HIERARCHICAL) {
      throw new IllegalArgumentException("no such choice: " + algorithm + " over " + inner);
    }
    return new AlgorithmChoice(algorithm, inner);
  }

  public Algorithm algorithm() {
    return algorithm;
  }

  /** The algorithm run across processes by HIERARCHICAL; null for the others. */
  public Algorithm inner() {
    return inner;
  }

  /** The choice as frames carry it (ranks that chose differently are told apart). */
  public int wireCode() {
    return Algorithm.wireCode(algorithm, inner);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof AlgorithmChoice && ((AlgorithmChoice) o).algorithm == algorithm
        && ((AlgorithmChoice) o).inner == inner;
  }

  @Override
  public int hashCode() {
    return algorithm.hashCode() * 31 + (inner == null ? 0 : inner.hashCode());
  }

  @Override
  public String toString() {
    return inner == null ? algorithm.toString() : algorithm + "(" + inner + ")";
  }
}
