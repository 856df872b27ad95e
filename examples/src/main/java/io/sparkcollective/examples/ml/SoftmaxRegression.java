package io.sparkcollective.examples.ml;

/**
 * Multinomial logistic (softmax) regression. Parameter layout as Spark MLlib's coefficient matrix and
 * intercept vector: {@code classes x features} coefficients (class-major), then {@code classes} intercepts.
 */
public final class SoftmaxRegression implements Model {
  private static final long serialVersionUID = 1L;

  private final int features;
  private final int classes;

  public SoftmaxRegression(int features, int classes) {
    if (features < 1 || classes < 2) {
      throw new IllegalArgumentException("softmax regression needs features >= 1 and classes >= 2, got " + features
          + " and " + classes);
    }
    this.features = features;
    this.classes = classes;
  }

  @Override
  public int parameters() {
    return classes * (features + 1);
  }

  @Override
  public double[] initialParameters(long seed) {
    return new double[parameters()];
  }

  @Override
  public boolean regularized(int i) {
    return i < classes * features;
  }

  @Override
  public String describe() {
    return "softmax regression (" + features + " features, " + classes + " classes, " + parameters() + " parameters)";
  }

  /** Logits of the row at {@code x[offset]} under {@code w}, into {@code out}. */
  static void logits(double[] w, int features, int classes, float[] x, int offset, double[] out) {
    int interceptBase = classes * features;
    for (int k = 0; k < classes; k++) {
      double z = w[interceptBase + k];
      int base = k * features;
      for (int j = 0; j < features; j++) {
        z += w[base + j] * x[offset + j];
      }
      out[k] = z;
    }
  }

  /** Softmax in place, shifted by the maximum for stability. */
  static void softmaxInPlace(double[] z) {
    double max = Double.NEGATIVE_INFINITY;
    for (double v : z) {
      max = Math.max(max, v);
    }
    double sum = 0;
    for (int k = 0; k < z.length; k++) {
      z[k] = Math.exp(z[k] - max);
      sum += z[k];
    }
    for (int k = 0; k < z.length; k++) {
      z[k] /= sum;
    }
  }

  @Override
  public double[] lossAndGradient(Shard s, double[] w, double[] grad) {
    double[] p = new double[classes];
    double loss = 0;
    double correct = 0;
    int interceptBase = classes * features;
    for (int i = 0; i < s.rows; i++) {
      int off = i * features;
      logits(w, features, classes, s.x, off, p);
      int argmax = 0;
      for (int k = 1; k < classes; k++) {
        if (p[k] > p[argmax]) {
          argmax = k;
        }
      }
      if (argmax == s.y[i]) {
        correct++;
      }
      softmaxInPlace(p);
      loss -= Math.log(Math.max(p[s.y[i]], 1e-300));
      for (int k = 0; k < classes; k++) {
        double err = p[k] - (k == s.y[i] ? 1 : 0);
        int base = k * features;
        for (int j = 0; j < features; j++) {
          grad[base + j] += err * s.x[off + j];
        }
        grad[interceptBase + k] += err;
      }
    }
    return new double[] {loss, correct};
  }
}
