package io.sparkcollective.examples.ml;

import java.io.Serializable;

/**
 * Full-batch gradient descent with Nesterov momentum on the objective
 * {@code (1/n) sum(loss) + (lambda/2) |w_reg|^2} (the regularized parameters as the model says; this is
 * Spark MLlib's objective with {@code regParam = lambda, elasticNetParam = 0, standardization = false}).
 * Deterministic: ranks that apply it to the same summed gradient keep bit-identical parameters.
 */
public final class Optimizer implements Serializable {
  private static final long serialVersionUID = 1L;

  public final double learningRate;
  public final double momentum;
  public final double lambda;

  public Optimizer(double learningRate, double momentum, double lambda) {
    if (!(learningRate > 0) || momentum < 0 || momentum >= 1 || lambda < 0) {
      throw new IllegalArgumentException("optimizer needs learningRate > 0, 0 <= momentum < 1, lambda >= 0; got "
          + learningRate + ", " + momentum + ", " + lambda);
    }
    this.learningRate = learningRate;
    this.momentum = momentum;
    this.lambda = lambda;
  }

  /**
   * One step. {@code summed} is the all-reduced buffer: the gradient sums (one per parameter), then the
   * loss sum, the correctly classified rows and the row count. Updates {@code w} and {@code velocity} in
   * place and returns {@code [objective at w before the step, accuracy]}.
   */
  public double[] step(Model model, double[] w, double[] velocity, double[] summed) {
    int n = w.length;
    double rows = summed[n + 2];
    if (!(rows > 0)) {
      throw new IllegalStateException("no training rows in any partition");
    }
    double penalty = 0;
    for (int i = 0; i < n; i++) {
      double g = summed[i] / rows;
      if (model.regularized(i)) {
        g += lambda * w[i];
        penalty += w[i] * w[i];
      }
      // Nesterov momentum in the form that evaluates the gradient at the current parameters.
      double vPrev = velocity[i];
      double v = momentum * vPrev - learningRate * g;
      velocity[i] = v;
      w[i] += -momentum * vPrev + (1 + momentum) * v;
    }
    return new double[] {summed[n] / rows + 0.5 * lambda * penalty, summed[n + 1] / rows};
  }

  /**
   * Fills {@code buf} (length parameters + 3, reused from step to step) with this rank's part: gradient
   * sums, loss sum, correct rows, row count.
   */
  public static void localSums(Model model, Shard shard, double[] w, double[] buf) {
    int n = w.length;
    java.util.Arrays.fill(buf, 0);
    double[] lossAndCorrect = model.lossAndGradient(shard, w, buf);
    buf[n] = lossAndCorrect[0];
    buf[n + 1] = lossAndCorrect[1];
    buf[n + 2] = shard.rows;
  }
}
