package io.sparkcollective.examples.ml;

import java.io.Serializable;

/**
 * A model with a flat parameter vector, so its gradient is one array to all-reduce. Implementations are
 * stateless and serializable (they travel in task closures).
 */
public interface Model extends Serializable {
  /** Length of the parameter vector. */
  int parameters();

  /** Initial parameters, the same on every rank for the same seed. */
  double[] initialParameters(long seed);

  /**
   * Adds the gradient of the summed loss over {@code shard} at {@code w} into {@code grad} and returns
   * {@code [loss sum, correctly classified rows]}.
   */
  double[] lossAndGradient(Shard shard, double[] w, double[] grad);

  /** Whether parameter {@code i} is under the L2 penalty (intercepts and biases are not). */
  boolean regularized(int i);

  /** A short name for logs. */
  String describe();
}
